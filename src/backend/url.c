/*
 * Shard URLs: parsing them, masking their secrets, choosing the password,
 * and turning a URL into the connection arguments of libpq and MariaDB
 * Connector/C without including either.
 *
 * One textual scanner, url_mask_scan, decides what is a secret for the masked
 * copy that url_parse keeps, for url_parse's error messages and for
 * url_mask_text, so that the three cannot disagree.  It errs towards hiding
 * too much: a user information runs to the last '@', a parameter name runs
 * back to the '?' or '&' before its '='.  url_parse splits a URL the same
 * way, and refuses a raw '@' after the host, so that for every URL it
 * accepts the scanner masks exactly the password and the password-like
 * parameters.
 */
#include "backend/url.h"
#include "common/strbuf.h"
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MASK "****"
#define URL_SCHEMES                                                            \
	"postgresql://, postgres://, mysql://, mariadb:// or sqlite://"

/* How much of a masked URL an error message quotes. */
#define URL_SHOWN 400

/* What percent-decoding found wrong, besides running out of memory. */
#define URL_DECODE_BAD_ESCAPE 1 /* a '%' without two hex digits */
#define URL_DECODE_NUL        2 /* %00, which no C string can carry */

static const struct {
	const char *scheme;
	enum rs_engine engine;
} url_schemes[] = {
	{"postgresql", RS_ENGINE_POSTGRES}, {"postgres", RS_ENGINE_POSTGRES},
	{"mysql", RS_ENGINE_MYSQL},         {"mariadb", RS_ENGINE_MYSQL},
	{"sqlite", RS_ENGINE_SQLITE},
};

static int
url_is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

/* ASCII lower case, whatever the locale. */
static int
url_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Characters of a key in "key=value" outside URLs (libpq conninfo). */
static int
url_is_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
	       c == '%';
}

/* Zero S before freeing it, for strings that may hold a password.  A
 * volatile pointer keeps the compiler from dropping the stores. */
static void
url_wipe_free(char *s)
{
	if (s != NULL) {
		volatile char *p = s;

		while (*p != '\0')
			*p++ = '\0';
		free(s);
	}
}

/* Whether the parameter name S[0..N), percent-decoded and in any case,
 * names a secret: it contains "pass" (password, passwd, sslpassword,
 * passphrase), "pwd", "secret" or "token".  "passfile" is a path, not a
 * secret.  Out of memory counts as a secret. */
static int
url_secret_name(const char *s, size_t n)
{
	static const char *const needles[] = {"pass", "pwd", "secret", "token"};
	char *name = malloc(n + 1);
	size_t len = 0;
	int secret = 0;

	if (name == NULL)
		return 1;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%' && i + 2 < n && text_hex_digit(s[i + 1]) >= 0 &&
		    text_hex_digit(s[i + 2]) >= 0) {
			c = text_hex_digit(s[i + 1]) * 16 +
			    text_hex_digit(s[i + 2]);
			i += 2;
		}
		if (c != '\0') /* "x%00password" must not hide "password" */
			name[len++] = (char)url_lower(c);
	}
	name[len] = '\0';
	for (size_t k = 0; k < sizeof(needles) / sizeof(*needles); k++)
		if (strstr(name, needles[k]) != NULL)
			secret = 1;
	if (strcmp(name, "passfile") == 0)
		secret = 0;
	free(name);
	return secret;
}

/* Whether the '=' at TEXT[EQ] follows the name of a secret.  Inside a URL
 * the name runs back to the '?' or '&' before it, not before FLOOR (and not
 * past white space unless SINGLE, when TEXT is one URL); elsewhere it is the
 * run of key characters before the '=', spaces allowed in between as in
 * libpq's "password = secret". */
static int
url_secret_before(const char *text, size_t eq, size_t floor, int in_url,
                  int single)
{
	size_t start, end = eq;

	if (in_url) {
		start = eq;
		while (start > floor && text[start - 1] != '?' &&
		       text[start - 1] != '&' &&
		       (single || !url_is_space(text[start - 1])))
			start--;
	} else {
		while (end > 0 && url_is_space(text[end - 1]))
			end--;
		start = end;
		while (start > 0 && url_is_name_char(text[start - 1]))
			start--;
	}
	return start < end && url_secret_name(text + start, end - start);
}

