/*
 * `reshard explain PLAN` (explain.h): the steps a run would take, on which
 * shards and tables, the rows each handles, what cannot be undone, which
 * fence each source gets, and how long each step and the fence are
 * expected to last, from rates measured now.  Read-only throughout; the
 * estimate model is docs/explain.md's.
 *
 * In three passes: look at every shard (connect, describe, time one chunk
 * read and one round trip, ask a server replica how far behind it is),
 * read every source shard key with the live dry-run (exact rows and
 * movers per shard and table), then work out each step and print.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/url.h"
#include "common/text.h"
#include "dryrun/dryrun.h"
#include "engine/await.h"
#include "strategy/explain.h"
#include "shardmap/pairmap.h"
#include "shardmap/stats.h"

/* The model (docs/explain.md): a row written costs this many row reads at
 * the shard's measured read rate, a row deleted this many. */
#define EXPLAIN_WRITE_COST  3.0
#define EXPLAIN_DELETE_COST 2.0
/* PostgreSQL's promotion waits for the startup process to end recovery
 * (10 to 50 ms on the test servers, longer on a busy one): assumed, not
 * measured (explain cannot promote). */
#define EXPLAIN_PG_PROMOTE_S 0.25
/* How long explain waits for a server replica to reach its primary's
 * position of now, in slices. */
#define EXPLAIN_CATCH_UP_WAIT_MS  3000
#define EXPLAIN_CATCH_UP_SLICE_MS 250

enum explain_role {
	ROLE_SOURCE = 1,  /* a node of from */
	ROLE_TO = 2,      /* a node of to */
	ROLE_TARGET = 4,  /* a node of to only (a split copies onto it) */
	ROLE_REPLICA = 8, /* a doubling's replica of a source */
};

/* One shard as explain found it. */
struct explain_shard {
	int shard;   /* index in the plan */
	int roles;   /* enum explain_role */
	int touched; /* the run changes it (engine_touches) */
	int primary; /* a replica's primary (plan index), else -1 */
	int exists;  /* 0: a SQLite file reshard has yet to make */
	enum rs_engine engine;
	int64_t rows;        /* rows under from (exact), a target's count; -1 */
	int64_t *tab_rows;   /* [plan->n_tables]: the same per logical table */
	int *tab_missing;    /* [plan->n_tables]: physical tables missing */
	uint64_t moving_out; /* rows it gives away (exact) */
	uint64_t moving_in;  /* rows it receives from other shards */
	uint64_t after;      /* rows it owns under to */
	double rate;         /* rows read a second; 0 unknown */
	int rate_measured;   /* 1 timed on this shard, 0 borrowed */
	double round_trip;   /* s, one catalog query; -1 unknown */
	int fence_rows;      /* a touched source: 1 the rows that move, 0
	                        whole tables */
	int fenced_now;      /* carries a fence right now */
	double catch_up;     /* a server replica: s to reach its primary's
	                        position of now; -1 unknown */
	char note[1100];     /* what preflight would say, or "" */
};

/* One step as explain works it out. */
struct explain_step {
	const struct rs_step_def *def;
	struct rs_step_record rec; /* from the journal; PENDING without */
	int fenced;                /* writes are fenced during it */
	int *on;                   /* explain shard indexes it works on */
	int n_on;
	const struct rs_map *tables; /* whose physical tables it handles;
	                                NULL: none */
	int64_t rows;   /* rows it handles; -1 not known beforehand */
	double seconds; /* expected; -1 not known */
	char basis[400];
};

struct explain {
	const struct rs_plan *plan;
	const struct rs_strategy_def *strategy;
	struct rs_run run; /* for engine_shard and engine_table only */
	struct explain_shard *shards;
	int n_shards;
	int *index; /* [plan->n_shards]: explain index, -1 not in the run */
	struct rs_dryrun_counts *counts; /* [plan->n_tables] */
	uint64_t total, moving, misplaced;
	struct rs_journal *journal; /* NULL: none */
	int journal_exists;
	int held; /* a process runs the plan now */
	char holder[256];
	struct explain_step *steps; /* [strategy->n_steps] */
	int fence_at, unfence_at;   /* step indexes, -1 none */
	int irreversible_at;        /* the first irreversible step, -1 */
	int no_return_at;           /* the first no_return step, -1 */
	int undo_at;                /* the first irreversible or no_return
	                               step: the run cannot be undone whole
	                               from there on; -1 */
	/* Sums of the expected times of the steps not done yet: of every
	 * step, of the fenced ones, and of the fenced ones before undo_at
	 * (what fence_timeout_seconds bounds); each *_known is 0 when a step
	 * in it is not estimated (the sum then counts the others). */
	double total_s, fenced_s, cutover_s;
	int total_known, fenced_known, cutover_known;
};

/* ------------------------------------------------------------------ */
/* Small helpers. */

static double
explain_now(void)
{
	return (double)uv_hrtime() / 1e9;
}

static struct explain_shard *
explain_shard_of(struct explain *ex, int shard)
{
	return shard >= 0 && ex->index[shard] >= 0
	               ? &ex->shards[ex->index[shard]]
	               : NULL;
}

static const char *
explain_name(const struct explain *ex, int i)
{
	return ex->plan->shards[ex->shards[i].shard].name;
}

/* Seconds to read ROWS rows on S at its rate: 0 for none, -1 unknown. */
static double
explain_read_s(const struct explain_shard *s, double rows)
{
	if (rows <= 0)
		return 0;
	return s->rate > 0 ? rows / s->rate : -1;
}

/* Seconds of N statements on S: -1 unknown. */
static double
explain_stmts_s(const struct explain_shard *s, int n)
{
	return s->round_trip >= 0 ? n * s->round_trip : -1;
}

/* Per-shard times of a step, combined (docs/explain.md). */
struct explain_sum {
	double max, sum;
	int unknown;
};

static void
explain_sum_add(struct explain_sum *e, double s)
{
	if (s < 0) {
		e->unknown = 1;
		return;
	}
	e->sum += s;
	if (s > e->max)
		e->max = s;
}

/* Every shard at once: the slowest. */
static double
explain_sum_all(const struct explain_sum *e)
{
	return e->unknown ? -1 : e->max;
}

/* A walk: options.parallel streams over the shards' tables: no faster
 * than the slowest shard, nor than the whole shared by the streams. */
static double
explain_sum_walk(const struct explain_sum *e, int parallel)
{
	double shared = e->sum / (parallel > 0 ? parallel : 1);

	if (e->unknown)
		return -1;
	return shared > e->max ? shared : e->max;
}

/* S as "0.3 s", "< 0.1 s", "4 min 10 s", "unknown" into BUF. */
static const char *
explain_seconds(double s, char *buf, size_t size)
{
	if (s < 0)
		snprintf(buf, size, "unknown");
	else if (s < 0.05)
		snprintf(buf, size, "< 0.1 s");
	else if (s < 120)
		snprintf(buf, size, "%.1f s", s);
	else if (s < 7200)
		snprintf(buf, size, "%d min %d s", (int)(s / 60), (int)s % 60);
	else
		snprintf(buf, size, "%d h %d min", (int)(s / 3600),
		         ((int)s % 3600) / 60);
	return buf;
}

/* The physical tables of MAP, as "orders_0, orders_1, items_0, …" into
 * BUF (cut with "…" when long). */
