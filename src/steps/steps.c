/*
 * What several steps share: the shards of a map, the physical tables of a
 * shard, and setting or removing the fence on a shard's tables.
 */
#include "steps/steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/progress.h"
#include "engine/await.h"
#include "engine/streams.h"
#include "engine/walk.h"
#include "shardmap/hash.h"
#include "shardmap/pairmap.h"
#include "shardmap/stats.h"

int
steps_map_shards(const struct rs_map *map, int *out)
{
	return stats_map_shards(map, out, RS_PLAN_MAX_SHARDS);
}

int
steps_in_map(const struct rs_map *map, int shard)
{
	return map_uses_shard(map, shard);
}

int
steps_each_table(struct rs_run *run, const struct rs_map *map, int shard,
                 int (*fn)(struct rs_run *run, int shard, int table, int slot,
                           const char *physical, void *arg, struct rs_err *err),
                 void *arg, struct rs_err *err)
{
	int slots = engine_tables_per_shard(map);
	char physical[RS_PLAN_MAX_NAME + 1];

	for (int t = 0; t < run->plan->n_tables; t++)
		for (int slot = 0; slot < slots; slot++) {
			int rc;

			engine_physical(map, run->plan->tables[t].name, slot,
			                physical, sizeof(physical));
			rc = fn(run, shard, t, slot, physical, arg, err);
			if (rc != 0)
				return rc;
		}
	return 0;
}

/* The shards of a steps_each_shard and what to do on each. */
struct each_shard {
	const int *shards;
	int (*fn)(struct rs_run *run, int shard, void *arg, struct rs_err *err);
	void *arg;
};

static int
each_shard_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	const struct each_shard *each = arg;

	return each->fn(run, each->shards[i], each->arg, err);
}

int
steps_each_shard(struct rs_run *run, const struct rs_map *map,
                 int (*fn)(struct rs_run *run, int shard, void *arg,
                           struct rs_err *err),
                 void *arg, struct rs_err *err)
{
	return steps_each_shard_of(run, map, 0, fn, arg, err);
}

int
steps_each_shard_of(struct rs_run *run, const struct rs_map *map,
                    int touched_only,
                    int (*fn)(struct rs_run *run, int shard, void *arg,
                              struct rs_err *err),
                    void *arg, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	struct each_shard each = {shards, fn, arg};
	struct rs_streams_spec spec = {
		.task = each_shard_task,
		.arg = &each,
	};
	int n = steps_map_shards(map, shards);

	for (int i = 0; i < n; i++)
		if (!touched_only || engine_touches(run, shards[i]))
			shards[spec.n++] = shards[i];
	spec.parallel = spec.n;
	return streams_run(run, &spec, err);
}

/* The physical tables of the plan's tables on a shard under `from`, the
 * logical table of each and (key_kinds) its shard key and that column's
 * kind: what the fence and the guard are put on. */
struct table_list {
	char (*names)[256];
	const char **ptrs;
	int *tables;
	const char **keys;
	enum rs_col_kind *kinds;
	int n;
};

static int
list_table(struct rs_run *run, int shard, int table, int slot,
           const char *physical, void *arg, struct rs_err *err)
{
	struct table_list *list = arg;

	(void)run;
	(void)shard;
	(void)slot;
	(void)err;
	snprintf(list->names[list->n], sizeof(list->names[0]), "%s", physical);
	list->ptrs[list->n] = list->names[list->n];
	list->tables[list->n] = table;
	list->n++;
	return 0;
}

static void
table_list_free(struct table_list *list)
{
	free(list->names);
	free(list->ptrs);
	free(list->tables);
	free(list->keys);
	free(list->kinds);
}

/* Fill LIST (table_list_free it, also after an error) with SHARD's
 * tables.  0 or an error. */
static int
table_list_load(struct rs_run *run, int shard, struct table_list *list,
                struct rs_err *err)
{
	size_t max = (size_t)(run->plan->n_tables *
	                      engine_tables_per_shard(run->plan->from)) +
	             1;