/* Add TEXT[FROM, END) to OUT with the password of its user information
 * masked: from the first ':' to the last '@', when both are there (or from
 * just after "password=" when that comes before the ':').  Returns where
 * scanning goes on: at that '@', or FROM when nothing was masked (and
 * nothing added). */
static size_t
url_mask_userinfo(struct rs_strbuf *out, const char *text, size_t from,
                  size_t end)
{
	size_t at = end, colon, start;

	for (size_t i = from; i < end; i++)
		if (text[i] == '@')
			at = i;
	if (at == end)
		return from;
	for (colon = from; colon < at && text[colon] != ':'; colon++)
		;
	if (colon == at)
		return from;
	start = colon + 1;
	for (size_t i = from; i < colon; i++)
		if (text[i] == '=' && url_secret_before(text, i, from, 1, 1)) {
			start = i + 1;
			break;
		}
	strbuf_add(out, text + from, start - from);
	strbuf_str(out, URL_MASK);
	return at;
}

/* Add to OUT the mask for the secret value that starts at TEXT[I] and
 * return where it ends.  In a URL a value ends at '&' (and at white space
 * unless SINGLE); elsewhere at white space, or at the closing quote of a
 * quoted value, as in libpq's conninfo. */
static size_t
url_mask_value(struct rs_strbuf *out, const char *text, size_t i, size_t n,
               int in_url, int single)
{
	size_t j;

	if (!in_url) {
		while (i < n && url_is_space(text[i]))
			strbuf_add(out, text + i++, 1);
		if (i < n && (text[i] == '\'' || text[i] == '"')) {
			char quote = text[i];

			j = i + 1;
			while (j < n && text[j] != quote)
				j += text[j] == '\\' && j + 1 < n ? 2 : 1;
			strbuf_add(out, &quote, 1);
			strbuf_str(out, URL_MASK);
			if (j < n) {
				strbuf_add(out, &quote, 1);
				j++;
			}
			return j;
		}
	}
	for (j = i; j < n; j++) {
		if (in_url && text[j] == '&')
			break;
		if (!single && url_is_space(text[j]))
			break;
	}
	strbuf_str(out, URL_MASK);
	return j;
}

/* Whether S[0..N) contains "://". */
static int
url_has_scheme(const char *s, size_t n)
{
	for (size_t i = 0; i + 3 <= n; i++)
		if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/')
			return 1;
	return 0;
}

/* TEXT with its secrets replaced by "****".  SINGLE: TEXT is meant to be
 * one URL, so its user information runs to its last '@' whatever lies in
 * between (a password may hold spaces or an unencoded '/'), and without
 * "://" at all TEXT is taken to start with the user information.
 * Otherwise TEXT is any message, and a URL in it ends at white space.
 * Returns a new string, or NULL when memory runs out. */
static char *
url_mask_scan(const char *text, int single)
{
	struct rs_strbuf out = {0};
	size_t n = strlen(text), i = 0, floor = 0;
	int in_url = single;

	if (single && strstr(text, "://") == NULL)
		i = url_mask_userinfo(&out, text, 0, n);
	while (i < n) {
		if (strncmp(text + i, "://", 3) == 0) {
			size_t end = i + 3;

			while (end < n && (single || !url_is_space(text[end])))
				end++;
			strbuf_add(&out, "://", 3);
			i += 3;
			floor = i;
			in_url = 1;
			i = url_mask_userinfo(&out, text, i, end);
			continue;
		}
		if (!single && url_is_space(text[i]))
			in_url = 0;
		if (!single && !url_is_space(text[i]) &&
		    (i == 0 || url_is_space(text[i - 1]))) {
			/* A word of its own without "://": "app:secret@host"
			 * may be a URL that lost its scheme. */
			size_t end = i, skip = i;

			while (end < n && !url_is_space(text[end]))
				end++;
			if (!url_has_scheme(text + i, end - i))
				skip = url_mask_userinfo(&out, text, i, end);
			if (skip != i) {
				i = skip;
				continue;
			}
		}
		if (text[i] == '=' &&
		    url_secret_before(text, i, floor, in_url, single)) {
			strbuf_add(&out, "=", 1);
			i = url_mask_value(&out, text, i + 1, n, in_url,
			                   single);
			continue;
		}
		strbuf_add(&out, text + i, 1);
		i++;
	}
	return strbuf_finish(&out);
}