static const char *
explain_tables(const struct rs_plan *plan, const struct rs_map *map, char *buf,
               size_t size)
{
	char physical[RS_PLAN_MAX_NAME + 1];
	size_t k = 0;

	buf[0] = '\0';
	for (int t = 0; t < plan->n_tables; t++)
		for (int x = 0; x < engine_tables_per_shard(map); x++) {
			engine_physical(map, plan->tables[t].name, x, physical,
			                sizeof(physical));
			if (k + strlen(physical) + 8 >= size) {
				if (k + 4 < size)
					snprintf(buf + k, size - k, ", …");
				return buf;
			}
			k += (size_t)snprintf(buf + k, size - k, "%s%s",
			                      k > 0 ? ", " : "", physical);
		}
	return buf;
}

/* ------------------------------------------------------------------ */
/* Pass 1: the shards. */

/* The shards of the run, each once: from's, to's, and a doubling's
 * replicas.  Returns 0 or RS_ENOMEM. */
static int
explain_list_shards(struct explain *ex, struct rs_err *err)
{
	const struct rs_plan *plan = ex->plan;
	int from[RS_PLAN_MAX_SHARDS], to[RS_PLAN_MAX_SHARDS];
	int n_from = stats_map_shards(plan->from, from, RS_PLAN_MAX_SHARDS);
	int n_to = stats_map_shards(plan->to, to, RS_PLAN_MAX_SHARDS);

	ex->index = malloc(sizeof(*ex->index) * (size_t)plan->n_shards);
	ex->shards = calloc((size_t)plan->n_shards, sizeof(*ex->shards));
	if (ex->index == NULL || ex->shards == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int i = 0; i < plan->n_shards; i++)
		ex->index[i] = -1;
	for (int pass = 0; pass < 3; pass++) {
		int n = pass == 0 ? n_from : pass == 1 ? n_to : n_from;

		for (int i = 0; i < n; i++) {
			int shard = pass == 1 ? to[i] : from[i];
			int role = pass == 0 ? ROLE_SOURCE : ROLE_TO;
			struct explain_shard *s;

			if (pass == 2) {
				if (!ex->strategy->promotes_replicas ||
				    plan->shards[shard].replica < 0)
					continue;
				role = ROLE_REPLICA;
				shard = plan->shards[shard].replica;
			}
			if (ex->index[shard] < 0) {
				s = &ex->shards[ex->n_shards];
				ex->index[shard] = ex->n_shards++;
				s->shard = shard;
				s->primary = -1;
				s->rows = -1;
				s->round_trip = -1;
				s->catch_up = -1;
				s->exists = 1;
				s->tab_rows = calloc((size_t)plan->n_tables,
				                     sizeof(*s->tab_rows));
				s->tab_missing =
					calloc((size_t)plan->n_tables,
				               sizeof(*s->tab_missing));
				if (s->tab_rows == NULL ||
				    s->tab_missing == NULL)
					return rs_err_set(err, RS_ENOMEM,
					                  "out of memory");
			}
			s = &ex->shards[ex->index[shard]];
			s->roles |= role;
			if (role == ROLE_REPLICA)
				s->primary = from[i];
		}
	}
	for (int i = 0; i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];
		struct rs_url url;
		struct rs_err ignored;

		if ((s->roles & (ROLE_TO | ROLE_SOURCE)) == ROLE_TO &&
		    s->primary < 0)
			s->roles |= ROLE_TARGET;
		s->touched = engine_touches(&ex->run, s->shard);
		if (url_parse(plan->shards[s->shard].url, NULL, &url,
		              &ignored) == 0)
			s->engine = url.engine;
		url_clear(&url);
	}
	return 0;
}

/* Time a read of the first chunk (batch_rows rows, every column) of
 * DEF on S's BACKEND into *ROWS and *SECONDS. */
static int
explain_time_read(struct explain *ex, struct rs_backend *backend,
                  const struct rs_table_def *def, int *rows, double *seconds,
                  struct rs_err *err)
{
	struct rs_rowbuf buf = {0};
	int *columns = malloc(sizeof(*columns) * (size_t)def->n_columns);
	struct rs_read_request request = {
		.table = def,
		.columns = columns,
		.n_columns = def->n_columns,
		.limit = ex->plan->options.batch_rows,
	};
	double t0;
	int rc;

	if (columns == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int c = 0; c < def->n_columns; c++)
		columns[c] = c;
	t0 = explain_now();
	rc = await_read(&ex->run.loop, backend, &request, &buf, err);
	*seconds = explain_now() - t0;
	*rows = rc == 0 ? buf.n_rows : 0;
	rowbuf_free(&buf);
	free(columns);
	return rc;
}

/* Whether the fence of source S can hold only the rows that move: the
 * engine computes points, each table's key is of a kind it hashes, and
 * the maps describe the moving points (as steps/steps.c decides). */
static int
explain_fence_rows(struct explain *ex, struct explain_shard *s,
                   struct rs_backend *backend, struct rs_err *err)
{
	const struct rs_plan *plan = ex->plan;
	struct rs_moving moving = {0};
	struct rs_err ignored;
	char physical[RS_PLAN_MAX_NAME + 1];
	int rc;

	if (!backend_supports(backend, RS_CAP_FENCE_ROWS))
		return 0;
	for (int t = 0; t < plan->n_tables; t++)
		for (int x = 0; x < engine_tables_per_shard(plan->from); x++) {
			const struct rs_table_def *def;
			int k = -1;

			engine_physical(plan->from, plan->tables[t].name, x,
			                physical, sizeof(physical));
			if (engine_table(&ex->run, s->shard, physical, &def,
			                 err) != 0)
				return 0;
			for (int c = 0; c < def->n_columns; c++)
				if (strcmp(def->columns[c].name,
				           plan->tables[t].key) == 0)
					k = c;
			if (k < 0 ||
			    !backend_fence_rows_hash(backend, plan->hash,
			                             def->columns[k].kind))
				return 0;
		}
	rc = pairmap_moving(plan->from, plan->to, s->shard, &moving, &ignored);
	pairmap_moving_free(&moving);
	if (rc == RS_ENOMEM)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	return rc == 0;
}

/* A source: describe its tables, time one chunk read of each and one
 * round trip, see whether it is fenced now and which fence it gets. */
static int
explain_source(struct explain *ex, struct explain_shard *s,
               struct rs_backend *backend, struct rs_err *err)
{
	static const char cascades_allowed[] =
		"the capture does not see them (options.allow_cascades)";
	static const char cascades_refused[] =
		"preflight will refuse (make them RESTRICT or NO ACTION, or "
		"set options.allow_cascades = true)";
	const struct rs_plan *plan = ex->plan;
	char physical[RS_PLAN_MAX_NAME + 1];
	double read_s = 0;
	int64_t read_rows = 0;
	int rc;

