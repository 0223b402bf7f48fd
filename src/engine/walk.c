/*
 * Chunked, checkpointed walks over one physical table; see walk.h.
 */
#include "engine/walk.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/canonical.h"
#include "common/text.h"
#include "engine/streams.h"

/* An owned copy of a primary key. */
struct key_copy {
	struct rs_value values[16];
	char *bytes;
	int n;
};

static void
key_copy_clear(struct key_copy *k)
{
	free(k->bytes);
	memset(k, 0, sizeof(*k));
}

static int
key_copy_set(struct key_copy *k, const struct rs_value *values, int n)
{
	size_t total = 0, at = 0;
	char *bytes;

	for (int i = 0; i < n; i++)
		total += values[i].len + 1;
	bytes = malloc(total > 0 ? total : 1);
	if (bytes == NULL)
		return RS_ENOMEM;
	for (int i = 0; i < n; i++) {
		memcpy(bytes + at, values[i].text, values[i].len);
		bytes[at + values[i].len] = '\0';
		k->values[i].text = bytes + at;
		k->values[i].len = values[i].len;
		at += values[i].len + 1;
	}
	free(k->bytes);
	k->bytes = bytes;
	k->n = n;
	return 0;
}

json_t *
walk_value_json(const struct rs_value *v)
{
	json_t *s;
	char *hex;

	if (v->text == NULL) /* not a key value, but kept as it is */
		return json_null();
	s = json_stringn(v->text, v->len);
	if (s != NULL)
		return s;
	hex = malloc(2 * v->len + 1);
	if (hex == NULL)
		return NULL;
	text_hex_encode(v->text, v->len, hex)[2 * v->len] = '\0';
	s = json_pack("{s:s}", "hex", hex);
	free(hex);
	return s;
}

char *
walk_key_json(const struct rs_value *values, int n)
{
	json_t *array = json_array();
	char *text = NULL;
	int ok = array != NULL;

	for (int i = 0; ok && i < n; i++)
		ok = json_array_append_new(array,
		                           walk_value_json(&values[i])) == 0;
	if (ok)
		text = json_dumps(array, JSON_COMPACT);
	json_decref(array);
	return text;
}

/* The key value V written by walk_value_json, into OUT: pointing into V,
 * whose {"hex": …} string is decoded in place (the caller copies the
 * values before it drops V).  Returns 0, or -1 when V is neither form. */