char *
url_mask_text(const char *text)
{
	if (text == NULL)
		return NULL;
	return url_mask_scan(text, 0);
}

static int url_fail(struct rs_err *err, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write to ERR "URL 'MASKED': DETAIL" for the URL TEXT and return
 * RS_EUSAGE.  The masked URL shows control characters as '?', so that the
 * message stays on one line, and is cut after URL_SHOWN bytes, so that the
 * detail always fits; if it cannot be built, the URL is left out. */
static int
url_fail(struct rs_err *err, const char *text, const char *fmt, ...)
{
	char detail[512];
	char *masked;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	masked = url_mask_scan(text, 1);
	if (masked == NULL)
		return rs_err_set(err, RS_EUSAGE, "URL (not shown): %s",
		                  detail);
	for (char *p = masked; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	rs_err_set(err, RS_EUSAGE, "URL '%.*s%s': %s", URL_SHOWN, masked,
	           strlen(masked) > URL_SHOWN ? "..." : "", detail);
	free(masked);
	return RS_EUSAGE;
}
#ifdef __clang_analyzer__
/* The analyzer does not follow variadic calls: show it the result. */
#define url_fail(err, text, ...)                                               \
	(url_fail((err), (text), __VA_ARGS__), RS_EUSAGE)
#endif

static int
url_nomem(struct rs_err *err)
{
	return rs_err_set(err, RS_ENOMEM, "out of memory while reading a URL");
}

/* Percent-decode S[0..N) into a new string in *OUT.  Returns 0,
 * URL_DECODE_BAD_ESCAPE, URL_DECODE_NUL or RS_ENOMEM; *OUT is NULL unless
 * 0 is returned.  The partial result is wiped, as it may be a password. */
static int
url_decode(const char *s, size_t n, char **out)
{
	char *text = malloc(n + 1);
	size_t len = 0;

	*out = NULL;
	if (text == NULL)
		return RS_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n || text_hex_digit(s[i + 1]) < 0 ||
			    text_hex_digit(s[i + 2]) < 0) {
				text[len] = '\0';
				url_wipe_free(text);
				return URL_DECODE_BAD_ESCAPE;
			}
			c = text_hex_digit(s[i + 1]) * 16 +
			    text_hex_digit(s[i + 2]);
			i += 2;
			if (c == 0) {
				text[len] = '\0';
				url_wipe_free(text);
				return URL_DECODE_NUL;
			}
		}
		text[len++] = (char)c;
	}
	text[len] = '\0';
	*out = text;
	return 0;
}

/* Decode the part S[0..N) of the URL TEXT, called WHAT in messages, into
 * *OUT; an empty part becomes NULL when EMPTY_IS_NULL.  Returns 0, or
 * RS_EUSAGE / RS_ENOMEM with ERR written. */
static int
url_decode_part(struct rs_err *err, const char *text, const char *s, size_t n,
                const char *what, int empty_is_null, char **out)
{
	int rc = url_decode(s, n, out);

	if (rc == URL_DECODE_BAD_ESCAPE)
		return url_fail(err, text,
		                "the %s has a '%%' without two hex digits "
		                "after it; write a '%%' itself as %%25",
		                what);
	if (rc == URL_DECODE_NUL)
		return url_fail(err, text,
		                "the %s contains %%00, which cannot be passed "
		                "to a database driver",
		                what);
	if (rc != 0)
		return url_nomem(err);
	if (empty_is_null && (*out)[0] == '\0') {
		free(*out);
		*out = NULL;
	}
	return 0;
}

/* A port: 1 to 5 digits making 1 to 65535.  Returns 0 or -1. */
static int
url_parse_port(const char *s, size_t n, int *port)
{
	int value = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		value = value * 10 + (s[i] - '0');
	}
	if (value < 1 || value > 65535)
		return -1;
	*port = value;
	return 0;
}