	for (int t = 0; t < plan->n_tables; t++)
		for (int x = 0; x < engine_tables_per_shard(plan->from); x++) {
			const struct rs_table_def *def;
			double t0, seconds;
			int rows = 0, on = 0;

			engine_physical(plan->from, plan->tables[t].name, x,
			                physical, sizeof(physical));
			rc = engine_table(&ex->run, s->shard, physical, &def,
			                  err);
			if (rc != 0)
				return rc;
			/* What preflight says of a foreign key that changes
			 * rows without triggers (preflight.c). */
			if (ex->strategy->copies_movers &&
			    def->cascades != NULL && s->note[0] == '\0')
				snprintf(s->note, sizeof(s->note),
				         "table %s: foreign keys %s change its "
				         "rows without triggers: %s",
				         physical, def->cascades,
				         plan->options.allow_cascades
				                 ? cascades_allowed
				                 : cascades_refused);
			t0 = explain_now();
			rc = await_fenced(&ex->run.loop, backend, physical, &on,
			                  err);
			seconds = explain_now() - t0;
			if (rc != 0)
				return rc;
			if (s->round_trip < 0 || seconds < s->round_trip)
				s->round_trip = seconds;
			s->fenced_now |= on;
			rc = explain_time_read(ex, backend, def, &rows,
			                       &seconds, err);
			if (rc != 0)
				return rc;
			read_rows += rows;
			read_s += seconds;
		}
	if (read_rows > 0 && read_s > 0) {
		s->rate = (double)read_rows / read_s;
		s->rate_measured = 1;
	}
	if (s->touched) {
		rc = explain_fence_rows(ex, s, backend, err);
		if (rc < 0)
			return rc;
		s->fence_rows = rc;
	}
	return 0;
}

/* A shard of `to` only (a split's target): its tables, their rows (a
 * target must be empty), and a round trip. */
static int
explain_target(struct explain *ex, struct explain_shard *s,
               struct rs_backend *backend, struct rs_err *err)
{
	const struct rs_plan *plan = ex->plan;
	char physical[RS_PLAN_MAX_NAME + 1];
	int missing = 0;
	int rc;

	s->rows = 0;
	for (int t = 0; t < plan->n_tables; t++)
		for (int x = 0; x < engine_tables_per_shard(plan->to); x++) {
			const struct rs_table_def *def;
			struct rs_err local = {0};
			int64_t count = 0;
			double t0 = explain_now();

			engine_physical(plan->to, plan->tables[t].name, x,
			                physical, sizeof(physical));
			rc = engine_table(&ex->run, s->shard, physical, &def,
			                  &local);
			if (rc == RS_ESCHEMA) {
				s->tab_missing[t]++;
				missing++;
				continue;
			}
			if (rc != 0) {
				*err = local;
				return rc;
			}
			rc = await_count(&ex->run.loop, backend, physical,
			                 &count, err);
			if (rc != 0)
				return rc;
			if (s->round_trip < 0 ||
			    explain_now() - t0 < s->round_trip)
				s->round_trip = explain_now() - t0;
			s->tab_rows[t] += count;
			s->rows += count;
		}
	if (missing > 0 && !plan->options.create_tables)
		snprintf(s->note, sizeof(s->note),
		         "%d table%s missing: preflight will refuse (make %s, "
		         "or set options.create_tables = true)",
		         missing, missing == 1 ? " is" : "s are",
		         missing == 1 ? "it" : "them");
	else if (missing > 0)
		snprintf(s->note, sizeof(s->note),
		         "%d table%s missing: capture makes %s from the first "
		         "source's definition (options.create_tables)",
		         missing, missing == 1 ? " is" : "s are",
		         missing == 1 ? "it" : "them");
	else if (s->rows > 0)
		snprintf(s->note, sizeof(s->note),
		         "holds %lld rows: preflight will refuse a target that "
		         "is not empty",
		         (long long)s->rows);
	return 0;
}

/* A doubling's server replica R of primary P: would preflight take it,
 * and how long does it take to reach P's position of now (the catch-up
 * under the fence, where no new write comes). */
static int
explain_replica(struct explain *ex, struct explain_shard *r,
                struct rs_backend *replica, struct rs_err *err)
{
	struct rs_backend *primary;
	struct rs_replication state = {0};
	struct rs_err local = {0};
	char position[RS_POSITION_SIZE];
	double t0;
	int promoted = 0;
	int rc = engine_shard(&ex->run, r->primary, &primary, err);

	if (rc != 0)
		return rc;
	t0 = explain_now();
	rc = await_promoted(&ex->run.loop, replica, &promoted, err);
	if (rc != 0)
		return rc;
	r->round_trip = explain_now() - t0;
	if (promoted) { /* by this run's promote, or not a replica at all */
		snprintf(r->note, sizeof(r->note),
		         "a primary already (promoted)");
		return 0;
	}
	rc = await_replica_check(
		&ex->run.loop, primary, replica,
		ex->plan->options.max_replica_lag_seconds * 1000, &local);
	if (rc == RS_EUSAGE || rc == RS_EQUERY) {
		snprintf(r->note, sizeof(r->note), "preflight will refuse: %s",
		         local.message);
		return 0;
	}
	if (rc != 0) {
		*err = local;
		return rc;
	}
	t0 = explain_now();
	rc = await_position(&ex->run.loop, primary, position, sizeof(position),
	                    err);
	while (rc == 0 && !state.reached &&
	       explain_now() - t0 < EXPLAIN_CATCH_UP_WAIT_MS / 1000.0)
		rc = await_catch_up(&ex->run.loop, primary, replica, position,
		                    EXPLAIN_CATCH_UP_SLICE_MS, &state, err);
	if (rc != 0)
		return rc;
	if (state.reached)
		r->catch_up = explain_now() - t0;
	else
		snprintf(r->note, sizeof(r->note),
		         "did not reach its primary's position within %d s "
		         "(%lld %s behind%s%s)",
		         EXPLAIN_CATCH_UP_WAIT_MS / 1000,
		         (long long)state.behind,
		         state.unit != NULL ? state.unit : "",
		         state.note[0] ? ": " : "", state.note);
	return 0;
}

/* The step states of a run begun earlier, from its journal (read-only,
 * never made). */
static int
explain_journal(struct explain *ex, struct rs_err *err)
{
	struct stat sb;
	int rc;

	ex->held = journal_lock_holder(ex->plan->journal, ex->holder,
	                               sizeof(ex->holder));
	if (stat(ex->plan->journal, &sb) != 0)
		return 0;
	ex->journal_exists = 1;
	rc = journal_open_readonly(ex->plan->journal, &ex->journal, err);
	if (rc != 0 && ex->held) { /* a run making it right now */
		memset(err, 0, sizeof(*err));
		return 0;
	}
	for (int i = 0; rc == 0 && i < ex->strategy->n_steps; i++)
		rc = journal_step_get(ex->journal, ex->strategy->steps[i]->name,
		                      &ex->steps[i].rec, err);
	return rc;
}