static int
key_value_from_json(json_t *v, struct rs_value *out)
{
	const char *hex;
	size_t len;
	char *bytes;

	if (json_is_null(v)) {
		out->text = NULL;
		out->len = 0;
		return 0;
	}
	if (json_is_string(v)) {
		out->text = json_string_value(v);
		out->len = json_string_length(v);
		return 0;
	}
	hex = json_string_value(json_object_get(v, "hex"));
	if (hex == NULL || (len = strlen(hex)) % 2 != 0)
		return -1;
	/* Decoded over the hex itself, which jansson owns and the caller
	 * drops with the array after copying. */
	bytes = (char *)hex;
	for (size_t i = 0; i < len; i += 2) {
		int hi = text_hex_digit(hex[i]),
		    lo = text_hex_digit(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		bytes[i / 2] = (char)(hi * 16 + lo);
	}
	out->text = bytes;
	out->len = len / 2;
	return 0;
}

/* Back from the journal's JSON array.  Returns 0 or RS_EIO. */
static int
key_from_json(struct key_copy *k, const char *text, int n_pk,
              struct rs_err *err)
{
	json_error_t jerr;
	/* A text key may hold a NUL byte (a SQLite TEXT, a MariaDB
	 * VARCHAR): it is valid UTF-8, written as \u0000, and read back
	 * with its length. */
	json_t *array = json_loads(text, JSON_ALLOW_NUL, &jerr);
	struct rs_value values[16];
	int rc = 0;

	if (array == NULL || (int)json_array_size(array) != n_pk)
		rc = -1;
	for (int i = 0; rc == 0 && i < n_pk; i++)
		rc = key_value_from_json(json_array_get(array, (size_t)i),
		                         &values[i]);
	if (rc != 0) {
		json_decref(array);
		return rs_err_set(err, RS_EIO,
		                  "the journal holds a chunk key that does not "
		                  "fit the table's primary key: %s",
		                  text);
	}
	if (key_copy_set(k, values, n_pk) != 0)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	json_decref(array);
	return rc;
}

int
walk_key_from_json(const char *text, int n, struct rs_value *values,
                   char **bytes, struct rs_err *err)
{
	struct key_copy k = {0};
	int rc;

	*bytes = NULL;
	if (n > 16)
		return rs_err_set(err, RS_EIO, "a key of %d values", n);
	rc = key_from_json(&k, text, n, err);
	if (rc != 0)
		return rc;
	memcpy(values, k.values, sizeof(*values) * (size_t)n);
	*bytes = k.bytes;
	return 0;
}

/* Append V to BUF at *AT as 'text' (or NULL), escaped as keys are in
 * every message (common/text.h), cut with "..." when long. */
static void
walk_show_value(const struct rs_value *v, char *buf, size_t size, size_t *at)
{
	char shown[80]; /* a long key is cut: the message stays one line */

	if (*at >= size)
		return;
	if (v->text == NULL)
		*at += (size_t)snprintf(buf + *at, size - *at, "NULL");
	else
		*at += (size_t)snprintf(
			buf + *at, size - *at, "'%s'",
			text_key_shown(v->text, v->len, shown, sizeof(shown)));
	if (*at >= size)
		*at = size - 1;
}

void
walk_describe_row(const struct rs_walk *walk, const struct rs_value *row,
                  char *buf, size_t size)
{
	walk_describe_row_of(walk->run->plan->tables[walk->table].key,
	                     walk->def, walk->key_at, row, buf, size);
}

void
walk_describe_row_of(const char *key_name, const struct rs_table_def *def,
                     int key_at, const struct rs_value *row, char *buf,
                     size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	at += (size_t)snprintf(buf, size, "%s ", key_name);
	if (at < size)
		walk_show_value(&row[key_at], buf, size, &at);
	for (int k = 0; k < def->n_pk && at + 4 < size; k++) {
		at += (size_t)snprintf(buf + at, size - at,
		                       "%s%s = ", k ? ", " : " (",
		                       def->columns[def->pk[k]].name);
		if (at < size)
			walk_show_value(&row[k], buf, size, &at);
	}
	if (at + 1 < size)
		snprintf(buf + at, size - at, ")");
}

int
walk_same_key(const struct rs_value *a, const struct rs_value *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].len != b[i].len ||
		    memcmp(a[i].text, b[i].text, a[i].len) != 0)
			return 0;
	return 1;
}

/* The index of the plan's shard key column in the walk's table, or -1. */
static int
walk_key_column(const struct rs_walk *walk)
{
	const char *key = walk->run->plan->tables[walk->table].key;

	for (int i = 0; walk->def != NULL && i < walk->def->n_columns; i++)
		if (strcmp(walk->def->columns[i].name, key) == 0)
			return i;
	return -1;
}

int
walk_key_canonical(const struct rs_backend *backend,
                   const struct rs_table_def *def, int column,
                   const struct rs_value *key, struct rs_canon_buf *buf,
                   size_t *at, struct rs_err *err)
{
	int rc;

	*at = SIZE_MAX;
	if (key->text == NULL)
		return backend_fail(backend, err, RS_EKEY,
		                    "table %s has a row whose shard key is "
		                    "NULL; such a row has no owner",
		                    def->name);
	if (column < 0 || canonical_kind_as_is(def->columns[column].kind))
		return 0;
	*at = buf->len;
	rc = canonical_value(def->columns[column].kind,
	                     backend_canon_src(backend), key->text, key->len,
	                     buf, err);
	if (rc == RS_EVALUE) {
		char why[sizeof(err->message)];

		snprintf(why, sizeof(why), "%s", err->message);
		rc = backend_fail(backend, err, RS_EKEY,
		                  "table %s: shard key %s: %s", def->name,
		                  def->columns[column].name, why);
	}
	return rc;
}

/* The owner under MAP of the canonical shard key KEY (LEN bytes). */
static int
walk_owner_of(const struct rs_walk *walk, const struct rs_map *map,
              const char *key, size_t len, struct rs_owner *owner,
              struct rs_err *err)
{
	uint64_t point;