/* Whether S[0..N), the inside of brackets, looks like an IPv6 address:
 * hex digits, ':' and '.' (for an embedded IPv4), at least one ':', then
 * perhaps a zone "%25eth0". */
static int
url_ipv6_ok(const char *s, size_t n)
{
	size_t i;
	int colons = 0;

	for (i = 0; i < n && s[i] != '%'; i++) {
		if (s[i] == ':')
			colons++;
		else if (s[i] != '.' && text_hex_digit(s[i]) < 0)
			return 0;
	}
	if (i < n && (n - i < 4 || strncmp(s + i, "%25", 3) != 0))
		return 0;
	return colons > 0;
}

/* A parameter name fit for a message: printable ASCII, at most 64
 * characters, other bytes shown as '?'. */
static void
url_show_name(const char *name, char *shown, size_t size)
{
	size_t i;

	for (i = 0; name[i] != '\0' && i + 1 < size && i < 64; i++)
		shown[i] = (unsigned char)name[i] >= 0x20 &&
		                           (unsigned char)name[i] < 0x7f
		                   ? name[i]
		                   : '?';
	shown[i] = '\0';
}

/* Parse the query QUERY (after the '?') of the URL TEXT into url->params.
 * With LIFT_PASSWORD a parameter called "password" becomes url->password
 * instead.  Returns 0, or RS_EUSAGE / RS_ENOMEM with ERR written. */
static int
url_parse_query(struct rs_url *url, struct rs_err *err, const char *text,
                const char *query, int lift_password)
{
	size_t max = 1;
	int index = 0;
	const char *p = query;

	for (const char *s = query; *s != '\0'; s++)
		if (*s == '&')
			max++;
	url->params = calloc(max, sizeof(*url->params));
	if (url->params == NULL)
		return url_nomem(err);
	while (*p != '\0') {
		const char *end = p + strcspn(p, "&");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		char what[128], shown[72];
		char *name, *value;
		int rc;

		if (end == p) { /* "&&" or a trailing '&': nothing there */
			p++;
			continue;
		}
		index++;
		if (eq == NULL)
			return url_fail(
				err, text,
				"query parameter %d has no '=': write "
				"name=value, as in ?sslmode=verify-full",
				index);
		if (eq == p)
			return url_fail(err, text,
			                "query parameter %d has no name before "
			                "its '='",
			                index);
		snprintf(what, sizeof(what), "name of query parameter %d",
		         index);
		rc = url_decode_part(err, text, p, (size_t)(eq - p), what, 0,
		                     &name);
		if (rc != 0)
			return rc;
		url_show_name(name, shown, sizeof(shown));
		snprintf(what, sizeof(what), "value of query parameter '%s'",
		         shown);
		rc = url_decode_part(err, text, eq + 1, (size_t)(end - eq - 1),
		                     what, 0, &value);
		if (rc != 0) {
			free(name);
			return rc;
		}
		if (lift_password && strcmp(name, "password") == 0) {
			free(name);
			if (url->password != NULL) {
				url_wipe_free(value);
				return url_fail(err, text,
				                "it gives the password twice, "
				                "before the '@' and as "
				                "?password=; keep one");
			}
			if (value[0] == '\0')
				free(value);
			else
				url->password = value;
		} else {
			url->params[url->n_params].name = name;
			url->params[url->n_params].value = value;
			url->n_params++;
		}
		p = *end != '\0' ? end + 1 : end;
	}
	if (url->n_params == 0) {
		free(url->params);
		url->params = NULL;
	}
	return 0;
}

/* Parse REST, what follows "scheme://" in TEXT, for PostgreSQL or MariaDB.
 * Returns 0, or RS_EUSAGE / RS_ENOMEM with ERR written. */