/* Look at every shard; the first that cannot be reached fails. */
static int
explain_look(struct explain *ex, struct rs_err *err)
{
	int rc = 0;

	for (int i = 0; rc == 0 && i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];
		struct rs_backend *b;

		/* Only a replica may be missing (pre-verify makes a SQLite
		 * one); for any other shard connecting says why not. */
		if (s->primary >= 0 && !(s->roles & ROLE_SOURCE) &&
		    !engine_shard_exists(&ex->run, s->shard)) {
			s->exists = 0;
			continue;
		}
		rc = engine_shard(&ex->run, s->shard, &b, err);
		if (rc != 0)
			break;
		if (s->roles & ROLE_SOURCE)
			rc = explain_source(ex, s, b, err);
		else if (s->roles & ROLE_TARGET)
			rc = explain_target(ex, s, b, err);
		else if (s->primary >= 0 &&
		         !backend_supports(b, RS_CAP_MADE_REPLICA))
			rc = explain_replica(ex, s, b, err);
		else if (s->primary >= 0) {
			struct explain_shard *p =
				explain_shard_of(ex, s->primary);
			int made = p != NULL && ex->journal != NULL &&
			           ex->steps != NULL;

			/* A replica file is there: made by this run's
			 * pre-verify, or in the way of it. */
			for (int k = 0; made && k < ex->strategy->n_steps; k++)
				if (strcmp(ex->steps[k].def->name,
				           "pre-verify") == 0)
					made = ex->steps[k].rec.state !=
					       RS_STEP_PENDING;
			if (!made)
				snprintf(s->note, sizeof(s->note),
				         "the file exists already: preflight "
				         "will refuse (pre-verify makes it)");
		}
	}
	engine_shards_close(&ex->run);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Pass 2: the rows, by the live dry-run. */

/* A shard not looked at (a file reshard has yet to make) answers about
 * as fast as its primary, else as the others on average. */
static void
explain_borrow_round_trip(struct explain *ex, struct explain_shard *s,
                          const struct explain_shard *p)
{
	double sum = 0;
	int k = 0;

	if (s->round_trip >= 0)
		return;
	if (p != NULL && p->round_trip >= 0) {
		s->round_trip = p->round_trip;
		return;
	}
	for (int j = 0; j < ex->n_shards; j++)
		if (ex->shards[j].exists && ex->shards[j].round_trip >= 0) {
			sum += ex->shards[j].round_trip;
			k++;
		}
	if (k > 0)
		s->round_trip = sum / k;
}

static int
explain_rows(struct explain *ex, struct rs_err *err)
{
	const struct rs_plan *plan = ex->plan;
	int n = plan->n_shards;

	ex->counts = calloc((size_t)plan->n_tables, sizeof(*ex->counts));
	if (ex->counts == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	for (int t = 0; t < plan->n_tables; t++) {
		struct rs_dryrun_options options = {
			.table = plan->tables[t].name,
			.summary_only = 1,
			.progress = 1,
			.counts = &ex->counts[t],
		};
		const struct rs_stats *st = &ex->counts[t].stats;
		int rc = dryrun_run_live(plan, &options, stdout, stderr, err);

		if (rc != 0)
			return rc;
		ex->total += st->keys;
		ex->moving += st->moved;
		ex->misplaced += ex->counts[t].misplaced;
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];
			int k = s->shard;

			s->after += st->after[k];
			if (s->roles & ROLE_SOURCE) {
				s->rows = (s->rows < 0 ? 0 : s->rows) +
				          (int64_t)st->before[k];
				s->tab_rows[t] += (int64_t)st->before[k];
			}
			for (int j = 0; j < n; j++) {
				s->moving_out +=
					st->flows[(size_t)k * (size_t)n +
				                  (size_t)j];
				if (j != k)
					s->moving_in +=
						st->flows[(size_t)j *
					                          (size_t)n +
					                  (size_t)k];
			}
		}
	}
	/* A replica holds a copy of its primary; a shard without a rate of
	 * its own reads about as fast as the shards feeding it. */
	for (int i = 0; i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];
		const struct explain_shard *p =
			explain_shard_of(ex, s->primary);

		if (p != NULL && s->rows < 0)
			s->rows = p->rows;
		explain_borrow_round_trip(ex, s, p);
		if (s->rate > 0)
			continue;
		if (p != NULL && p->rate > 0) {
			s->rate = p->rate;
			continue;
		}
		double sum = 0;
		int k = 0;

		for (int j = 0; j < ex->n_shards; j++)
			if (ex->shards[j].rate_measured) {
				sum += ex->shards[j].rate;
				k++;
			}
		s->rate = k > 0 ? sum / k : 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 3: the steps. */

static void
explain_on(struct explain_step *st, int i)
{
	for (int k = 0; k < st->n_on; k++)
		if (st->on[k] == i)
			return;
	st->on[st->n_on++] = i;
}

/* Physical tables a shard holds under MAP. */
static int
explain_n_tables(const struct explain *ex, const struct rs_map *map)
{
	return ex->plan->n_tables * engine_tables_per_shard(map);
}

/* The statements of a per-shard step on the touched sources: about
 * PER_TABLE a table and 2 more (the marker, a transaction). */
static void
explain_ddl(struct explain *ex, struct explain_step *st, int per_table)
{
	struct explain_sum sum = {0};
	int n = explain_n_tables(ex, ex->plan->from) * per_table + 2;

	for (int i = 0; i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];

		if (!(s->roles & ROLE_SOURCE) || !s->touched)
			continue;
		explain_on(st, i);
		explain_sum_add(&sum, explain_stmts_s(s, n));
	}
	st->rows = 0;
	st->seconds = explain_sum_all(&sum);
	snprintf(st->basis, sizeof(st->basis),
	         "%d statements a shard, all shards at once, at the measured "
	         "round trip",
	         n);
}

/* Whether the run will verify before the fence: its strategy has
 * pre-verify (every engine logs changes; a SQLite replica is made by
 * pre-verify itself). */
static int
explain_pre_verifies(struct explain *ex)
{
	int has = 0;

	for (int i = 0; i < ex->strategy->n_steps; i++)
		has |= strcmp(ex->strategy->steps[i]->name, "pre-verify") == 0;
	return has;
}

/* Seconds to copy the files of the SQLite replicas pre-verify makes
 * (as reading their primaries' rows at the measured rate), and add them
 * to ST's rows. */
static double
explain_seed_s(struct explain *ex, struct explain_step *st)
{
	struct explain_sum sum = {0};

	for (int i = 0; i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];
		const struct explain_shard *p =
			explain_shard_of(ex, s->primary);

		if (p == NULL || !p->touched || s->engine != RS_ENGINE_SQLITE)
			continue;
		explain_on(st, i);
		explain_sum_add(&sum, explain_read_s(p, (double)p->rows));
	}
	return explain_sum_all(&sum);
}

/* Every row of the touched sources read, and the movers on their new
 * owners. */
static void
explain_full_verify(struct explain *ex, struct explain_step *st,
                    struct explain_sum *sum)
{
	int parallel = ex->plan->options.parallel;

	st->tables = ex->plan->from;
	for (int i = 0; i < ex->n_shards; i++) {
		struct explain_shard *s = &ex->shards[i];

		if (s->moving_in > 0)
			explain_on(st, i);
		if (!(s->roles & ROLE_SOURCE) || !s->touched)
			continue;
		explain_on(st, i);
		st->rows += s->rows;
		explain_sum_add(
			sum, explain_read_s(s, (double)s->rows +
		                                       (double)s->moving_out));
	}
	st->seconds = explain_sum_walk(sum, parallel);
	snprintf(st->basis, sizeof(st->basis),
	         "reads every row of the touched sources and the movers on "
	         "their new owners at the measured read rate, %d streams",
	         parallel);
}

