/*
 * Dates, times and timestamps in the canonical form (the rules are in
 * canonical.h): a cursor reads the engine's text into a struct moment,
 * which is checked, moved to UTC by its offset with civil-day arithmetic
 * when it has a zone, and written back as canonical text.  PostgreSQL's
 * eras (" BC") and infinities and MariaDB's zero date are handled here.
 * The readers follow the contract of canonical_impl.h.
 */
#include "backend/canonical_impl.h"

#include <stdio.h>
#include <string.h>

/* A date and time as read, before any conversion to UTC. */
struct moment {
	long long year; /* astronomical: 1 BC is 0 */
	int month, day;
	int hour, minute, second, micro;
	bool negative;    /* a negative MariaDB TIME */
	bool has_zone;    /* an offset or Z was read */
	long zone_offset; /* seconds east of UTC */
};

/* Read between MIN and MAX digits into *VALUE.  Returns false, with the
 * cursor and *VALUE untouched, when fewer than MIN digits follow. */
static bool
cursor_digits(struct cursor *c, int min, int max, long long *value)
{
	size_t i = c->i;
	long long v = 0;
	int n = 0;

	while (n < max && i < c->len && is_digit(c->s[i])) {
		v = v * 10 + (c->s[i] - '0');
		i++;
		n++;
	}
	if (n < min)
		return false;
	c->i = i;
	*value = v;
	return true;
}

