/*
 * Shard markers: the record of a run that every shard it touches carries
 * (backend.h, struct rs_marker), so that the local journal is not the only
 * one.  With the routing file's epoch and run, they let `run` refuse to
 * start over a run that is in progress or published under a journal that
 * is lost or new, and let `abort` release a fence when the journal cannot
 * be read.
 *
 * A marker moves through "fenced" (written with the fence), "published"
 * (before the routing file is written), "purged" (after purge) and "done"
 * (after final-check), or ends "aborted".  A run's id is made once, when
 * its journal is new, and kept in the journal (fact run_id).
 *
 * Every function returns 0 or a negative RS_E… code with ERR filled.
 */
#ifndef RS_MARKER_H
#define RS_MARKER_H

#include "engine/engine.h"

/* Whether a marker in STATE belongs to a run that has ended (done or
 * aborted): such a marker does not stand in anyone's way. */
int marker_ended(const char *state);

/* Fill M with RUN's identity, STATE and EPOCH. */
void marker_fill(const struct rs_run *run, const char *state, int64_t epoch,
                 struct rs_marker *m);

/* Set RUN->run_id from the journal, making and recording a new one when
 * the journal has none (a new run: *CREATED, when not NULL, says so), and
 * RUN->replaced_run and replaced_epoch (marker_guard). */
int marker_run_id(struct rs_run *run, int *created, struct rs_err *err);

/* Read the markers of shard SHARD: *MARKERS malloc'd (free it), *N its
 * length; none for a shard that does not exist yet (a SQLite replica file
 * reshard has not made) or whose engine keeps no markers. */
int marker_read(struct rs_run *run, int shard, struct rs_marker **markers,
                int *n, struct rs_err *err);

/* What to do about marker M, of a run that has not ended, found on a
 * shard of PLAN by a run of another id: the advice that ends the refusal
 * marker_check_shard gives (a static string). */
const char *marker_advice(const struct rs_plan *plan,
                          const struct rs_marker *m);

/* Refuse (RS_EUSAGE, saying what was found and what is safe) when shard
 * SHARD carries the marker of another run that has not ended. */
int marker_check_shard(struct rs_run *run, int shard, struct rs_err *err);

/* Whether marker M says its run has begun publish (published, purged,
 * done): its routing may be live. */
int marker_past_publish(const struct rs_marker *m);

/* Before a run does anything: marker_check_shard on every shard of the
 * plan; refuse when the routing file was published by another run that no
 * shard says is done; and refuse when a shard says this run is past
 * publish while the journal (PUBLISHED 0) has not begun it.
 *
 * A shard keeps one marker a plan name, so a later run of the routed
 * run's plan replaces the done markers that let it pass here.  The guard
 * records that run and its epoch in the journal (fact replaced_run), so
 * that an abort can give them back (marker_fill_aborted): without them,
 * the next run of the name would find the routing file's run done on no
 * shard, and be refused as one whose journal was lost. */
int marker_guard(struct rs_run *run, int published, struct rs_err *err);

/* marker_guard's findings apart from other runs' markers, gathered one
 * marker at a time so that status can say what `run` would refuse
 * without writing anything: start with the journal's RUN_ID and whether
 * it has begun publish (PUBLISHED), note every marker read (of every run)
 * on every shard, then ask for the refusal: 0, or RS_EUSAGE with the
 * message `run` gives (a shard past publish while the journal is not;
 * the routing file published by another run no shard says is done). */
struct marker_verdict {
	const char *run_id; /* borrowed */
	int published;
	char routed_run[40], routed_plan[128]; /* the routing file's, "" */
	long long epoch;                       /* … and its epoch */
	int routed_done;  /* a marker proves the routed run done */
	int replaced;     /* the routed run's done marker, of this plan */
	int behind_shard; /* first shard past publish ahead of the journal,
	                     -1 */
	struct rs_marker behind;
};
void marker_verdict_start(const struct rs_plan *plan, const char *run_id,
                          int published, struct marker_verdict *v);
void marker_verdict_note(const struct rs_plan *plan, struct marker_verdict *v,
                         int shard, const struct rs_marker *m);
int marker_verdict_refusal(const struct rs_plan *plan,
                           const struct marker_verdict *v, struct rs_err *err);

/* Without a journal: RUN, a run of this plan that its markers say has not
 * ended nor published, passed marker_guard when it began, so the run the
 * routing file names, when one of this plan, was done then: set
 * RUN->replaced_run and replaced_epoch from the routing file. */
void marker_replaced_by_routing(struct rs_run *run);

/* Fill M with what an abort leaves on a shard: the done marker of the run
 * RUN replaced (RUN->replaced_run), or RUN's own "aborted" one. */
void marker_fill_aborted(const struct rs_run *run, struct rs_marker *m);

/* Write RUN's marker with STATE and EPOCH on every shard of the plan that
 * exists and keeps markers. */
int marker_set_all(struct rs_run *run, const char *state, int64_t epoch,
                   struct rs_err *err);

/* The same with what an abort leaves (marker_fill_aborted). */
int marker_set_aborted(struct rs_run *run, struct rs_err *err);

#endif
