/*
 * The expansion plan (DESIGN §4): a libconfig file loaded into one immutable
 * struct rs_plan, validated in full before anything else runs.
 *
 * plan_load reports every mistake at once as `FILE:LINE: what is wrong, and
 * what would be right`, so that an operator fixes a plan in one pass.  It
 * reads the plan file and nothing else: no shard is contacted.
 */
#ifndef RS_PLAN_H
#define RS_PLAN_H

#include <stdio.h>

#include "common/err.h"
#include "shardmap/hash.h"
#include "shardmap/map.h"

/*
 * The largest plan reshard takes.  plan_load refuses a plan beyond any of
 * these with a message naming the limit, so that the code below may size
 * its arrays by them and every name fits its buffer.
 *
 * RS_PLAN_MAX_SHARDS: shards in `shards`; arrays indexed by shard are this
 * long.  RS_PLAN_MAX_NAME: bytes in a table name, a shard key column and
 * every physical table name a map makes (PostgreSQL's identifier limit:
 * it silently cuts longer names, so two slot tables could become one).
 * RS_PLAN_MAX_RING_POINTS: nodes × vnodes of one ring, 256 vnodes for each
 * of 1024 shards; every command sorts the rings when it loads the plan.
 * RS_PLAN_MAX_RANGES: ranges of one ranges map.  RS_PLAN_MAX_SLOT_TABLES:
 * databases × tables_per_db of one slots map.  RS_PLAN_MAX_PHYSICAL_TABLES:
 * tables × the physical tables each has under one map (one a node, or
 * databases × tables_per_db for slots); the live dry-run reads each.
 * RS_PLAN_MAX_OVERRIDES: keys one map pins to a shard; RS_PLAN_MAX_KEY:
 * bytes of one such key.
 */
#define RS_PLAN_MAX_SHARDS          1024
#define RS_PLAN_MAX_NAME            63
#define RS_PLAN_MAX_RING_POINTS     262144
#define RS_PLAN_MAX_RANGES          65536
#define RS_PLAN_MAX_SLOT_TABLES     65536
#define RS_PLAN_MAX_PHYSICAL_TABLES 1048576
#define RS_PLAN_MAX_OVERRIDES       1000000
#define RS_PLAN_MAX_KEY             1024

enum rs_strategy {
	RS_STRATEGY_DOUBLING, /* promote replicas, then purge both halves */
	RS_STRATEGY_SPLIT,    /* copy the movers to their new owners */
};

struct rs_plan_table {
	char *name; /* logical table name */
	char *key;  /* shard key column */
	int line;   /* where it is declared, for later messages */
};

struct rs_plan_shard {
	char *name;
	char *url;          /* as written; may hold a throwaway password */
	char *password_env; /* NULL or the variable holding the password */
	int replica;        /* index of the declared replica shard, or -1 */
	int line;
};

struct rs_plan_options {
	int batch_rows;              /* rows per chunk read/write (5000) */
	int parallel;                /* concurrent chunk streams (4) */
	long max_rows_per_second;    /* 0 = unthrottled */
	int max_replica_lag_seconds; /* 5 */
	int fence_timeout_seconds;   /* 30 */
	int lock_timeout_ms;         /* 2000 */
	/* 60: the bound of one operation on a shard, in seconds */
	int operation_timeout_seconds;
	/* 0: a split's target must hold every table already; 1: a missing
	 * one is made from a same-engine source's definition */
	int create_tables;
	/* Purge leaves the ownership guard on the old owners (for routers
	 * slow to learn the new routing); the operator takes it off. */
	int keep_guard;
	/* A split goes ahead over source tables whose foreign keys the
	 * engine cascades without triggers (MariaDB), with a warning: the
	 * operator keeps the referenced rows still until purge ends.  0:
	 * preflight refuses such tables. */
	int allow_cascades;
};

struct rs_plan {
	char *path;    /* the plan file as given */
	char *dir;     /* its directory: relative paths are taken from here */
	int version;   /* 1 */
	char *name;    /* run name: in fence messages and the journal */
	char *journal; /* journal path, resolved against dir */
	enum rs_hash hash;
	struct rs_plan_table *tables;
	int n_tables;
	struct rs_plan_shard *shards;
	int n_shards;
	struct rs_map_def from_def;
	struct rs_map_def to_def;
	struct rs_map *from; /* compiled from from_def */
	struct rs_map *to;   /* compiled from to_def */
	enum rs_strategy strategy;
	struct rs_plan_options options;
	char *publish_file;    /* resolved against dir */
	char *publish_command; /* NULL when no hook */
	char **shard_names;    /* shards[i].name, for the map functions */
};

/* One mistake found in a plan. */
struct rs_plan_diag {
	int line;      /* 1-based line in the plan file, 0 when unknown */
	char *message; /* "what is wrong; what would be right" */
	char *file;    /* NULL: the plan; else the file LINE is in (a map's
	                  overrides file, as the plan names it) */
};

struct rs_plan_diags {
	/* sorted once plan_load returns: the plan's by line, then each
	 * other file's by line */
	struct rs_plan_diag *items;
	int n;
	int cap;
};

/*
 * Load and validate the plan at PATH.  On success returns 0 and sets *PLAN
 * (free with plan_free).  On an invalid plan returns RS_EPLAN, leaves *PLAN
 * NULL and fills DIAGS with every mistake (free with plan_diags_clear);
 * ERR then says how many.  Other failures (unreadable file, no memory)
 * return their code with ERR filled.
 */
int plan_load(const char *path, struct rs_plan **plan,
              struct rs_plan_diags *diags, struct rs_err *err);
void plan_free(struct rs_plan *plan);

/* Print each diagnostic as `PATH:LINE: message` to OUT (PATH the plan's,
 * or the file the mistake is in). */
void plan_diags_print(const struct rs_plan_diags *diags, const char *path,
                      FILE *out);
void plan_diags_clear(struct rs_plan_diags *diags);

/* Index of the shard or table called NAME, or -1. */
int plan_shard_index(const struct rs_plan *plan, const char *name);
int plan_table_index(const struct rs_plan *plan, const char *name);

/* Index of the shard whose declared replica SHARD is, or -1. */
int plan_primary_of(const struct rs_plan *plan, int shard);

const char *plan_strategy_name(enum rs_strategy strategy);

#endif