	*list = (struct table_list){
		.names = malloc(sizeof(*list->names) * max),
		.ptrs = malloc(sizeof(*list->ptrs) * max),
		.tables = malloc(sizeof(*list->tables) * max),
		.keys = malloc(sizeof(*list->keys) * max),
		.kinds = malloc(sizeof(*list->kinds) * max),
	};
	if (list->names == NULL || list->ptrs == NULL || list->tables == NULL ||
	    list->keys == NULL || list->kinds == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return steps_each_table(run, run->plan->from, shard, list_table, list,
	                        err);
}

/* Record which fence SHARD got (1: the rows that move), for status. */
static int
steps_fence_kind_set(struct rs_run *run, int shard, int only_rows,
                     struct rs_err *err)
{
	char fact[RS_PLAN_MAX_NAME + 32];

	if (run->journal == NULL)
		return 0;
	snprintf(fact, sizeof(fact), "fence_rows:%s",
	         run->plan->shards[shard].name);
	/* Lazy: the fence is up, writes are refused, and status is all
	 * the fact is for (journal_fact_set_lazy). */
	return journal_fact_set_lazy(run->journal, fact, only_rows ? "1" : "0",
	                             err);
}

/* The shard key column and its kind of each table of LIST on SHARD, into
 * LIST's keys and kinds: 1 when the server can compute every key's point
 * (backend_fence_rows_hash), 0 when not or a table is missing (the fence
 * says which), or an error. */
static int
key_kinds(struct rs_run *run, int shard, const struct rs_backend *backend,
          struct table_list *list, struct rs_err *err)
{
	const char **keys = list->keys;
	enum rs_col_kind *kinds = list->kinds;
	const struct rs_plan *plan = run->plan;

	for (int i = 0; i < list->n; i++) {
		const struct rs_table_def *def;
		int k, rc = engine_table(run, shard, list->ptrs[i], &def, err);

		if (rc == RS_ESCHEMA)
			return 0;
		if (rc != 0)
			return rc;
		keys[i] = plan->tables[list->tables[i]].key;
		k = steps_column(def, keys[i]);
		if (k < 0 || !backend_fence_rows_hash(backend, plan->hash,
		                                      def->columns[k].kind))
			return 0;
		kinds[i] = def->columns[k].kind;
	}
	return 1;
}

/* What a fence of the rows that move needs for the N tables of LIST on
 * SHARD: *ROWS filled and 1, or 0 when the fence must take whole tables
 * (the engine cannot tell a row that moves, the plan's hash or a key's
 * kind is not one its SQL computes, or the maps have no such
 * description), or an error.  KEYS, KINDS and MOVING (pairmap_moving_free
 * it) are the caller's, sized for N. */
static int
fence_rows_for(struct rs_run *run, int shard, struct rs_backend *backend,
               struct table_list *list, struct rs_moving *moving,
               struct rs_fence_rows *rows, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	struct rs_err ignored;
	int rc;

	if (!backend_supports(backend, RS_CAP_FENCE_ROWS))
		return 0;
	rc = key_kinds(run, shard, backend, list, err);
	if (rc <= 0)
		return rc;
	/* Not only the rows that move: a write to a row this shard does
	 * not own (a stale or wrong router) is held as the whole-table
	 * fence would hold it. */
	rc = pairmap_moving(plan->from, plan->to, shard, moving, &ignored);
	if (rc == RS_ENOMEM)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc != 0)
		return 0;
	*rows = (struct rs_fence_rows){plan->hash, moving, list->keys,
	                               list->kinds};
	return 1;
}

int
steps_lock_retry(struct rs_run *run, int shard, const char *what, int attempt,
                 const struct rs_err *err)
{
	const char *name = run->plan->shards[shard].name;

	if (!err->retryable || attempt >= STEPS_FENCE_TRIES ||
	    run->stop_requested)
		return 0;
	fprintf(stderr, "  %s: %s waits for a lock (attempt %d of %d): %s\n",
	        name, what, attempt, STEPS_FENCE_TRIES, err->message);
	journal_event(run->journal, "warn",
	              "%s: %s waits for a lock (attempt %d of %d): %s", name,
	              what, attempt, STEPS_FENCE_TRIES, err->message);
	await_sleep(&run->loop, (uint64_t)attempt * 500);
	return 1;
}