	if (hash_point(walk->run->plan->hash, key, len, &point) != 0) {
		char shown[TEXT_KEY_SHOWN_SIZE];

		return backend_fail(
			walk->backend, err, RS_EKEY,
			"table %s: key '%s' cannot be hashed with %s",
			walk->physical,
			text_key_shown(key, len, shown, sizeof(shown)),
			hash_name(walk->run->plan->hash));
	}
	*owner = map_owner_key(map, key, len, point, NULL);
	return 0;
}

int
walk_owner(const struct rs_walk *walk, const struct rs_map *map,
           const struct rs_value *key, struct rs_owner *owner,
           struct rs_err *err)
{
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	size_t at;
	int rc = walk_key_canonical(walk->backend, walk->def,
	                            walk_key_column(walk), key, &buf, &at, err);

	if (rc == 0 && at == SIZE_MAX)
		rc = walk_owner_of(walk, map, key->text, key->len, owner, err);
	else if (rc == 0)
		rc = walk_owner_of(walk, map, buf.data + at, buf.len - at,
		                   owner, err);
	canonical_buf_free(&buf);
	return rc;
}

int
walk_owner_canonical(const struct rs_walk *walk, const struct rs_map *map,
                     const struct rs_value *key, struct rs_owner *owner,
                     struct rs_err *err)
{
	size_t at;
	int rc = walk_key_canonical(walk->backend, walk->def, -1, key, NULL,
	                            &at, err);

	return rc != 0 ? rc
	               : walk_owner_of(walk, map, key->text, key->len, owner,
	                               err);
}

/* Keys hashed together by walk_owners. */
#define WALK_OWNER_BATCH 256

int
walk_owners(const struct rs_walk *walk, const struct rs_map *map,
            const struct rs_rowbuf *rows, struct rs_owner *owners,
            struct rs_err *err)
{
	int column = walk_key_column(walk);
	struct rs_canon_buf buf = RS_CANON_BUF_INIT;
	const char *keys[WALK_OWNER_BATCH];
	size_t lens[WALK_OWNER_BATCH], at[WALK_OWNER_BATCH];
	uint64_t points[WALK_OWNER_BATCH];
	int rc = 0;

	for (int r0 = 0; rc == 0 && r0 < rows->n_rows; r0 += WALK_OWNER_BATCH) {
		int n = rows->n_rows - r0 < WALK_OWNER_BATCH ? rows->n_rows - r0
		                                             : WALK_OWNER_BATCH;

		canonical_buf_clear(&buf);
		for (int i = 0; rc == 0 && i < n; i++) {
			const struct rs_value *key =
				&rowbuf_row(rows, r0 + i)[walk->key_at];

			rc = walk_key_canonical(walk->backend, walk->def,
			                        column, key, &buf, &at[i], err);
			keys[i] = key->text;
			lens[i] =
				at[i] == SIZE_MAX ? key->len : buf.len - at[i];
		}
		/* BUF may have moved as it grew: its keys' places now. */
		for (int i = 0; rc == 0 && i < n; i++)
			if (at[i] != SIZE_MAX)
				keys[i] = buf.data + at[i];
		if (rc == 0 && walk->run->plan->hash == RS_HASH_SHA256_64) {
			hash_sha256_64_batch(keys, lens, (size_t)n, points);
			for (int i = 0; i < n; i++)
				owners[r0 + i] = map_owner_key(
					map, keys[i], lens[i], points[i], NULL);
		} else
			for (int i = 0; rc == 0 && i < n; i++)
				rc = walk_owner_of(walk, map, keys[i], lens[i],
				                   &owners[r0 + i], err);
	}
	canonical_buf_free(&buf);
	return rc;
}

int
walk_row_hash(const struct rs_backend *backend, int native,
              const struct rs_table_def *def, const struct rs_value *row,
              uint64_t *hash, struct rs_err *err)
{
	struct rs_row_hasher hasher;
	struct rs_canon_buf scratch;
	int rc = 0;

	canonical_row_init(&hasher);
	if (native) {
		for (int c = 0; c < def->n_columns; c++)
			canonical_row_add(&hasher, row[c].text, row[c].len);
		*hash = canonical_row_finish(&hasher);
		return 0;
	}
	canonical_buf_init(&scratch);
	for (int c = 0; c < def->n_columns && rc == 0; c++)
		rc = canonical_row_value(&hasher, def->columns[c].kind,
		                         backend_canon_src(backend),
		                         row[c].text, row[c].len, &scratch,
		                         err);
	canonical_buf_free(&scratch);
	*hash = canonical_row_finish(&hasher);
	return rc;
}