static int
url_parse_server(struct rs_url *url, struct rs_err *err, const char *text,
                 const char *rest)
{
	const char *auth_end = rest + strcspn(rest, "/?#");
	const char *hostport = rest, *port_text = NULL, *at = NULL, *query;
	int rc;

	if (strchr(auth_end, '@') != NULL)
		return url_fail(err, text,
		                "it has an '@' after the host; percent-encode "
		                "a '/', '?', '#' or '@' in the password (%%2F, "
		                "%%3F, %%23, %%40) and an '@' in the database "
		                "name or a parameter (%%40)");
	if (strchr(rest, '#') != NULL)
		return url_fail(err, text,
		                "it has a '#', but a URL here takes no "
		                "#fragment; percent-encode a '#' that belongs "
		                "to a name or value as %%23");
	for (const char *p = rest; p < auth_end; p++)
		if (*p == '@')
			at = p;
	if (at != NULL) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		const char *user_end = colon != NULL ? colon : at;

		rc = url_decode_part(err, text, rest, (size_t)(user_end - rest),
		                     "user name", 1, &url->user);
		if (rc == 0 && colon != NULL)
			rc = url_decode_part(err, text, colon + 1,
			                     (size_t)(at - colon - 1),
			                     "password", 1, &url->password);
		if (rc != 0)
			return rc;
		hostport = at + 1;
	}
	if (*hostport == '[') {
		const char *close =
			memchr(hostport, ']', (size_t)(auth_end - hostport));

		if (close == NULL)
			return url_fail(
				err, text,
				"the IPv6 address has no closing ']'; "
				"write it as in postgresql://[::1]:5432/"
				"app");
		if (!url_ipv6_ok(hostport + 1, (size_t)(close - hostport - 1)))
			return url_fail(err, text,
			                "brackets must hold an IPv6 address, "
			                "such as [::1] or [fe80::1%%25eth0]");
		rc = url_decode_part(err, text, hostport + 1,
		                     (size_t)(close - hostport - 1), "host", 1,
		                     &url->host);
		if (rc != 0)
			return rc;
		if (close + 1 < auth_end) {
			if (close[1] != ':')
				return url_fail(
					err, text,
					"only ':PORT' may follow the ']' "
					"of an IPv6 address");
			port_text = close + 2;
		}
	} else {
		const char *colon =
			memchr(hostport, ':', (size_t)(auth_end - hostport));
		const char *host_end = colon != NULL ? colon : auth_end;
		size_t host_len = (size_t)(host_end - hostport);

		if (memchr(hostport, ',', (size_t)(auth_end - hostport)) !=
		    NULL)
			return url_fail(
				err, text,
				"it lists several hosts; give each shard "
				"one host (a replica is a shard of its "
				"own)");
		if (colon != NULL &&
		    memchr(colon + 1, ':', (size_t)(auth_end - colon - 1)) !=
		            NULL)
			return url_fail(
				err, text,
				"an IPv6 address must be in brackets, as "
				"in postgresql://[::1]:5432/app");
		if (memchr(hostport, '[', host_len) != NULL ||
		    memchr(hostport, ']', host_len) != NULL)
			return url_fail(
				err, text,
				"brackets go around a whole IPv6 address "
				"only, as in [::1]:5432");
		rc = url_decode_part(err, text, hostport, host_len, "host", 1,
		                     &url->host);
		if (rc != 0)
			return rc;
		if (colon != NULL)
			port_text = colon + 1;
	}
	if (port_text != NULL &&
	    url_parse_port(port_text, (size_t)(auth_end - port_text),
	                   &url->port) != 0)
		return url_fail(err, text,
		                "the port must be a number from 1 to 65535, or "
		                "be left out with its ':' for the default");
	query = strchr(auth_end, '?');
	if (*auth_end == '/') {
		const char *db = auth_end + 1;
		size_t db_len =
			query != NULL ? (size_t)(query - db) : strlen(db);

		if (memchr(db, '/', db_len) != NULL)
			return url_fail(
				err, text,
				"the database name has a '/', but a URL "
				"names one database; percent-encode a '/' "
				"that belongs to the name as %%2F");
		rc = url_decode_part(err, text, db, db_len, "database name", 1,
		                     &url->database);
		if (rc != 0)
			return rc;
	}
	if (query != NULL)
		return url_parse_query(url, err, text, query + 1, 1);
	return 0;
}

/* Parse REST, what follows "sqlite://" in TEXT: a file path, relative ones
 * joined to BASE_DIR.  Returns 0, or RS_EUSAGE / RS_ENOMEM with ERR
 * written. */