int
steps_fence_shard(struct rs_run *run, int shard, int on,
                  const struct rs_marker *marker, struct rs_err *err)
{
	struct table_list list = {0};
	struct rs_moving moving = {0};
	struct rs_fence_rows rows;
	struct rs_backend *backend;
	int rc = engine_shard(run, shard, &backend, err), only_rows = 0;

	if (rc == 0)
		rc = table_list_load(run, shard, &list, err);
	if (rc == 0 && on) {
		only_rows = fence_rows_for(run, shard, backend, &list, &moving,
		                           &rows, err);
		rc = only_rows < 0 ? only_rows : 0;
		only_rows = only_rows > 0;
	}
	/* A long transaction holding a table makes the fence's DDL wait
	 * past the engine's lock timeout (retryable): try again a few
	 * times, a little later each time, then give up cleanly (nothing
	 * fenced, the step fails and says which lock it waited for). */
	for (int attempt = 1; rc == 0; attempt++) {
		rc = await_fence(&run->loop, backend, list.ptrs, list.n,
		                 run->fence_message, on, marker,
		                 only_rows ? &rows : NULL, err);
		if (rc == 0 ||
		    !steps_lock_retry(run, shard, on ? "the fence" : "unfence",
		                      attempt, err))
			break;
		rc = 0;
	}
	table_list_free(&list);
	pairmap_moving_free(&moving);
	if (rc == 0 && on)
		rc = steps_fence_kind_set(run, shard, only_rows, err);
	if (rc == 0)
		journal_event(run->journal, "info", "%s: writes %s",
		              run->plan->shards[shard].name,
		              !on         ? "open again"
		              : only_rows ? "fenced to the rows that move"
		                          : "fenced (whole tables)");
	if (rc == 0)
		fprintf(stderr, "  %s: writes %s\n",
		        run->plan->shards[shard].name,
		        !on         ? "open again"
		        : only_rows ? "fenced to the rows that move (the "
		                      "others go on)"
		                    : "fenced (whole tables)");
	return rc;
}

/* pairmap_points: the points SHARD owns under `to` (ARG). */
static int
owned_under_to(struct rs_owner from, struct rs_owner to, const void *arg)
{
	(void)from;
	return to.shard == *(const int *)arg;
}

/* The guard's owners for SHARD: every other shard of `to` that owns a
 * point, its points and its message, into GUARD's arrays (sized
 * plan->n_shards).  0 or an error. */
static int
guard_owners(struct rs_run *run, int shard, const char *epoch,
             struct rs_moving *owned, char (*messages)[512],
             const char **message_ptrs, int *n, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;

	*n = 0;
	for (int t = 0; t < plan->n_shards; t++) {
		int rc;

		if (t == shard)
			continue;
		rc = pairmap_points(plan->from, plan->to, owned_under_to, &t,
		                    &owned[*n], err);
		if (rc != 0)
			return rc;
		if (owned[*n].n == 0) {
			pairmap_moving_free(&owned[*n]);
			continue;
		}
		/* Short enough for MariaDB's 128 characters. */
		snprintf(messages[*n], sizeof(messages[0]),
		         "row belongs to %.32s since routing epoch %s "
		         "(reshard %.24s)",
		         plan->shards[t].name, epoch, plan->name);
		message_ptrs[*n] = messages[*n];
		(*n)++;
	}
	return 0;
}