int
walk_same_layout(const struct rs_backend *ba, const struct rs_table_def *a,
                 const struct rs_backend *bb, const struct rs_table_def *b)
{
	if (strcmp(backend_engine(ba), backend_engine(bb)) != 0 ||
	    a->n_columns != b->n_columns)
		return 0;
	for (int c = 0; c < a->n_columns; c++)
		if (strcmp(a->columns[c].name, b->columns[c].name) != 0 ||
		    strcmp(a->columns[c].type, b->columns[c].type) != 0)
			return 0;
	return 1;
}

int
walk_range_pages(struct rs_run *run, struct rs_backend *backend,
                 const struct rs_table_def *def, const struct rs_value *after,
                 const struct rs_value *upto, int keys_only,
                 int (*page)(const struct rs_rowbuf *rows, void *ctx,
                             struct rs_err *err),
                 void *ctx, struct rs_err *err)
{
	int *columns = malloc(sizeof(int) * (size_t)(def->n_columns + 1));
	struct rs_read_request req = {
		.table = def,
		.columns = keys_only ? NULL : columns,
		.n_columns = keys_only ? 0 : def->n_columns,
		.after = after,
		.upto = upto,
		/* One more than a chunk: a range holding just the chunk's
	         * rows (a replica's copy) takes one read, not two. */
		.limit = run->plan->options.batch_rows + 1,
	};
	struct rs_rowbuf rows = {0};
	struct key_copy last = {0};
	int rc = 0;

	if (columns == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < def->n_columns; i++)
		columns[i] = i;
	for (;;) {
		rc = await_read(&run->loop, backend, &req, &rows, err);
		if (rc == 0 && rows.n_rows > 0)
			rc = page(&rows, ctx, err);
		if (rc != 0 || rows.n_rows < req.limit)
			break;
		if (key_copy_set(&last, rowbuf_row(&rows, rows.n_rows - 1),
		                 def->n_pk) != 0) {
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
			break;
		}
		req.after = last.values;
	}
	key_copy_clear(&last);
	rowbuf_free(&rows);
	free(columns);
	return rc;
}

/* What a fill_affected walk sizes its chunks by: the rows and rows
 * affected of the last two chunks done, by chunk number modulo 2. */
struct walk_sizes {
	int64_t number[2]; /* -1: none */
	int64_t rows[2];
	int64_t affected[2];
};

static void
walk_sizes_note(struct walk_sizes *z, int64_t number, int64_t rows,
                int64_t affected)
{
	z->number[number % 2] = number;
	z->rows[number % 2] = rows;
	z->affected[number % 2] = affected;
}

/* The read limit of chunk NUMBER: options.batch_rows, or for a
 * fill_affected walk as many rows as affect about batch_rows at the rate
 * of chunk NUMBER - 2 (the last one done when a read ahead for NUMBER
 * starts), between batch_rows and WALK_GROWTH_MAX times it.  Always from
 * chunk NUMBER - 2, with or without read-ahead, and from the journal's
 * records after a resume, so a walk cuts the same chunks however it ran. */
static int
walk_limit(const struct rs_walk *walk, const struct walk_sizes *z,
           int64_t number)
{
	int64_t batch = walk->run->plan->options.batch_rows;
	int64_t want = batch;
	int i = (int)((number + 2) % 2);

	if (walk->fill_affected && number >= 2 && z->number[i] == number - 2)
		want = z->affected[i] > 0 ? batch * z->rows[i] / z->affected[i]
		                          : batch * WALK_GROWTH_MAX;
	if (want < batch)
		want = batch;
	if (want > batch * WALK_GROWTH_MAX)
		want = batch * WALK_GROWTH_MAX;
	return (int)want;
}

/* A chunk whose last write is in flight (walk_defer), in a list from the
 * oldest (walk->pending). */