static void
explain_step(struct explain *ex, struct explain_step *st)
{
	const struct rs_plan *plan = ex->plan;
	const char *name = st->def->name;
	int split = ex->strategy->copies_movers;
	int parallel = plan->options.parallel;
	struct explain_sum sum = {0};

	st->rows = 0;
	st->seconds = 0;
	if (strcmp(name, "preflight") == 0) {
		st->tables = plan->from;
		st->rows = (int64_t)ex->total;
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];

			explain_on(st, i);
			if (s->roles & ROLE_SOURCE)
				explain_sum_add(
					&sum,
					explain_read_s(s, (double)s->rows));
		}
		st->seconds = explain_sum_walk(&sum, parallel);
		snprintf(st->basis, sizeof(st->basis),
		         "counts every source row: the rows at the measured "
		         "read rate, %d streams",
		         parallel);
	} else if (strcmp(name, "fence") == 0 || strcmp(name, "unfence") == 0) {
		st->tables = plan->from;
		explain_ddl(ex, st, 2);
	} else if (strcmp(name, "capture") == 0) {
		st->tables = plan->from;
		explain_ddl(ex, st, 3);
		for (int i = 0; i < ex->n_shards; i++)
			if (ex->shards[i].roles & ROLE_TARGET)
				explain_on(st, i);
	} else if (strcmp(name, "copy") == 0) {
		st->tables = plan->from;
		st->rows = (int64_t)ex->moving;
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];

			if (s->roles & ROLE_TARGET)
				explain_on(st, i);
			if (!(s->roles & ROLE_SOURCE))
				continue;
			explain_on(st, i);
			explain_sum_add(
				&sum,
				explain_read_s(
					s,
					(double)s->rows +
						EXPLAIN_WRITE_COST *
							(double)s->moving_out));
		}
		st->seconds = explain_sum_walk(&sum, parallel);
		snprintf(
			st->basis, sizeof(st->basis),
			"reads every source row and writes the movers: rows "
			"+ %.0f x movers at the measured read rate, %d streams",
			EXPLAIN_WRITE_COST, parallel);
	} else if (split && (strcmp(name, "catch-up") == 0 ||
	                     strcmp(name, "final-catch-up") == 0)) {
		st->tables = plan->from;
		st->rows = -1;
		st->seconds = -1;
		for (int i = 0; i < ex->n_shards; i++)
			if (ex->shards[i].roles & (ROLE_SOURCE | ROLE_TARGET))
				explain_on(st, i);
		snprintf(st->basis, sizeof(st->basis),
		         strcmp(name, "catch-up") == 0
		                 ? "the rows the application changes during "
		                   "the copy: not known beforehand"
		                 : "the rows changed since catch-up, under the "
		                   "fence: usually few; not known beforehand");
	} else if (strcmp(name, "catch-up") == 0 ||
	           strcmp(name, "promote") == 0) {
		int promote = strcmp(name, "promote") == 0;

		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];
			const struct explain_shard *p =
				explain_shard_of(ex, s->primary);

			if (p == NULL || !p->touched)
				continue;
			explain_on(st, i);
			if (promote)
				explain_sum_add(
					&sum,
					s->engine == RS_ENGINE_SQLITE ? 0
					: s->engine == RS_ENGINE_POSTGRES
						? EXPLAIN_PG_PROMOTE_S +
							  explain_stmts_s(s, 2)
						: explain_stmts_s(s, 3));
			else if (s->engine == RS_ENGINE_SQLITE) {
				/* The changes logged since pre-verify
				 * copied the file: few, not known. */
				explain_sum_add(&sum, explain_stmts_s(p, 2));
			} else {
				explain_sum_add(&sum, s->catch_up);
			}
		}
		st->seconds = explain_sum_all(&sum);
		snprintf(st->basis, sizeof(st->basis), "%s",
		         promote ? "a few statements at the measured round "
		                   "trip; PostgreSQL's promotion assumed 0.25 s"
		                 : "server replicas: the time measured now to "
		                   "reach the primary's position; SQLite: "
		                   "replaying the changes logged since "
		                   "pre-verify copied the file (few; the time "
		                   "shown is for few)");
	} else if (strcmp(name, "pre-verify") == 0) {
		double seed = explain_seed_s(ex, st);

		explain_full_verify(ex, st, &sum);
		if (seed > 0) {
			st->seconds += seed;
			snprintf(
				st->basis + strlen(st->basis),
				sizeof(st->basis) - strlen(st->basis),
				"; first the SQLite replicas' files copied, as "
				"reading their rows");
		}
	} else if ((strcmp(name, "verify") == 0 && !explain_pre_verifies(ex))) {
		explain_full_verify(ex, st, &sum);
	} else if (strcmp(name, "verify") == 0) {
		/* After a pre-verify: the change logs, and the rows written
		 * since pre-verify began, which no one knows beforehand. */
		st->tables = plan->from;
		explain_ddl(ex, st, 2);
		st->rows = -1;
		snprintf(st->basis, sizeof(st->basis),
		         "reads the change logs and compares again the rows "
		         "written since pre-verify began (not known "
		         "beforehand: the time shown is for few)");
	} else if (strcmp(name, "publish") == 0) {
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];

			if (!(s->roles & (ROLE_TO | ROLE_REPLICA)) ||
			    !s->touched)
				continue;
			explain_on(st, i);
			explain_sum_add(
				&sum,
				explain_stmts_s(
					s, explain_n_tables(ex, plan->to) + 2));
		}
		st->seconds = explain_sum_all(&sum);
		snprintf(st->basis, sizeof(st->basis),
		         "writes %s%s%s; a statement a table (the delete logs "
		         "emptied) at "
		         "the measured round trip%s",
		         plan->publish_file,
		         plan->publish_command != NULL ? " and runs " : "",
		         plan->publish_command != NULL ? plan->publish_command
		                                       : "",
		         plan->publish_command != NULL
		                 ? " (the command's own time is not counted)"
		                 : "");
	} else if (strcmp(name, "purge") == 0) {
		st->tables = plan->to;
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];
			const struct explain_shard *p =
				explain_shard_of(ex, s->primary);
			double scanned, deleted;

			if (!(s->roles & (ROLE_TO | ROLE_REPLICA)) ||
			    !s->touched)
				continue;
			explain_on(st, i);
			if (p != NULL) { /* a promoted replica: a full copy */
				scanned = (double)p->rows;
				deleted =
					(double)p->rows - (double)s->moving_in;
			} else if (s->roles & ROLE_SOURCE) {
				scanned = (double)s->rows;
				deleted = (double)s->moving_out;
			} else { /* a target holds its movers only */
				scanned = (double)s->moving_in;
				deleted = 0;
			}
			st->rows += (int64_t)deleted;
			explain_sum_add(
				&sum, explain_read_s(
					      s, scanned + EXPLAIN_DELETE_COST *
								   deleted));
		}
		st->seconds = explain_sum_walk(&sum, parallel);
		snprintf(
			st->basis, sizeof(st->basis),
			"reads every row of each touched shard and deletes the "
			"rows it gave away: rows + %.0f x deletes at the "
			"measured read rate, %d streams",
			EXPLAIN_DELETE_COST, parallel);
	} else if (strcmp(name, "final-check") == 0) {
		st->tables = plan->to;
		st->rows = (int64_t)ex->total;
		for (int i = 0; i < ex->n_shards; i++) {
			struct explain_shard *s = &ex->shards[i];

			if (!(s->roles & ROLE_TO))
				continue;
			explain_on(st, i);
			explain_sum_add(&sum,
			                explain_read_s(s, (double)s->after));
		}
		st->seconds = explain_sum_walk(&sum, parallel);
		snprintf(st->basis, sizeof(st->basis),
		         "counts every row under the new map at the measured "
		         "read rate, %d streams",
		         parallel);
	} else {
		st->rows = -1;
		st->seconds = -1;
		snprintf(st->basis, sizeof(st->basis), "not estimated");
	}
}

