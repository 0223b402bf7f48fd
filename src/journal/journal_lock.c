/*
 * The run lock of journal.h: journal_lock_file takes it, journal_open
 * through it, and journal_lock_holder names who holds it, for status.
 *
 * The run lock is flock(2) on the journal file itself, taken without
 * waiting: there is no side file an operator could delete to get around
 * it.  A refused process, and status, name the holder from the last row of
 * runs (the holder records itself right after it takes the lock); the
 * lock, not that row, is the truth (the kernel drops it when the holder
 * dies).
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "journal/journal.h"
#include "journal/journal_impl.h"

/* A refused flock is retried this often, this far apart, before the
 * journal is reported busy: journal_lock_holder takes the lock shared for
 * an instant, which must not make a starting run fail. */
#define JOURNAL_LOCK_TRIES    5
#define JOURNAL_LOCK_PAUSE_MS 10

/* Describe the run recorded last in the journal at PATH into OUT, as "pid
 * 123 on host db-admin since 2026-12-02 10:04:32 UTC"; returns 1, or 0 with
 * "another process" when the holder has not recorded itself yet (it does
 * right after it takes the lock, once the schema exists) or the journal
 * cannot be read. */
static int
journal_read_holder(const char *path, char *out, size_t size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	int found = 0;

	snprintf(out, size, "another process");
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	            SQLITE_OK &&
	    sqlite3_busy_timeout(db, 200) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
	                       "SELECT pid, host, started_at FROM runs "
	                       "ORDER BY id DESC LIMIT 1",
	                       -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW) {
		char since[32];
		const unsigned char *host = sqlite3_column_text(stmt, 1);

		journal_format_time(sqlite3_column_int64(stmt, 2), since,
		                    sizeof(since));
		snprintf(out, size, "pid %lld on host %s since %s UTC",
		         (long long)sqlite3_column_int64(stmt, 0),
		         host != NULL ? (const char *)host : "?", since);
		found = 1;
	}
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return found;
}

/* Take the run lock on the journal file PATH itself (creating it empty if
 * needed) without waiting; *FD is the locked descriptor (close-on-exec, so
 * hook commands do not inherit the lock).  The lock is flock(2), which on a
 * local file system is independent of SQLite's own POSIX locks on the
 * same file; it cannot be lifted by deleting a side file, and deleting the
 * journal itself makes a new journal that the shard markers then refuse.
 * RS_EBUSY naming the holder when another open file holds the lock
 * (another process, or this one through another journal_open), RS_EIO when
 * the file cannot be opened or locked. */
int
journal_lock_file(const char *path, int *fd, struct rs_err *err)
{
	int tries = 0;
	int lfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	*fd = -1;
	if (lfd < 0)
		return rs_err_set(err, RS_EIO, "cannot open the journal %s: %s",
		                  path, strerror(errno));
	while (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK || ++tries >= JOURNAL_LOCK_TRIES) {
			int busy = errno == EWOULDBLOCK;

			close(lfd);
			if (busy) {
				char holder[512];

				journal_read_holder(path, holder,
				                    sizeof(holder));
				return rs_err_set(
					err, RS_EBUSY,
					"journal %s is in use by %s; wait for "
					"it to finish or stop it",
					path, holder);
			}
			return rs_err_set(err, RS_EIO, "cannot lock %s: %s",
			                  path, strerror(errno));
		}
		nanosleep(
			&(struct timespec){0, JOURNAL_LOCK_PAUSE_MS * 1000000L},
			NULL);
	}
	*fd = lfd;
	return 0;
}

/* Errors (no journal, an unreadable one) count as "nobody holds it": status
 * must not fail for want of a journal. */
int
journal_lock_holder(const char *path, char *holder, size_t size)
{
	int fd, held = 0;

	if (size > 0)
		holder[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no journal: never run, so nobody holds it */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		flock(fd, LOCK_UN);
	else if (errno == EWOULDBLOCK)
		held = 1;
	close(fd);
	if (held)
		journal_read_holder(path, holder, size);
	return held;
}