static bool
is_leap(long long year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int
days_in_month(long long year, int month)
{
	static const int days[] = {31, 28, 31, 30, 31, 30,
	                           31, 31, 30, 31, 30, 31};

	return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static long long
days_from_civil(long long y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The inverse of days_from_civil. */
static void
civil_from_days(long long z, long long *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* "YYYY-MM-DD" with 4 to 7 year digits; MariaDB's zero date is allowed
 * here and checked by moment_check_date. */
static bool
read_date_part(struct cursor *c, struct moment *m)
{
	long long month, day;

	if (!cursor_digits(c, 4, 7, &m->year) || !cursor_take(c, '-') ||
	    !cursor_digits(c, 2, 2, &month) || !cursor_take(c, '-') ||
	    !cursor_digits(c, 2, 2, &day))
		return false;
	m->month = (int)month;
	m->day = (int)day;
	return true;
}

/* Seconds' fraction after the '.': up to 6 digits, more only if zeros. */
static bool
read_fraction(struct cursor *c, int *micro, const char **why)
{
	int n = 0;

	*micro = 0;
	while (c->i < c->len && is_digit(c->s[c->i])) {
		if (n < 6)
			*micro = *micro * 10 + (c->s[c->i] - '0');
		else if (c->s[c->i] != '0') {
			*why = "finer than microseconds";
			return false;
		}
		c->i++;
		n++;
	}
	if (n == 0) {
		*why = "no digits after the point";
		return false;
	}
	for (; n < 6; n++)
		*micro *= 10;
	return true;
}

/* "HH:MM[:SS[.ffffff]]" with 2 to MAX_HOUR_DIGITS hour digits; seconds
 * may be left out only when OPTIONAL_SECONDS. */
static bool
read_time_part(struct cursor *c, int max_hour_digits, bool optional_seconds,
               struct moment *m, const char **why)
{
	long long hour, minute, second = 0;

	if (!cursor_digits(c, 2, max_hour_digits, &hour) ||
	    !cursor_take(c, ':') || !cursor_digits(c, 2, 2, &minute)) {
		*why = "not a time of the form HH:MM:SS";
		return false;
	}
	if (cursor_take(c, ':')) {
		if (!cursor_digits(c, 2, 2, &second)) {
			*why = "not a time of the form HH:MM:SS";
			return false;
		}
		if (cursor_take(c, '.') && !read_fraction(c, &m->micro, why))
			return false;
	} else if (!optional_seconds) {
		*why = "no seconds";
		return false;
	}
	if (minute > 59 || second > 59) {
		*why = "minutes or seconds out of range";
		return false;
	}
	m->hour = (int)hour;
	m->minute = (int)minute;
	m->second = (int)second;
	return true;
}

/* An optional zone after optional blanks: Z, or ±HH[[:]MM[[:]SS]]. */
static bool
read_zone(struct cursor *c, struct moment *m, const char **why)
{
	size_t start = c->i;
	long long hours, minutes = 0, seconds = 0;
	int sign;

	while (c->i < c->len && c->s[c->i] == ' ')
		c->i++;
	if (cursor_take(c, 'Z') || cursor_take(c, 'z')) {
		m->has_zone = true;
		m->zone_offset = 0;
		return true;
	}
	if (c->i >= c->len || (c->s[c->i] != '+' && c->s[c->i] != '-')) {
		c->i = start; /* no zone; the blanks may precede " BC" */
		return true;
	}
	sign = c->s[c->i] == '-' ? -1 : 1;
	c->i++;
	if (!cursor_digits(c, 2, 2, &hours))
		goto bad;
	if (cursor_take(c, ':')) {
		if (!cursor_digits(c, 2, 2, &minutes))
			goto bad;
		if (cursor_take(c, ':') && !cursor_digits(c, 2, 2, &seconds))
			goto bad;
	} else if (cursor_digits(c, 2, 2, &minutes)) {
		cursor_digits(c, 2, 2, &seconds);
	}
	if (hours > 23 || minutes > 59 || seconds > 59)
		goto bad;
	m->has_zone = true;
	m->zone_offset = sign * (long)(hours * 3600 + minutes * 60 + seconds);
	return true;
bad:
	*why = "not a time zone offset of the form +HH[:MM[:SS]]";
	return false;
}

/* PostgreSQL's " BC" suffix: turns the year astronomical. */
static void
read_era(struct cursor *c, enum rs_canon_src src, struct moment *m)
{
	if (src == RS_SRC_PG && c->len - c->i == 3 &&
	    memcmp(c->s + c->i, " BC", 3) == 0) {
		c->i += 3;
		m->year = 1 - m->year;
	}
}

static bool
is_zero_date(const struct moment *m)
{
	return m->year == 0 && m->month == 0 && m->day == 0;
}

/* Whether M's date exists; MariaDB's zero date does when ZERO_OK. */
static bool
moment_check_date(const struct moment *m, bool zero_ok, const char **why)
{
	if (zero_ok && is_zero_date(m))
		return true;
	if (m->month < 1 || m->month > 12) {
		*why = "month out of range";
		return false;
	}
	if (m->day < 1 || m->day > days_in_month(m->year, m->month)) {
		*why = "day out of range for its month";
		return false;
	}
	return true;
}

/* The end of a date, alone or in a timestamp: PostgreSQL's era, nothing
 * left after it (else *WHY is FORM), and a date that exists. */
static bool
read_date_end(struct cursor *c, enum rs_canon_src src, struct moment *m,
              const char *form, const char **why)
{
	read_era(c, src, m);
	if (c->i != c->len) {
		*why = form;
		return false;
	}
	return moment_check_date(m, src == RS_SRC_MYSQL, why);
}

/* PostgreSQL's infinite dates and timestamps, kept as they are: "infinity"
 * or "-infinity" when SRC wrote S as one of them (in any case), else
 * NULL. */
static const char *
pg_infinity(enum rs_canon_src src, const char *s, size_t len)
{
	if (src != RS_SRC_PG)
		return NULL;
	if (canon_equals_word(s, len, "infinity"))
		return "infinity";
	if (canon_equals_word(s, len, "-infinity"))
		return "-infinity";
	return NULL;
}

static int
write_date(const struct moment *m, struct rs_canon_buf *out, struct rs_err *err)
{
	char text[48];

	snprintf(text, sizeof(text), "%s%04lld-%02d-%02d",
	         m->year < 0 ? "-" : "", m->year < 0 ? -m->year : m->year,
	         m->month, m->day);
	return buf_puts(out, text, err);
}

/* Move M to UTC by its zone offset (the zero date does not move). */
static void
moment_to_utc(struct moment *m)
{
	long long seconds, days, rest;

	if (!m->has_zone || m->zone_offset == 0 || is_zero_date(m))
		return;
	seconds = days_from_civil(m->year, m->month, m->day) * 86400 +
	          m->hour * 3600LL + m->minute * 60LL + m->second -
	          m->zone_offset;
	days = seconds / 86400;
	rest = seconds % 86400;
	if (rest < 0) {
		rest += 86400;
		days--;
	}
	civil_from_days(days, &m->year, &m->month, &m->day);
	m->hour = (int)(rest / 3600);
	m->minute = (int)(rest / 60 % 60);
	m->second = (int)(rest % 60);
	m->zone_offset = 0;
}

int
canon_read_date(enum rs_canon_src src, const char *s, size_t len,
                struct rs_canon_buf *out, struct rs_err *err, const char **why)
{
	struct cursor c = {s, len, 0};
	struct moment m = {0};
	const char *infinity;

	if ((infinity = pg_infinity(src, s, len)) != NULL)
		return buf_puts(out, infinity, err);
	if (!read_date_part(&c, &m)) {
		*why = "not a date of the form YYYY-MM-DD";
		return RS_EVALUE;
	}
	if (!read_date_end(&c, src, &m, "not a date of the form YYYY-MM-DD",
	                   why))
		return RS_EVALUE;
	return write_date(&m, out, err);
}

int
canon_read_time(enum rs_canon_src src, const char *s, size_t len,
                struct rs_canon_buf *out, struct rs_err *err, const char **why)
{
	struct cursor c = {s, len, 0};
	struct moment m = {0};
	char text[48];
	bool mysql = src == RS_SRC_MYSQL;

	if (mysql && cursor_take(&c, '-'))
		m.negative = true;
	if (!read_time_part(&c, mysql ? 3 : 2, src == RS_SRC_SQLITE, &m, why))
		return RS_EVALUE;
	if (c.i != len) {
		*why = "not a time of the form HH:MM:SS";
		return RS_EVALUE;
	}
	if (mysql ? m.hour > 838
	          : m.hour > 24 ||
	                    (m.hour == 24 && (m.minute != 0 || m.second != 0 ||
	                                      m.micro != 0))) {
		*why = "hours out of range";
		return RS_EVALUE;
	}
	if (m.hour == 0 && m.minute == 0 && m.second == 0 && m.micro == 0)
		m.negative = false;
	snprintf(text, sizeof(text), "%s%02d:%02d:%02d.%06d",
	         m.negative ? "-" : "", m.hour, m.minute, m.second, m.micro);
	return buf_puts(out, text, err);
}

/* Timestamps with (WITH_ZONE) or without time zone. */
int
canon_read_timestamp(enum rs_canon_src src, bool with_zone, const char *s,
                     size_t len, struct rs_canon_buf *out, struct rs_err *err,
                     const char **why)
{
	struct cursor c = {s, len, 0};
	struct moment m = {0};
	const char *infinity;
	char text[64];
	int rc;

	if ((infinity = pg_infinity(src, s, len)) != NULL)
		return buf_puts(out, infinity, err);
	if (!read_date_part(&c, &m)) {
		*why = "not a timestamp of the form YYYY-MM-DD HH:MM:SS";
		return RS_EVALUE;
	}
	if (cursor_take(&c, ' ') || cursor_take(&c, 'T')) {
		if (!read_time_part(&c, 2, src == RS_SRC_SQLITE, &m, why))
			return RS_EVALUE;
		if (m.hour > 23) {
			*why = "hours out of range";
			return RS_EVALUE;
		}
		if (!read_zone(&c, &m, why))
			return RS_EVALUE;
	} else if (src != RS_SRC_SQLITE) {
		*why = "no time of day";
		return RS_EVALUE;
	}
	if (!read_date_end(&c, src, &m,
	                   "not a timestamp of the form YYYY-MM-DD HH:MM:SS",
	                   why))
		return RS_EVALUE;
	if (m.has_zone && !with_zone && src != RS_SRC_SQLITE) {
		*why = "a time zone in a timestamp without time zone";
		return RS_EVALUE;
	}
	if (!m.has_zone && with_zone && src == RS_SRC_PG) {
		*why = "no time zone offset";
		return RS_EVALUE;
	}
	moment_to_utc(&m);
	if ((rc = write_date(&m, out, err)) != 0)
		return rc;
	snprintf(text, sizeof(text), "T%02d:%02d:%02d.%06d%s", m.hour, m.minute,
	         m.second, m.micro, with_zone ? "Z" : "");
	return buf_puts(out, text, err);
}