static int
url_parse_sqlite(struct rs_url *url, struct rs_err *err, const char *text,
                 const char *rest, const char *base_dir)
{
	const char *query = strchr(rest, '?');
	size_t path_len = query != NULL ? (size_t)(query - rest) : strlen(rest);
	char *path;
	int rc;

	if (strchr(rest, '#') != NULL)
		return url_fail(err, text,
		                "it has a '#', but a URL here takes no "
		                "#fragment; percent-encode a '#' in the file "
		                "name as %%23");
	if (path_len == 0)
		return url_fail(err, text,
		                "it names no file; write sqlite:///absolute/"
		                "path.db, or sqlite://relative/path.db for a "
		                "path relative to the plan's directory");
	rc = url_decode_part(err, text, rest, path_len, "file path", 0, &path);
	if (rc != 0)
		return rc;
	if (path[0] != '/' && base_dir != NULL && base_dir[0] != '\0') {
		size_t dir_len = strlen(base_dir);
		int slash = base_dir[dir_len - 1] != '/';
		size_t size = dir_len + (size_t)slash + strlen(path) + 1;
		char *joined = malloc(size);

		if (joined == NULL) {
			free(path);
			return url_nomem(err);
		}
		snprintf(joined, size, "%s%s%s", base_dir, slash ? "/" : "",
		         path);
		free(path);
		path = joined;
	}
	url->database = path;
	if (query != NULL)
		return url_parse_query(url, err, text, query + 1, 0);
	return 0;
}

int
url_parse(const char *text, const char *base_dir, struct rs_url *url,
          struct rs_err *err)
{
	const char *sep;
	size_t scheme_len, i;
	int rc;

	memset(url, 0, sizeof(*url));
	if (text == NULL || text[0] == '\0')
		return rs_err_set(
			err, RS_EUSAGE,
			"the URL is empty; write one such as "
			"postgresql://app@db1.example.net:5432/app or "
			"sqlite:///srv/db0.db");
	for (const char *p = text; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return url_fail(err, text,
			                "it contains a space or a control "
			                "character; percent-encode it (a space "
			                "is %%20)");
	sep = strstr(text, "://");
	if (sep == NULL)
		return url_fail(err, text, "it must start with " URL_SCHEMES);
	scheme_len = (size_t)(sep - text);
	for (i = 0; i < sizeof(url_schemes) / sizeof(*url_schemes); i++) {
		const char *scheme = url_schemes[i].scheme;
		size_t k;

		if (strlen(scheme) != scheme_len)
			continue;
		for (k = 0; k < scheme_len; k++)
			if (url_lower((unsigned char)text[k]) != scheme[k])
				break;
		if (k == scheme_len)
			break;
	}
	if (i == sizeof(url_schemes) / sizeof(*url_schemes))
		return url_fail(
			err, text,
			"unknown scheme; it must start with " URL_SCHEMES);
	url->engine = url_schemes[i].engine;
	if (url->engine == RS_ENGINE_SQLITE)
		rc = url_parse_sqlite(url, err, text, sep + 3, base_dir);
	else
		rc = url_parse_server(url, err, text, sep + 3);
	if (rc == 0) {
		url->masked = url_mask_scan(text, 1);
		if (url->masked == NULL)
			rc = url_nomem(err);
	}
	if (rc != 0)
		url_clear(url);
	return rc;
}

void
url_clear(struct rs_url *url)
{
	if (url == NULL)
		return;
	free(url->user);
	url_wipe_free(url->password);
	free(url->host);
	free(url->database);
	for (int i = 0; i < url->n_params; i++) {
		free(url->params[i].name);
		url_wipe_free(url->params[i].value); /* maybe sslpassword */
	}
	free(url->params);
	free(url->masked);
	memset(url, 0, sizeof(*url));
}

const char *
url_engine_name(enum rs_engine engine)
{
	switch (engine) {
	case RS_ENGINE_POSTGRES:
		return "postgresql";
	case RS_ENGINE_MYSQL:
		return "mysql";
	case RS_ENGINE_SQLITE:
		return "sqlite";
	}
	return "unknown";
}

int
url_password(const struct rs_url *url, const char *password_env,
             const char **password, struct rs_err *err)
{
	const char *shown = url->masked != NULL ? url->masked : "(unparsed)";
	const char *value;

	*password = NULL;
	if (password_env == NULL) {
		*password = url->password;
		return 0;
	}
	if (password_env[0] == '\0')
		return rs_err_set(err, RS_EUSAGE,
		                  "password_env for '%s' is empty; name the "
		                  "environment variable that holds the "
		                  "password, or leave password_env out",
		                  shown);
	value = getenv(password_env);
	if (value == NULL || value[0] == '\0')
		return rs_err_set(
			err, RS_EUSAGE,
			"environment variable %s, the password_env for '%s', "
			"is %s; export it with the password, or leave "
			"password_env out to let %s",
			password_env, shown,
			value == NULL ? "not set" : "empty",
			url->engine == RS_ENGINE_MYSQL
				? "the MariaDB option files supply it"
				: "~/.pgpass (or PGPASSFILE) supply it");
	*password = value;
	return 0;
}

int
url_param_name_is(const struct rs_url_param *param, const char *name)
{
	const char *a, *b;

	if (param == NULL || param->name == NULL || name == NULL)
		return 0;
	for (a = param->name, b = name; *a != '\0' && *b != '\0'; a++, b++) {
		int ca = *a == '_' ? '-' : url_lower((unsigned char)*a);
		int cb = *b == '_' ? '-' : url_lower((unsigned char)*b);

		if (ca != cb)
			return 0;
	}
	return *a == '\0' && *b == '\0';
}

int
url_pg_conninfo(const struct rs_url *url, const char *password,
                const char ***keywords, const char ***values,
                struct rs_err *err)
{
	size_t max = 6 + (size_t)url->n_params + 1, n = 0;
	const char **kw, **val;
	char *port;