/* Work out every step, and the sums. */
static int
explain_steps(struct explain *ex, struct rs_err *err)
{
	int n = ex->strategy->n_steps;

	ex->fence_at = ex->unfence_at = -1;
	ex->irreversible_at = ex->no_return_at = ex->undo_at = -1;
	for (int i = 0; i < n; i++) {
		struct explain_step *st = &ex->steps[i];

		st->on = calloc((size_t)ex->n_shards + 1, sizeof(*st->on));
		if (st->on == NULL)
			return rs_err_set(err, RS_ENOMEM, "out of memory");
		if (strcmp(st->def->name, "fence") == 0)
			ex->fence_at = i;
		if (strcmp(st->def->name, "unfence") == 0)
			ex->unfence_at = i;
		if (st->def->irreversible && ex->irreversible_at < 0)
			ex->irreversible_at = i;
		if (st->def->no_return && ex->no_return_at < 0)
			ex->no_return_at = i;
		if ((st->def->irreversible || st->def->no_return) &&
		    ex->undo_at < 0)
			ex->undo_at = i;
		explain_step(ex, st);
	}
	ex->total_known = ex->fenced_known = ex->cutover_known = 1;
	for (int i = 0; i < n; i++) {
		struct explain_step *st = &ex->steps[i];
		double s = st->rec.state == RS_STEP_DONE ? 0 : st->seconds;
		int cutover;

		st->fenced = ex->fence_at >= 0 && i >= ex->fence_at &&
		             i <= ex->unfence_at;
		/* What fence_timeout_seconds bounds: from the fence until
		 * the first step that cannot be undone begins. */
		cutover = st->fenced && (ex->undo_at < 0 || i < ex->undo_at);
		if (s < 0) {
			ex->total_known = 0;
			ex->fenced_known &= !st->fenced;
			ex->cutover_known &= !cutover;
			continue;
		}
		ex->total_s += s;
		if (st->fenced)
			ex->fenced_s += s;
		if (cutover)
			ex->cutover_s += s;
	}
	return 0;
}

/* The names of the steps FROM … TO that are not estimated, as
 * "catch-up, final-catch-up" into BUF. */
static const char *
explain_unknown(const struct explain *ex, int from, int to, char *buf,
                size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = from; i <= to && i < ex->strategy->n_steps; i++)
		if (ex->steps[i].seconds < 0 &&
		    ex->steps[i].rec.state != RS_STEP_DONE && k < size)
			k += (size_t)snprintf(buf + k, size - k, "%s%s",
			                      k > 0 ? ", " : "",
			                      ex->steps[i].def->name);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Output. */

static const char *const explain_state_words[] = {
	"pending", "running", "done", "failed", "stopped",
};

static const char *
explain_role_text(const struct explain *ex, const struct explain_shard *s,
                  char *buf, size_t size)
{
	if (s->primary >= 0)
		snprintf(buf, size, "replica of %s",
		         ex->plan->shards[s->primary].name);
	else if (s->roles & ROLE_TARGET)
		snprintf(buf, size, "new in to");
	else if (!s->touched)
		snprintf(buf, size, "source, left alone");
	else
		snprintf(buf, size, "source");
	return buf;
}

static void
explain_shard_text(FILE *out, const struct explain *ex,
                   const struct explain_shard *s)
{
	const struct rs_plan *plan = ex->plan;
	char a[32], b[32], role[RS_PLAN_MAX_NAME + 16];

	fprintf(out, "  %-10s %-10s %-20s", plan->shards[s->shard].name,
	        url_engine_name(s->engine),
	        explain_role_text(ex, s, role, sizeof(role)));
	if (!s->exists) {
		fprintf(out, " does not exist yet: made by the run "
		             "(pre-verify copies its primary's file)\n");
		return;
	}
	if (s->rows >= 0)
		fprintf(out, " %s rows",
		        text_thousands((uint64_t)s->rows, a, sizeof(a)));
	if (s->moving_out > 0)
		fprintf(out, ", gives %s",
		        text_thousands(s->moving_out, a, sizeof(a)));
	if (s->moving_in > 0)
		fprintf(out, ", takes %s",
		        text_thousands(s->moving_in, b, sizeof(b)));
	fputc('\n', out);
	if (plan->n_tables > 1 && (s->roles & (ROLE_SOURCE | ROLE_TARGET))) {
		fprintf(out, "%45s", "");
		for (int t = 0; t < plan->n_tables; t++)
			fprintf(out, "%s%s %s%s", t > 0 ? ", " : "",
			        plan->tables[t].name,
			        text_thousands((uint64_t)s->tab_rows[t], a,
			                       sizeof(a)),
			        s->tab_missing[t] ? " (missing)" : "");
		fputc('\n', out);
	}
	if (s->rate > 0 || s->round_trip >= 0) {
		fprintf(out, "%45s", "");
		if (s->rate > 0)
			fprintf(out, "reads %s rows/s (%s)",
			        text_thousands((uint64_t)s->rate, a, sizeof(a)),
			        s->rate_measured ? "measured"
			                         : "assumed as its sources'");
		if (s->round_trip >= 0)
			fprintf(out, "%sround trip %.2f ms",
			        s->rate > 0 ? ", " : "", s->round_trip * 1000);
		if (s->catch_up >= 0)
			fprintf(out,
			        ", reached its primary's position in %.1f ms",
			        s->catch_up * 1000);
		fputc('\n', out);
	}
	if ((s->roles & ROLE_SOURCE) && s->touched)
		fprintf(out, "%45sfence: %s\n", "",
		        s->fence_rows ? "only writes to the rows that move"
		                      : "whole tables");
	if (s->fenced_now)
		fprintf(out, "%45sFENCED NOW\n", "");
	if (s->note[0])
		fprintf(out, "%45s%s\n", "", s->note);
}

static void
explain_step_text(FILE *out, const struct explain *ex, int i)
{
	const struct explain_step *st = &ex->steps[i];
	char secs[32], rows[32], tables[256];

	fprintf(out, "  %2d. %-15s %s", i + 1, st->def->name, st->def->summary);
	if (st->rec.state != RS_STEP_PENDING)
		fprintf(out, " [%s already]",
		        explain_state_words[st->rec.state]);
	fputc('\n', out);
	fprintf(out, "      on ");
	for (int k = 0; k < st->n_on; k++)
		fprintf(out, "%s%s", k > 0 ? ", " : "",
		        explain_name(ex, st->on[k]));
	if (st->n_on == 0)
		fprintf(out, "no shard");
	if (st->tables != NULL)
		fprintf(out, " (%s)",
		        explain_tables(ex->plan, st->tables, tables,
		                       sizeof(tables)));
	fputc('\n', out);
	fprintf(out, "      rows: %s; expected: %s%s%s\n",
	        st->rows < 0 ? "not known beforehand"
	                     : text_thousands((uint64_t)st->rows, rows,
	                                      sizeof(rows)),
	        explain_seconds(st->seconds, secs, sizeof(secs)),
	        st->fenced ? "; writes fenced" : "",
	        st->def->irreversible ? "; CANNOT BE UNDONE"
	        : st->def->no_return  ? "; from here on abort refuses"
	                              : "");
	fprintf(out, "      (%s)\n", st->basis);
}