struct walk_pending {
	struct walk_pending *next; /* the next younger one */
	struct walk_tail tail;
	int has_rec; /* REC is the chunk's (set once its function returned) */
	struct rs_chunk_record rec;
};

/* Record chunk REC DONE, with the crash points the tests use on either
 * side of it (engine_fault_effect, engine_fault_chunk). */
static int
walk_chunk_done(struct rs_walk *walk, struct rs_chunk_record *rec,
                struct rs_err *err)
{
	struct rs_run *run = walk->run;
	int rc;

	engine_fault_effect(walk->step, run->step_chunks + 1);
	rec->state = RS_CHUNK_DONE;
	rc = journal_chunk_done(run->journal, rec, err);
	if (rc == 0)
		engine_fault_chunk(walk->step, ++run->step_chunks);
	return rc;
}

int
walk_defer(struct rs_walk *walk, const struct walk_tail *tail,
           struct rs_err *err)
{
	struct walk_pending *p = calloc(1, sizeof(*p)), **end = &walk->pending;
	int n = 0;

	for (; *end != NULL; end = &(*end)->next)
		n++;
	if (p == NULL || n >= WALK_IN_FLIGHT) {
		struct rs_err ignored;

		tail->finish(tail->ctx, &ignored);
		tail->release(tail->ctx);
		free(p);
		return rs_err_set(err, p == NULL ? RS_ENOMEM : RS_EINTERNAL,
		                  p == NULL ? "out of memory"
		                            : "too many writes in flight (a "
		                              "bug)");
	}
	p->tail = *tail;
	*end = p;
	return 0;
}

/* Finish the oldest write in flight and record its chunk DONE. */
static int
walk_settle_oldest(struct rs_walk *walk, int rc, struct rs_err *err)
{
	struct walk_pending *p = walk->pending;

	walk->pending = p->next;
	if (rc == 0) {
		rc = p->tail.finish(p->tail.ctx, err);
	} else {
		struct rs_err ignored;

		p->tail.finish(p->tail.ctx, &ignored);
	}
	p->tail.release(p->tail.ctx);
	if (rc == 0 && p->has_rec)
		rc = walk_chunk_done(walk, &p->rec, err);
	free(p->rec.after_key);
	free(p->rec.upto_key);
	free(p);
	return rc;
}

/* Wait for the chunk's intent to be on disk (intent_async). */
static int
walk_settle_intent(struct rs_walk *walk, struct rs_err *err)
{
	if (!walk->intent_pending)
		return 0;
	walk->intent_pending = 0;
	return streams_sync_journal_wait(walk->run, walk->intent_ticket, err);
}

int
walk_settle(struct rs_walk *walk, struct rs_err *err)
{
	int rc = walk_settle_intent(walk, err);

	while (walk->pending != NULL)
		rc = walk_settle_oldest(walk, rc, err);
	return rc;
}

int
walk_settle_for(struct rs_walk *walk, const struct rs_backend *on,
                struct rs_err *err)
{
	int rc = walk_settle_intent(walk, err);

	/* In flight at most WALK_IN_FLIGHT, and never two on ON. */
	while (walk->pending != NULL) {
		int n = 0, busy = 0;

		for (const struct walk_pending *p = walk->pending; p != NULL;
		     p = p->next) {
			n++;
			busy |= p->tail.on == on;
		}
		if (!busy && n < WALK_IN_FLIGHT)
			break;
		rc = walk_settle_oldest(walk, rc, err);
		if (rc != 0)
			break;
	}
	/* A write that failed: the younger ones are waited for, but their
	 * chunks not recorded DONE (a resumed run would start after them,
	 * and the failed chunk's rows be missing). */
	while (rc != 0 && walk->pending != NULL)
		rc = walk_settle_oldest(walk, rc, err);
	return rc;
}

int
walk_table(struct rs_walk *walk, rs_chunk_fn fn, int64_t *seen,
           struct rs_err *err)
{
	struct rs_run *run = walk->run;
	const char *shard = run->plan->shards[walk->shard].name;
	const char *key_name = run->plan->tables[walk->table].key;
	struct rs_chunk_record last = {0};
	struct key_copy after = {0}, ahead_after = {0};
	struct rs_rowbuf rows = {0}, ahead = {0};
	struct rs_read_request req = {0}, ahead_req;
	struct rs_backend *reader;
	struct await_waiter pending;
	struct rs_err ahead_err = {0};
	int reading = 0;
	int rows_limit; /* the limit of the read that filled ROWS */
	struct walk_sizes sizes = {{-1, -1}, {0, 0}, {0, 0}};
	int *columns = NULL;
	int64_t number = 0;
	int rc;