int
steps_guard_shard(struct rs_run *run, int shard, int on, struct rs_err *err)
{
	const struct rs_plan *plan = run->plan;
	int n_shards = plan->n_shards;
	struct table_list list = {0};
	struct rs_moving *owned = calloc((size_t)n_shards, sizeof(*owned));
	char(*messages)[512] = malloc(sizeof(*messages) * (size_t)n_shards);
	const char **message_ptrs = malloc(sizeof(char *) * (size_t)n_shards);
	char epoch[32] = "?";
	struct rs_guard guard = {0};
	struct rs_backend *backend;
	char **stmts = NULL;
	int n_stmts = 0, usable = 0;
	int rc = engine_shard(run, shard, &backend, err);

	if (rc == 0 &&
	    (owned == NULL || messages == NULL || message_ptrs == NULL))
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	if (rc == 0 && !backend_supports(backend, RS_CAP_GUARD))
		goto out; /* no guard on this engine: nothing to do */
	if (rc == 0)
		rc = table_list_load(run, shard, &list, err);
	if (rc == 0 && on) {
		usable = key_kinds(run, shard, backend, &list, err);
		rc = usable < 0 ? usable : 0;
		if (rc == 0 && run->journal != NULL &&
		    (rc = journal_fact_get(run->journal, "epoch", epoch,
		                           sizeof(epoch), err)) == 1)
			rc = 0;
		if (rc == 0 && usable)
			rc = guard_owners(run, shard, epoch, owned, messages,
			                  message_ptrs, &guard.n_owners, err);
		if (rc == RS_EUSAGE) /* maps with no such description */
			rc = usable = 0;
		guard = (struct rs_guard){plan->hash, list.keys,
		                          list.kinds, guard.n_owners,
		                          owned,      message_ptrs};
	}
	if (rc == 0 && (!on || usable))
		rc = backend_guard_sql(backend, list.ptrs, list.n,
		                       on ? &guard : NULL, &stmts, &n_stmts,
		                       err);
	for (int i = 0; rc == 0 && i < n_stmts; i++)
		rc = await_exec(&run->loop, backend, stmts[i], err);
	/* For status: which epoch's routing the guard upholds.  Lazy: it
	 * describes what is up, in the fenced window (unfence). */
	if (rc == 0 && on && usable && run->journal != NULL)
		rc = journal_fact_set_lazy(run->journal, "guarded", epoch, err);
	if (rc == 0 && on && usable)
		fprintf(stderr,
		        "  %s: writes to rows it no longer owns are refused "
		        "(the guard, until purge is done)\n",
		        plan->shards[shard].name);
out:
	backend_guard_sql_free(stmts, n_stmts);
	for (int i = 0; owned != NULL && i < n_shards; i++)
		pairmap_moving_free(&owned[i]);
	free(owned);
	free(messages);
	free(message_ptrs);
	table_list_free(&list);
	return rc;
}

static uint64_t
keyset_hash(const struct rs_value *key, int n_pk)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < n_pk; i++) {
		for (size_t k = 0; k < key[i].len; k++)
			h = (h ^ (unsigned char)key[i].text[k]) *
			    0x100000001b3ULL;
		h = (h ^ 0xff) * 0x100000001b3ULL; /* column boundary */
	}
	return h;
}

int
steps_keyset_init(struct steps_keyset *set, const struct rs_rowbuf *rows,
                  int n_pk)
{
	set->rows = rows;
	set->n_pk = n_pk;
	set->cap = 16;
	while (set->cap < 2 * (size_t)rows->n_rows)
		set->cap *= 2;
	set->slots = calloc(set->cap, sizeof(int));
	if (set->slots == NULL)
		return RS_ENOMEM;
	for (int r = 0; r < rows->n_rows; r++) {
		size_t i =
			keyset_hash(rowbuf_row(rows, r), n_pk) & (set->cap - 1);

		while (set->slots[i] != 0)
			i = (i + 1) & (set->cap - 1);
		set->slots[i] = r + 1;
	}
	return 0;
}

void
steps_keyset_free(struct steps_keyset *set)
{
	free(set->slots);
	set->slots = NULL;
}

int
steps_keyset_find(const struct steps_keyset *set, const struct rs_value *key)
{
	size_t i = keyset_hash(key, set->n_pk) & (set->cap - 1);

	for (; set->slots[i] != 0; i = (i + 1) & (set->cap - 1)) {
		int r = set->slots[i] - 1;

		if (walk_same_key(rowbuf_row(set->rows, r), key, set->n_pk))
			return r;
	}
	return -1;
}

/* One physical table to walk: task I of a steps_walk_all. */
struct walk_task {
	int shard, table, slot;
};

struct walk_all {
	const struct steps_walk_spec *spec;
	struct walk_task *tasks;
	int n;
};

/* Task I: walk one physical table, in a stream of its own connections. */
static int
walk_one_table(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	const struct walk_all *all = arg;
	const struct steps_walk_spec *spec = all->spec;
	const struct walk_task *task = &all->tasks[i];
	struct rs_walk walk = {
		.run = run,
		.step = spec->step,
		.shard = task->shard,
		.table = task->table,
		.slot = task->slot,
		.all_columns = spec->all_columns,
		.restart = spec->restart,
		.no_effect = spec->no_effect,
		.intent_async = spec->intent_async,
		.fill_affected = spec->fill_affected,
		.open_end = spec->open_end,
		.arg = spec->arg,
	};

	engine_physical(spec->map, run->plan->tables[task->table].name,
	                task->slot, walk.physical, sizeof(walk.physical));
	int rc = engine_shard(run, task->shard, &walk.backend, err);

	return rc != 0 ? rc : walk_table(&walk, spec->chunk, NULL, err);
}