	*keywords = NULL;
	*values = NULL;
	if (url->engine != RS_ENGINE_POSTGRES)
		return rs_err_set(err, RS_EINTERNAL,
		                  "url_pg_conninfo called for a %s URL",
		                  url_engine_name(url->engine));
	/* One block: keywords, values, then the port's digits. */
	kw = malloc(2 * max * sizeof(*kw) + 8);
	if (kw == NULL)
		return rs_err_set(
			err, RS_ENOMEM,
			"out of memory building connection arguments");
	val = kw + max;
	port = (char *)(val + max);
	if (url->host != NULL) {
		kw[n] = "host";
		val[n++] = url->host;
	}
	if (url->port != 0) {
		snprintf(port, 8, "%d", url->port);
		kw[n] = "port";
		val[n++] = port;
	}
	if (url->user != NULL) {
		kw[n] = "user";
		val[n++] = url->user;
	}
	if (password != NULL) {
		kw[n] = "password";
		val[n++] = password;
	}
	if (url->database != NULL) {
		kw[n] = "dbname";
		val[n++] = url->database;
	}
	kw[n] = "fallback_application_name";
	val[n++] = "reshard";
	for (int i = 0; i < url->n_params; i++) {
		kw[n] = url->params[i].name;
		val[n++] = url->params[i].value;
	}
	kw[n] = NULL;
	val[n] = NULL;
	*keywords = kw;
	*values = val;
	return 0;
}

void
url_pg_conninfo_free(const char **keywords)
{
	free((void *)keywords);
}

int
url_mysql_target(const struct rs_url *url, const char *password,
                 struct rs_url_mysql *target, struct rs_err *err)
{
	memset(target, 0, sizeof(*target));
	if (url->engine != RS_ENGINE_MYSQL)
		return rs_err_set(err, RS_EINTERNAL,
		                  "url_mysql_target called for a %s URL",
		                  url_engine_name(url->engine));
	if (url->host != NULL && url->host[0] == '/')
		target->unix_socket = url->host;
	else
		target->host = url->host;
	target->port = (unsigned int)url->port;
	target->user = url->user;
	target->password = password;
	target->db = url->database;
	target->options = url->params;
	target->n_options = url->n_params;
	return 0;
}