/* The undo: lines: how far abort undoes the run, and the steps whose
 * effect stays. */
static void
explain_undo_text(FILE *out, const struct explain *ex)
{
	const char *sep = "";

	if (ex->no_return_at >= 0)
		fprintf(out,
		        "undo:    `reshard abort %s` undoes the run until step "
		        "%s begins; from %s on\n         the run cannot be "
		        "undone and only goes forward\n",
		        ex->plan->path, ex->steps[ex->no_return_at].def->name,
		        ex->steps[ex->no_return_at].def->name);
	fprintf(out, "         steps whose effect stays (asked for on a "
	             "terminal, or --yes): ");
	for (int i = 0; i < ex->strategy->n_steps; i++)
		if (ex->steps[i].def->irreversible) {
			fprintf(out, "%s%s", sep, ex->steps[i].def->name);
			sep = ", ";
		}
	fputc('\n', out);
}

static void
explain_print_text(FILE *out, const struct explain *ex)
{
	const struct rs_plan *plan = ex->plan;
	int n = ex->strategy->n_steps;
	char a[32], b[32], secs[32], names[256];

	fprintf(out, "plan %s (%s): what `reshard run %s` would do\n",
	        plan->name, plan_strategy_name(plan->strategy), plan->path);
	if (ex->held)
		fprintf(out, "journal: %s, running now: %s\n", plan->journal,
		        ex->holder);
	else if (ex->journal_exists)
		fprintf(out,
		        "journal: %s: a run began; the steps done already "
		        "are marked and not estimated\n",
		        plan->journal);
	else
		fprintf(out,
		        "journal: %s does not exist: the run starts "
		        "with preflight\n",
		        plan->journal);
	fprintf(out,
	        "rows:    %s on the sources, %s of them move (exact: every "
	        "shard key read, as dry-run reads them)\n",
	        text_thousands(ex->total, a, sizeof(a)),
	        text_thousands(ex->moving, b, sizeof(b)));
	if (ex->misplaced > 0)
		fprintf(out,
		        "         %s rows are on a shard that does not own "
		        "them under from: preflight will refuse\n",
		        text_thousands(ex->misplaced, a, sizeof(a)));
	fprintf(out, "shards:\n");
	for (int i = 0; i < ex->n_shards; i++)
		explain_shard_text(out, ex, &ex->shards[i]);
	fprintf(out, "steps (expected times are estimates from the rates "
	             "measured just now):\n");
	for (int i = 0; i < n; i++)
		explain_step_text(out, ex, i);
	explain_undo_text(out, ex);
	if (ex->fence_at >= 0) {
		fprintf(out,
		        "fence:   writes fenced for about %s (steps %s to %s)",
		        explain_seconds(ex->fenced_s, secs, sizeof(secs)),
		        ex->steps[ex->fence_at].def->name,
		        ex->unfence_at >= 0
		                ? ex->steps[ex->unfence_at].def->name
		                : "the end");
		if (!ex->fenced_known)
			fprintf(out, " plus %s, not known beforehand",
			        explain_unknown(ex, ex->fence_at,
			                        ex->unfence_at, names,
			                        sizeof(names)));
		fputc('\n', out);
		if (ex->undo_at >= 0)
			fprintf(out,
			        "         from fence until %s begins: about "
			        "%s%s; "
			        "options.fence_timeout_seconds is %d s%s\n",
			        ex->steps[ex->undo_at].def->name,
			        explain_seconds(ex->cutover_s, secs,
			                        sizeof(secs)),
			        ex->cutover_known ? "" : " and more",
			        plan->options.fence_timeout_seconds,
			        ex->cutover_s >= plan->options
			                                 .fence_timeout_seconds
			                ? ": the run would give the fence back "
			                  "and try again; raise it"
			                : "");
	}
	fprintf(out, "total:   about %s%s%s\n",
	        explain_seconds(ex->total_s, secs, sizeof(secs)),
	        ex->total_known ? "" : " plus ",
	        ex->total_known ? ""
	                        : explain_unknown(ex, 0, ex->strategy->n_steps,
	                                          names, sizeof(names)));
	fprintf(out,
	        "model:   a row written costs %.0f reads, a row deleted %.0f; "
	        "see docs/explain.md\n",
	        EXPLAIN_WRITE_COST, EXPLAIN_DELETE_COST);
}

static json_t *
explain_json_seconds(double s)
{
	return s < 0 ? json_null()
	             : json_real((double)(int64_t)(s * 1000) / 1000.0);
}

static json_t *
explain_shard_json(const struct explain *ex, const struct explain_shard *s)
{
	const struct rs_plan *plan = ex->plan;
	json_t *roles = json_array(), *tables = json_array();
	int source = (s->roles & ROLE_SOURCE) != 0;

	if (roles == NULL || tables == NULL) {
		json_decref(roles);
		json_decref(tables);
		return NULL;
	}
	if (source)
		json_array_append_new(roles, json_string("source"));
	if (s->roles & ROLE_TO)
		json_array_append_new(roles, json_string("to"));
	if (s->roles & ROLE_TARGET)
		json_array_append_new(roles, json_string("target"));
	if (s->roles & ROLE_REPLICA)
		json_array_append_new(roles, json_string("replica"));
	for (int t = 0; t < plan->n_tables; t++)
		if (source || (s->roles & ROLE_TARGET))
			json_array_append_new(
				tables,
				json_pack("{s:s, s:I, s:b}", "table",
			                  plan->tables[t].name, "rows",
			                  (json_int_t)s->tab_rows[t], "missing",
			                  s->tab_missing[t] > 0));
	return json_pack(
		"{s:s, s:s, s:o, s:b, s:b, s:o, s:o, s:I, s:I, s:I, s:o, s:b, "
		"s:o, s:o, s:b, s:o, s:o, s:o}",
		"name", plan->shards[s->shard].name, "engine",
		url_engine_name(s->engine), "roles", roles, "exists", s->exists,
		"touched", s->touched, "replica_of",
		s->primary >= 0 ? json_string(plan->shards[s->primary].name)
				: json_null(),
		"rows", s->rows >= 0 ? json_integer(s->rows) : json_null(),
		"moving_out", (json_int_t)s->moving_out, "moving_in",
		(json_int_t)s->moving_in, "rows_after", (json_int_t)s->after,
		"read_rows_per_second",
		s->rate > 0 ? json_integer((json_int_t)s->rate) : json_null(),
		"read_rate_measured", s->rate_measured, "round_trip_ms",
		s->round_trip >= 0
			? json_real((double)(int64_t)(s->round_trip * 1e6) /
	                            1e3)
			: json_null(),
		"fence",
		source && s->touched
			? json_string(s->fence_rows ? "rows" : "tables")
			: json_null(),
		"fenced_now", s->fenced_now, "catch_up_seconds",
		explain_json_seconds(s->catch_up), "note",
		s->note[0] ? json_string(s->note) : json_null(), "tables",
		tables);
}