int
steps_walk_all(struct rs_run *run, const struct steps_walk_spec *spec,
               struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(spec->map, shards);
	int per_shard =
		run->plan->n_tables * engine_tables_per_shard(spec->map);
	struct walk_all all = {
		.spec = spec,
		.tasks = malloc(sizeof(*all.tasks) *
	                        (size_t)(n * per_shard + 1)),
	};
	struct rs_streams_spec streams = {
		.parallel = run->plan->options.parallel,
		.own_connections = 1,
		.task = walk_one_table,
		.arg = &all,
	};
	char before[32];
	uint64_t expected = 0;
	int64_t rows_before = 0;
	int rc = 0;

	if (all.tasks == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	/* Only for the progress bar's total. */
	if (journal_fact_get(run->journal, "rows_before", before,
	                     sizeof(before), NULL) == 1)
		expected = strtoull(before, NULL, 10) * (uint64_t)spec->copies;
	/* Table by table across the shards, so that the first streams
	 * spread over the shards instead of queueing on one. */
	for (int slot = 0; slot < per_shard; slot++)
		for (int i = 0; i < n; i++)
			if (!spec->touched_only ||
			    engine_touches(run, shards[i]))
				all.tasks[all.n++] = (struct walk_task){
					shards[i],
					slot / engine_tables_per_shard(
						       spec->map),
					slot % engine_tables_per_shard(
						       spec->map)};
	/* A resumed walk goes on after its done chunks, whose rows count as
	 * done; one that starts over forgets them, so that its counts are of
	 * this attempt alone. */
	rc = spec->restart
	             ? journal_chunks_forget(run->journal, spec->step, err)
	             : journal_step_rows_done(run->journal, spec->step,
	                                      &rows_before, err);
	if (rc != 0) {
		free(all.tasks);
		return rc;
	}
	progress_start(&run->progress, spec->step, expected);
	progress_resume(&run->progress, (uint64_t)rows_before);
	streams.n = all.n;
	rc = streams_run(run, &streams, err);
	free(all.tasks);
	if (rc == 0)
		progress_finish(&run->progress);
	return rc;
}

int
steps_owners(struct rs_walk *walk, const struct rs_rowbuf *rows,
             struct rs_owner **owners, struct rs_err *err)
{
	return steps_owners_under(walk, walk->run->plan->to, rows, owners, err);
}

int
steps_owners_under(struct rs_walk *walk, const struct rs_map *map,
                   const struct rs_rowbuf *rows, struct rs_owner **owners,
                   struct rs_err *err)
{
	int rc = 0;

	*owners = malloc(sizeof(**owners) * (size_t)(rows->n_rows + 1));
	if (*owners == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	rc = walk_owners(walk, map, rows, *owners, err);
	if (rc != 0) {
		free(*owners);
		*owners = NULL;
	}
	return rc;
}

int
steps_each_new_owner(struct rs_walk *walk, const struct rs_rowbuf *rows,
                     const struct rs_owner *owners,
                     int (*fn)(struct rs_walk *walk,
                               const struct rs_rowbuf *rows,
                               const struct rs_owner *owners,
                               struct rs_owner owner, void *ctx,
                               struct rs_err *err),
                     void *ctx, struct rs_err *err)
{
	for (int r = 0; r < rows->n_rows; r++) {
		int seen = owners[r].shard == walk->shard &&
		           owners[r].table == walk->slot;
		int rc;

		for (int q = 0; q < r && !seen; q++)
			seen = owners[q].shard == owners[r].shard &&
			       owners[q].table == owners[r].table;
		if (seen)
			continue;
		rc = fn(walk, rows, owners, owners[r], ctx, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
steps_is_target(const struct rs_plan *plan, int shard)
{
	return steps_in_map(plan->to, shard) &&
	       !steps_in_map(plan->from, shard);
}

int
steps_is_source_table(const struct rs_plan *plan, int shard,
                      const char *physical)
{
	char name[256];

	if (!steps_in_map(plan->from, shard))
		return 0;
	for (int t = 0; t < plan->n_tables; t++)
		for (int k = 0; k < engine_tables_per_shard(plan->from); k++) {
			engine_physical(plan->from, plan->tables[t].name, k,
			                name, sizeof(name));
			if (strcmp(name, physical) == 0)
				return 1;
		}
	return 0;
}

/* The most points steps_each_owner_pair looks at. */
#define STEPS_MAX_RESIDUES (UINT64_C(1) << 24)

/* steps_each_owner_pair's callback, through the pair map and the pins. */
struct owner_pairs {
	void (*fn)(struct rs_owner from, struct rs_owner to, void *arg);
	void *arg;
};

static int
owner_pair(struct rs_owner from, struct rs_owner to, const void *ref)
{
	const struct owner_pairs *const *p = ref;

	(*p)->fn(from, to, (*p)->arg);
	return 0;
}

static int
owner_pin(struct rs_owner from, struct rs_owner to,
          const struct rs_map_override *o, void *ref)
{
	(void)o;
	return owner_pair(from, to, ref);
}

int
steps_each_owner_pair(const struct rs_plan *plan,
                      void (*fn)(struct rs_owner from, struct rs_owner to,
                                 void *arg),
                      void *arg, struct rs_err *err)
{
	struct owner_pairs pairs = {fn, arg};
	const struct owner_pairs *ref = &pairs;
	struct rs_moving moving;
	int rc = pairmap_points_unpinned(plan->from, plan->to, owner_pair, &ref,
	                                 &moving, err);

	pairmap_moving_free(&moving);
	if (rc == RS_EUSAGE) {
		/* A periodic map's owner depends on the point modulo its
		 * period: every point below the common one has them all. */
		uint64_t a = map_period(plan->from), b = map_period(plan->to);
		uint64_t l = a != 0 && b != 0 ? a / map_gcd(a, b) : 0;

		if (l == 0 || l > STEPS_MAX_RESIDUES / b)
			return RS_EUSAGE;
		for (uint64_t p = 0; p < l * b; p++)
			fn(map_owner(plan->from, p), map_owner(plan->to, p),
			   arg);
		rc = 0;
	}
	if (rc == 0)
		steps_each_pin(plan, owner_pin, &ref);
	return rc;
}

int
steps_each_pin(const struct rs_plan *plan,
               int (*fn)(struct rs_owner from, struct rs_owner to,
                         const struct rs_map_override *o, void *arg),
               void *arg)
{
	for (int m = 0; m < 2; m++) {
		const struct rs_map_def *def =
			map_def(m == 0 ? plan->from : plan->to);

		for (int i = 0; i < def->n_overrides; i++) {
			const struct rs_map_override *o = &def->overrides[i];
			uint64_t point;
			int rc;

			if (hash_point(plan->hash, o->key, o->len, &point) != 0)
				continue;
			rc = fn(map_owner_key(plan->from, o->key, o->len, point,
			                      NULL),
			        map_owner_key(plan->to, o->key, o->len, point,
			                      NULL),
			        o, arg);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

int
steps_column(const struct rs_table_def *def, const char *name)
{
	for (int c = 0; c < def->n_columns; c++)
		if (strcmp(def->columns[c].name, name) == 0)
			return c;
	return -1;
}

/* How long a look at a shard's replica lag stands (steps_wait_downstream). */
#define STEPS_LAG_RECHECK_MS 500

int
steps_wait_downstream(struct rs_run *run, struct rs_backend *backend, int shard,
                      const char *what, struct rs_err *err)
{
	int64_t bound =
		(int64_t)run->plan->options.max_replica_lag_seconds * 1000;
	int64_t lag = 0;
	int said = 0, rc;

	if (!backend_supports(backend, RS_CAP_DOWNSTREAM_LAG))
		return 0;
	/* A lag is seconds; one look every STEPS_LAG_RECHECK_MS is enough,
	 * and spares a query before every batch of a fast copy. */
	if (run->lag_ok_at[shard] != 0 &&
	    uv_now(&run->loop) - run->lag_ok_at[shard] < STEPS_LAG_RECHECK_MS)
		return 0;
	while ((rc = await_downstream_lag(&run->loop, backend, &lag, err)) ==
	               0 &&
	       lag > bound && !run->stop_requested) {
		if (!said) {
			progress_clear();
			fprintf(stderr,
			        "  %s: %s waits: its replicas replay %.1f s "
			        "behind (max_replica_lag_seconds = %d)\n",
			        run->plan->shards[shard].name, what,
			        (double)lag / 1000.0,
			        run->plan->options.max_replica_lag_seconds);
		}
		said = 1;
		await_sleep(&run->loop, 250);
	}
	if (rc == 0 && lag <= bound)
		run->lag_ok_at[shard] = uv_now(&run->loop);
	/* Stopped while the replicas lag: the write waited for must not
	 * go out now. */
	if (rc == 0 && lag > bound)
		rc = engine_checkpoint(run, err);
	return rc;
}

/* The tables of a steps_each_table_stream and what to do with each. */
struct table_stream {
	const struct rs_map *map;
	struct walk_task *tasks;
	int (*fn)(struct rs_run *run, int shard, int table, int slot,
	          const char *physical, void *arg, struct rs_err *err);
	void *arg;
};

static int
table_stream_task(struct rs_run *run, int i, void *arg, struct rs_err *err)
{
	const struct table_stream *ts = arg;
	const struct walk_task *task = &ts->tasks[i];
	char physical[RS_PLAN_MAX_NAME + 1];

	engine_physical(ts->map, run->plan->tables[task->table].name,
	                task->slot, physical, sizeof(physical));
	return ts->fn(run, task->shard, task->table, task->slot, physical,
	              ts->arg, err);
}

int
steps_each_table_stream(struct rs_run *run, const struct rs_map *map,
                        int (*fn)(struct rs_run *run, int shard, int table,
                                  int slot, const char *physical, void *arg,
                                  struct rs_err *err),
                        void *arg, struct rs_err *err)
{
	int shards[RS_PLAN_MAX_SHARDS];
	int n = steps_map_shards(map, shards);
	int slots = engine_tables_per_shard(map);
	int per_shard = run->plan->n_tables * slots;
	struct table_stream ts = {
		.map = map,
		.tasks =
			malloc(sizeof(*ts.tasks) * (size_t)(n * per_shard + 1)),
		.fn = fn,
		.arg = arg,
	};
	struct rs_streams_spec spec = {
		.parallel = run->plan->options.parallel,
		.own_connections = 1,
		.task = table_stream_task,
		.arg = &ts,
	};
	int rc;

	if (ts.tasks == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int t = 0; t < per_shard; t++)
		for (int i = 0; i < n; i++)
			ts.tasks[spec.n++] = (struct walk_task){
				shards[i], t / slots, t % slots};
	rc = streams_run(run, &spec, err);
	free(ts.tasks);
	return rc;
}

int
steps_read_unseen(struct rs_run *run, struct rs_backend *backend,
                  const struct rs_table_def *def, const struct rs_rowbuf *rows,
                  const struct rs_owner *owners, struct rs_owner owner,
                  const char *seen, struct rs_rowbuf *out, struct rs_err *err)
{
	int n_pk = def->n_pk, n = 0, rc;
	struct rs_value *keys = malloc(
		sizeof(*keys) * ((size_t)rows->n_rows * (size_t)n_pk + 1));

	if (keys == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int r = 0; r < rows->n_rows; r++)
		if (owners[r].shard == owner.shard &&
		    owners[r].table == owner.table && seen[r] == 0)
			memcpy(&keys[(size_t)n++ * (size_t)n_pk],
			       rowbuf_row(rows, r),
			       sizeof(*keys) * (size_t)n_pk);
	out->n_rows = 0;
	rc = n == 0 ? 0
	            : steps_read_keys(run, backend, def, keys, n, n_pk, out,
	                              err);
	free(keys);
	return rc;
}

int
steps_read_keys(struct rs_run *run, struct rs_backend *backend,
                const struct rs_table_def *def, const struct rs_value *keys,
                int n, int w, struct rs_rowbuf *out, struct rs_err *err)
{
	int n_pk = def->n_pk, rc = 0;
	struct rs_value *asked =
		malloc(sizeof(*asked) * ((size_t)n * n_pk + 1));
	int *all = malloc(sizeof(int) * (size_t)(def->n_columns + 1));

	if (asked == NULL || all == NULL)
		rc = rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < n; i++)
		memcpy(&asked[(size_t)i * n_pk], &keys[(size_t)i * w],
		       sizeof(*asked) * (size_t)n_pk);
	for (int c = 0; rc == 0 && c < def->n_columns; c++)
		all[c] = c;
	if (rc == 0) {
		struct rs_rows rows = {n, n_pk, asked};
		struct rs_keys_request request = {
			.table = def,
			.columns = all,
			.n_columns = def->n_columns,
			.keys = &rows,
		};

		rc = await_read_keys(&run->loop, backend, &request, out, err);
	}
	free(asked);
	free(all);
	return rc;
}