	if (seen != NULL)
		*seen = 0;
	rc = engine_table(run, walk->shard, walk->physical, &walk->def, err);
	if (rc != 0)
		return rc;
	walk->key_column = -1;
	for (int i = 0; i < walk->def->n_columns; i++)
		if (strcmp(walk->def->columns[i].name, key_name) == 0)
			walk->key_column = i;
	if (walk->key_column < 0) {
		rc = backend_fail(walk->backend, err, RS_ESCHEMA,
		                  "table %s has no column %s, the plan's shard "
		                  "key",
		                  walk->physical, key_name);
		goto out;
	}
	if (walk->def->n_pk > 16) {
		rc = backend_fail(walk->backend, err, RS_ESCHEMA,
		                  "table %s has a primary key of %d columns; "
		                  "reshard takes at most 16",
		                  walk->physical, walk->def->n_pk);
		goto out;
	}
	if (walk->all_columns) {
		columns = malloc(sizeof(int) * (size_t)walk->def->n_columns);
		if (columns == NULL) {
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < walk->def->n_columns; i++)
			columns[i] = i;
		req.n_columns = walk->def->n_columns;
		walk->key_at = walk->def->n_pk + walk->key_column;
	} else {
		columns = malloc(sizeof(int));
		if (columns == NULL) {
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
			goto out;
		}
		columns[0] = walk->key_column;
		req.n_columns = 1;
		walk->key_at = walk->def->n_pk;
	}
	req.table = walk->def;
	req.columns = columns;
	req.limit = run->plan->options.batch_rows;

