/*
 * The differences verify found (journal.h, struct rs_difference): one row
 * each in the journal's differences table, so that status and `verify
 * --format json` list them after the process that found them is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "journal/journal.h"
#include "journal/journal_impl.h"

/* The differences table came with schema version 3. */
static int
journal_has_differences(const struct rs_journal *journal)
{
	return journal->version >= 3;
}

int
journal_difference_add(struct rs_journal *journal,
                       const struct rs_difference *d, struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc = journal_prepare_write(
		journal,
		"INSERT INTO differences (pass, shard, table_name, chunk, pk, "
		"shard_key, owner, kind, columns, found_at) VALUES (?1, ?2, "
		"?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO UPDATE SET "
		"chunk = excluded.chunk, shard_key = excluded.shard_key, "
		"kind = excluded.kind, columns = excluded.columns, "
		"found_at = excluded.found_at",
		&stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, d->pass, SQLITE_OK);
	rc = journal_bind_text(stmt, 2, d->shard, rc);
	rc = journal_bind_text(stmt, 3, d->table, rc);
	rc = journal_bind_int64(stmt, 4, d->chunk, rc);
	rc = journal_bind_text(stmt, 5, d->pk, rc);
	rc = journal_bind_text(stmt, 6, d->shard_key, rc);
	rc = journal_bind_text(stmt, 7, d->owner, rc);
	rc = journal_bind_text(stmt, 8, d->kind, rc);
	rc = journal_bind_text(stmt, 9, d->columns, rc);
	rc = journal_bind_int64(stmt, 10, journal_now_ms(), rc);
	return journal_finish_lazy(journal, 1, stmt, rc, "record a difference",
	                           d->table, err);
}

int
journal_differences_forget(struct rs_journal *journal, const char *pass,
                           const char *shard, const char *table, int64_t chunk,
                           struct rs_err *err)
{
	sqlite3_stmt *stmt;
	int rc =
		shard == NULL
			? journal_prepare_write(
				  journal,
				  "DELETE FROM differences WHERE pass = ?1",
				  &stmt, err)
			: journal_prepare_kept(
				  journal, JOURNAL_KEPT_FORGET_CHUNK,
				  "DELETE FROM differences WHERE pass = ?1 AND "
				  "shard = ?2 AND table_name = ?3 AND (chunk = "
				  "?4 OR ?4 = -9223372036854775808)",
				  &stmt, err);

	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, pass, SQLITE_OK);
	if (shard != NULL) {
		rc = journal_bind_text(stmt, 2, shard, rc);
		rc = journal_bind_text(stmt, 3, table, rc);
		rc = journal_bind_int64(stmt, 4, chunk, rc);
	}
	return journal_finish_lazy(journal, 1, stmt, rc,
	                           "forget the differences of", pass, err);
}

int
journal_differences_replace(struct rs_journal *journal, const char *pass,
                            const char *next, const char *shard,
                            const char *table, struct rs_err *err)
{
	static const char *const sql[2] = {
		"DELETE FROM differences WHERE pass = ?1 AND shard = ?3 AND "
		"table_name = ?4",
		"UPDATE differences SET pass = ?1 WHERE pass = ?2 AND shard = "
		"?3 AND table_name = ?4",
	};
	int rc = journal_exec(journal, "BEGIN IMMEDIATE", "begin", err);

	for (int i = 0; rc == 0 && i < 2; i++) {
		sqlite3_stmt *stmt;

		rc = journal_prepare_write(journal, sql[i], &stmt, err);
		if (rc != 0)
			break;
		rc = journal_bind_text(stmt, 1, pass, SQLITE_OK);
		rc = journal_bind_text(stmt, 2, next, rc);
		rc = journal_bind_text(stmt, 3, shard, rc);
		rc = journal_bind_text(stmt, 4, table, rc);
		rc = journal_finish(journal, stmt, rc,
		                    "replace the differences of", pass, err);
	}
	if (rc == 0)
		return journal_exec(journal, "COMMIT", "commit the differences",
		                    err);
	sqlite3_exec(journal->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
journal_differences(struct rs_journal *journal, const char *pass, int limit,
                    struct rs_difference **diffs, int *n, int64_t *total,
                    struct rs_err *err)
{
	struct rs_difference *all = NULL;
	sqlite3_stmt *stmt;
	int rc, count = 0, failed = 0;

	*diffs = NULL;
	*n = 0;
	if (total != NULL)
		*total = 0;
	if (!journal_has_differences(journal))
		return 0;
	if (total != NULL) {
		rc = journal_prepare(journal,
		                     "SELECT count(*) FROM differences "
		                     "WHERE ?1 IS NULL OR pass = ?1",
		                     &stmt, err);
		if (rc != 0)
			return rc;
		rc = journal_bind_text(stmt, 1, pass, SQLITE_OK);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW)
			*total = sqlite3_column_int64(stmt, 0);
		rc = journal_done(journal, stmt, rc, "count", "the differences",
		                  err);
		if (rc != 0)
			return rc;
	}
	rc = journal_prepare(journal,
	                     "SELECT shard, table_name, chunk, pk, shard_key, "
	                     "owner, kind, columns, found_at, pass "
	                     "FROM differences WHERE ?1 IS NULL OR pass = ?1 "
	                     "ORDER BY pass, shard, table_name, chunk, pk, "
	                     "owner LIMIT ?2",
	                     &stmt, err);
	if (rc != 0)
		return rc;
	rc = journal_bind_text(stmt, 1, pass, SQLITE_OK);
	rc = journal_bind_int64(stmt, 2, limit > 0 ? limit : -1, rc);
	while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct rs_difference *grown, *d;

		rc = SQLITE_OK;
		grown = realloc(all, sizeof(*all) * (size_t)(count + 1));
		if (grown == NULL) {
			failed = 1;
			break;
		}
		all = grown;
		d = &all[count++];
		memset(d, 0, sizeof(*d));
		d->pass = journal_column_dup(stmt, 9, &failed);
		d->shard = journal_column_dup(stmt, 0, &failed);
		d->table = journal_column_dup(stmt, 1, &failed);
		d->chunk = sqlite3_column_int64(stmt, 2);
		d->pk = journal_column_dup(stmt, 3, &failed);
		d->shard_key = journal_column_dup(stmt, 4, &failed);
		d->owner = journal_column_dup(stmt, 5, &failed);
		d->kind = journal_column_dup(stmt, 6, &failed);
		d->columns = journal_column_dup(stmt, 7, &failed);
		d->found_at = sqlite3_column_int64(stmt, 8);
	}
	if (failed) {
		sqlite3_finalize(stmt);
		journal_differences_free(all, count);
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	}
	rc = journal_done(journal, stmt, rc, "read", "the differences", err);
	if (rc != 0) {
		journal_differences_free(all, count);
		return rc;
	}
	*diffs = all;
	*n = count;
	return 0;
}

void
journal_differences_free(struct rs_difference *diffs, int n)
{
	for (int i = 0; i < n; i++) {
		free((char *)diffs[i].pass);
		free((char *)diffs[i].shard);
		free((char *)diffs[i].table);
		free((char *)diffs[i].pk);
		free((char *)diffs[i].shard_key);
		free((char *)diffs[i].owner);
		free((char *)diffs[i].kind);
		free((char *)diffs[i].columns);
	}
	free(diffs);
}