static json_t *
explain_step_json(const struct explain *ex, int i)
{
	const struct explain_step *st = &ex->steps[i];
	json_t *on = json_array(), *tables = json_array();
	char physical[RS_PLAN_MAX_NAME + 1];

	if (on == NULL || tables == NULL) {
		json_decref(on);
		json_decref(tables);
		return NULL;
	}
	for (int k = 0; k < st->n_on; k++)
		json_array_append_new(on,
		                      json_string(explain_name(ex, st->on[k])));
	for (int t = 0; st->tables != NULL && t < ex->plan->n_tables; t++)
		for (int x = 0; x < engine_tables_per_shard(st->tables); x++) {
			engine_physical(st->tables, ex->plan->tables[t].name, x,
			                physical, sizeof(physical));
			json_array_append_new(tables, json_string(physical));
		}
	return json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:o, s:b, s:b, s:b, s:b, s:o, s:s}",
		"name", st->def->name, "summary", st->def->summary, "state",
		explain_state_words[st->rec.state], "shards", on, "tables",
		tables, "rows",
		st->rows >= 0 ? json_integer(st->rows) : json_null(), "fenced",
		st->fenced, "irreversible", st->def->irreversible, "no_return",
		st->def->no_return, "abort_possible",
		ex->no_return_at < 0 || i < ex->no_return_at, "seconds",
		explain_json_seconds(st->seconds), "basis", st->basis);
}

static int
explain_print_json(FILE *out, const struct explain *ex, struct rs_err *err)
{
	const struct rs_plan *plan = ex->plan;
	json_t *root = json_object(), *shards = json_array(),
	       *steps = json_array();
	int failed = root == NULL || shards == NULL || steps == NULL, rc = 0;

#define EXPLAIN_SET(key, value)                                                \
	(failed |= json_object_set_new(root, key, value) != 0)
	EXPLAIN_SET("plan", json_string(plan->name));
	EXPLAIN_SET("strategy",
	            json_string(plan_strategy_name(plan->strategy)));
	EXPLAIN_SET("journal",
	            json_pack("{s:s, s:b, s:b}", "path", plan->journal,
	                      "exists", ex->journal_exists, "running",
	                      ex->held));
	EXPLAIN_SET("rows",
	            json_pack("{s:I, s:I, s:I, s:s}", "total",
	                      (json_int_t)ex->total, "moving",
	                      (json_int_t)ex->moving, "misplaced",
	                      (json_int_t)ex->misplaced, "counted", "exact"));
	for (int i = 0; !failed && i < ex->n_shards; i++)
		failed |= json_array_append_new(
				  shards,
				  explain_shard_json(ex, &ex->shards[i])) != 0;
	EXPLAIN_SET("shards", shards);
	for (int i = 0; !failed && i < ex->strategy->n_steps; i++)
		failed |= json_array_append_new(steps,
		                                explain_step_json(ex, i)) != 0;
	EXPLAIN_SET("steps", steps);
	EXPLAIN_SET("irreversible_from",
	            ex->undo_at >= 0
	                    ? json_string(ex->steps[ex->undo_at].def->name)
	                    : json_null());
	EXPLAIN_SET("abort_until",
	            ex->no_return_at >= 0
	                    ? json_string(ex->steps[ex->no_return_at].def->name)
	                    : json_null());
	EXPLAIN_SET("fenced_seconds", explain_json_seconds(ex->fenced_s));
	EXPLAIN_SET("fenced_complete", json_boolean(ex->fenced_known));
	EXPLAIN_SET("cutover_seconds", explain_json_seconds(ex->cutover_s));
	EXPLAIN_SET("cutover_complete", json_boolean(ex->cutover_known));
	EXPLAIN_SET("fence_timeout_seconds",
	            json_integer(plan->options.fence_timeout_seconds));
	EXPLAIN_SET("total_seconds", explain_json_seconds(ex->total_s));
	EXPLAIN_SET("total_complete", json_boolean(ex->total_known));
	EXPLAIN_SET("model", json_pack("{s:f, s:f, s:i}", "write_cost",
	                               EXPLAIN_WRITE_COST, "delete_cost",
	                               EXPLAIN_DELETE_COST, "parallel",
	                               plan->options.parallel));
#undef EXPLAIN_SET
	if (failed || json_dumpf(root, out, JSON_PRESERVE_ORDER) != 0)
		rc = rs_err_set(
			err, failed ? RS_ENOMEM : RS_EIO,
			failed ? "out of memory building the explanation"
			       : "cannot write the explanation");
	else
		fputc('\n', out);
	json_decref(root);
	return rc;
}

/* ------------------------------------------------------------------ */

static void
explain_free(struct explain *ex)
{
	for (int i = 0; ex->shards != NULL && i < ex->n_shards; i++) {
		free(ex->shards[i].tab_rows);
		free(ex->shards[i].tab_missing);
	}
	for (int i = 0; ex->steps != NULL && i < ex->strategy->n_steps; i++)
		free(ex->steps[i].on);
	for (int t = 0; ex->counts != NULL && t < ex->plan->n_tables; t++)
		stats_clear(&ex->counts[t].stats);
	free(ex->counts);
	free(ex->steps);
	free(ex->shards);
	free(ex->index);
	journal_close(ex->journal, NULL);
}

int
strategy_explain(const struct rs_plan *plan,
                 const struct rs_strategy_def *strategy, int json, FILE *out,
                 struct rs_err *err)
{
	struct explain ex = {.plan = plan, .strategy = strategy};
	struct rs_err loop_err = {0};
	int rc;

	if (strategy == NULL)
		return rs_err_set(err, RS_EUSAGE,
		                  "%s: strategy \"%s\" cannot be run by this "
		                  "version, so there is nothing to explain",
		                  plan->path,
		                  plan_strategy_name(plan->strategy));
	ex.run.plan = plan;
	ex.run.strategy = strategy;
	ex.run.shards = calloc((size_t)plan->n_shards, sizeof(*ex.run.shards));
	ex.steps = calloc((size_t)strategy->n_steps, sizeof(*ex.steps));
	if (ex.run.shards == NULL || ex.steps == NULL) {
		free(ex.run.shards);
		free(ex.steps);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	for (int i = 0; i < strategy->n_steps; i++) {
		ex.steps[i].def = strategy->steps[i];
		snprintf(ex.steps[i].rec.name, sizeof(ex.steps[i].rec.name),
		         "%s", strategy->steps[i]->name);
	}
	rc = explain_journal(&ex, err);
	if (rc == 0)
		rc = explain_list_shards(&ex, err);
	if (rc == 0) {
		rc = await_loop_init(&ex.run.loop, err);
		if (rc == 0) {
			rc = explain_look(&ex, err);
			engine_tables_release(&ex.run);
			if (await_loop_close(&ex.run.loop, &loop_err) != 0 &&
			    rc == 0) {
				*err = loop_err;
				rc = loop_err.code;
			}
		}
	}
	if (rc == 0)
		rc = explain_rows(&ex, err);
	if (rc == 0)
		rc = explain_steps(&ex, err);
	if (rc == 0 && json)
		rc = explain_print_json(out, &ex, err);
	else if (rc == 0)
		explain_print_text(out, &ex);
	free(ex.run.shards);
	explain_free(&ex);
	return rc;
}