	/* Resume after the last chunk done. */
	rc = walk->restart
	             ? 0
	             : journal_chunk_last_done(run->journal, walk->step, shard,
	                                       walk->physical, &last, err);
	if (rc < 0)
		goto out;
	if (rc == 1) {
		struct rs_chunk_record before = {0};

		number = last.number + 1;
		walk_sizes_note(&sizes, last.number, last.rows, last.affected);
		if (walk->fill_affected && last.number > 0 &&
		    journal_chunk_get(run->journal, walk->step, shard,
		                      walk->physical, last.number - 1, &before,
		                      err) == 0 &&
		    before.state == RS_CHUNK_DONE)
			walk_sizes_note(&sizes, before.number, before.rows,
			                before.affected);
		journal_chunk_free(&before);
		rc = last.upto_key != NULL
		             ? key_from_json(&after, last.upto_key,
		                             walk->def->n_pk, err)
		             : 0;
		journal_chunk_free(&last);
		if (rc != 0)
			goto out;
	}
	walk->step_chunk = 0;
	walk->affected = 0;
	/* In a stream of its own connections the walk reads on a second
	 * one, a chunk ahead: the next chunk is on its way while the step
	 * works on this one (on the first connection and the owners'). */
	rc = engine_second(run, walk->shard, &reader, err);
	if (rc != 0)
		goto out;
	if (reader == NULL)
		reader = walk->backend;
	ahead_req = req;
	req.after = after.n > 0 ? after.values : NULL;
	rows_limit = req.limit = walk_limit(walk, &sizes, number);
	rc = await_read(&run->loop, reader, &req, &rows, err);
	while (rc == 0 && rows.n_rows > 0) {
		struct rs_chunk_record rec = {0};
		const struct rs_value *upto =
			rowbuf_row(&rows, rows.n_rows - 1);
		int64_t affected = 0;
		uint64_t checksum = 0;
		int more = rows.n_rows == rows_limit;
		struct walk_pending *newest;

		if (more && reader != walk->backend) {
			if (key_copy_set(&ahead_after, upto, walk->def->n_pk) !=
			    0) {
				rc = rs_err_set(err, RS_ENOMEM,
				                "out of memory");
				break;
			}
			ahead_req.after = ahead_after.values;
			ahead_req.limit = walk_limit(walk, &sizes, number + 1);
			await_read_start(&run->loop, reader, &ahead_req, &ahead,
			                 &pending, &ahead_err);
			reading = 1;
		}
		snprintf(rec.step, sizeof(rec.step), "%s", walk->step);
		snprintf(rec.shard, sizeof(rec.shard), "%s", shard);
		snprintf(rec.table, sizeof(rec.table), "%s", walk->physical);
		rec.number = number;
		rec.after_key =
			req.after != NULL
				? walk_key_json(req.after, walk->def->n_pk)
				: NULL;
		rec.upto_key = walk_key_json(upto, walk->def->n_pk);
		if (rec.upto_key == NULL ||
		    (req.after != NULL && rec.after_key == NULL)) {
			free(rec.after_key);
			free(rec.upto_key);
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
			break;
		}
		rec.rows = rows.n_rows;
		rec.lazy = 1;
		rc = journal_chunk_begin(run->journal, &rec, err);
		/* The intent on disk before the side effect, in one fsync
		 * with the other streams' (streams_sync_journal); with
		 * intent_async, waited for by walk_settle before the
		 * chunk function's first write. */
		if (rc == 0 && !walk->no_effect && walk->intent_async) {
			walk->intent_ticket = streams_sync_journal_begin(run);
			walk->intent_pending = 1;
		} else if (rc == 0 && !walk->no_effect) {
			rc = streams_sync_journal(run, err);
		}
		walk->number = number;
		if (rc == 0)
			rc = fn(walk, &rows, req.after,
			        more || !walk->open_end ? upto : NULL,
			        &affected, &checksum, err);
		rec.affected = affected;
		rec.checksum = checksum;
		newest = walk->pending;
		while (newest != NULL && newest->next != NULL)
			newest = newest->next;
		/* Nothing of this chunk in flight (its function wrote
		 * nothing, or settled): the ones before end first. */
		if (rc == 0 && newest != NULL && newest->has_rec) {
			rc = walk_settle(walk, err);
			newest = NULL;
		}
		if (rc == 0 && newest != NULL) {
			/* Its last write is in flight: DONE once settled. */
			newest->rec = rec;
			newest->has_rec = 1;
		} else {
			if (rc == 0)
				rc = walk_chunk_done(walk, &rec, err);
			free(rec.after_key);
			free(rec.upto_key);
		}
		if (rc == 0 && key_copy_set(&after, upto, walk->def->n_pk) != 0)
			rc = rs_err_set(err, RS_ENOMEM, "out of memory");
		if (rc != 0)
			break;
		if (seen != NULL)
			*seen += rows.n_rows;
		progress_add(&run->progress, (uint64_t)rows.n_rows);
		walk_sizes_note(&sizes, number, rows.n_rows, affected);
		number++;
		walk->step_chunk++;
		walk->affected += affected;
		rc = engine_checkpoint(run, err);
		if (rc != 0 || !more)
			break;
		req.after = after.values;
		if (reading) {
			struct rs_rowbuf t = rows;

			reading = 0;
			rows_limit = ahead_req.limit;
			rc = await_read_finish(&pending, err);
			rows = ahead;
			ahead = t;
		} else {
			rows_limit = req.limit =
				walk_limit(walk, &sizes, number);
			rc = await_read(&run->loop, reader, &req, &rows, err);
		}
	}
	if (reading) /* the walk ends early: the read ahead is not needed */
		await_read_finish(&pending, &ahead_err);
	/* The last write left in flight: its chunk is DONE once it is in
	 * (after an error, it is only waited for). */
	if (rc == 0)
		rc = walk_settle(walk, err);
	else
		walk_settle(walk, &ahead_err);
	/* Ended on an empty read (an empty table, or one whose last chunk
	 * was full): the range past the last key, with no rows here. */
	if (rc == 0 && walk->open_end && rows.n_rows == 0) {
		int64_t affected = 0;
		uint64_t checksum = 0;

		walk->number = number;
		rc = fn(walk, &rows, after.n > 0 ? after.values : NULL, NULL,
		        &affected, &checksum, err);
	}
out:
	free(columns);
	rowbuf_free(&rows);
	rowbuf_free(&ahead);
	key_copy_clear(&after);
	key_copy_clear(&ahead_after);
	walk->def = NULL;
	return rc;
}
