/*
 * Unit tests of src/backend/url.c: shard URLs, their secrets and the
 * connection arguments built from them.
 *
 * Every URL that carries a password uses the distinctive SECRET below, so
 * that the secrecy test can look for it (or any piece of it) in everything
 * url.c prints: the masked URL, every error message, url_mask_text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/url.h"
#include "common/err.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The password of every test URL; SECRET_PIECE is a piece no other part of
 * any test URL contains. */
#define SECRET       "Zq7xK9"
#define SECRET_PIECE "Zq7"

/* Parse TEXT, failing the test with url.c's message if it is refused. */
static void
parse_ok(const char *text, const char *base_dir, struct rs_url *url)
{
	struct rs_err err = {0};
	int rc = url_parse(text, base_dir, url, &err);

	if (rc != 0) {
		print_error("url_parse(\"%s\") = %d: %s\n", text, rc,
		            err.message);
		fail();
	}
	assert_non_null(url->masked);
}

/* TEXT must be refused with RS_EUSAGE, a message containing WANT, and an
 * empty url. */
static void
parse_fails(const char *text, const char *want)
{
	struct rs_err err = {0};
	struct rs_url url;
	int rc = url_parse(text, NULL, &url, &err);

	if (rc != RS_EUSAGE) {
		print_error("url_parse(\"%s\") = %d, want RS_EUSAGE (%s)\n",
		            text, rc, url.masked != NULL ? url.masked : "");
		url_clear(&url);
		fail();
	}
	assert_int_equal(err.code, RS_EUSAGE);
	if (strstr(err.message, want) == NULL) {
		print_error("url_parse(\"%s\"): message \"%s\" lacks \"%s\"\n",
		            text, err.message, want);
		fail();
	}
	assert_null(url.user);
	assert_null(url.password);
	assert_null(url.host);
	assert_null(url.database);
	assert_null(url.params);
	assert_null(url.masked);
	assert_int_equal(url.port, 0);
	assert_int_equal(url.n_params, 0);
}

/* S must be NULL or equal WANT (NULL meaning absent). */
static void
expect_str(const char *s, const char *want)
{
	if (want == NULL)
		assert_null(s);
	else {
		assert_non_null(s);
		assert_string_equal(s, want);
	}
}

/* Query parameter I of URL must be NAME=VALUE. */
static void
expect_param(const struct rs_url *url, int i, const char *name,
             const char *value)
{
	assert_true(i < url->n_params);
	assert_string_equal(url->params[i].name, name);
	assert_string_equal(url->params[i].value, value);
}

static void
test_schemes_and_aliases(void **state)
{
	static const struct {
		const char *text;
		enum rs_engine engine;
	} cases[] = {
		{"postgresql://h/app", RS_ENGINE_POSTGRES},
		{"postgres://h/app", RS_ENGINE_POSTGRES},
		{"PostgreSQL://h/app", RS_ENGINE_POSTGRES},
		{"mysql://h/app", RS_ENGINE_MYSQL},
		{"mariadb://h/app", RS_ENGINE_MYSQL},
		{"MARIADB://h/app", RS_ENGINE_MYSQL},
		{"sqlite:///srv/app.db", RS_ENGINE_SQLITE},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct rs_url url;

		parse_ok(cases[i].text, NULL, &url);
		assert_int_equal(url.engine, cases[i].engine);
		assert_string_equal(url.masked, cases[i].text);
		url_clear(&url);
	}
	assert_string_equal(url_engine_name(RS_ENGINE_POSTGRES), "postgresql");
	assert_string_equal(url_engine_name(RS_ENGINE_MYSQL), "mysql");
	assert_string_equal(url_engine_name(RS_ENGINE_SQLITE), "sqlite");
	assert_string_equal(url_engine_name((enum rs_engine)42), "unknown");
}

static void
test_all_parts(void **state)
{
	struct rs_url url;

	(void)state;
	parse_ok("postgresql://app:" SECRET "@db1.example.net:5433/orders",
	         NULL, &url);
	assert_int_equal(url.engine, RS_ENGINE_POSTGRES);
	expect_str(url.user, "app");
	expect_str(url.password, SECRET);
	expect_str(url.host, "db1.example.net");
	assert_int_equal(url.port, 5433);
	expect_str(url.database, "orders");
	assert_int_equal(url.n_params, 0);
	assert_null(url.params);
	assert_string_equal(
		url.masked,
		"postgresql://app:****@db1.example.net:5433/orders");
	url_clear(&url);

	parse_ok("mariadb://root:" SECRET "@10.0.0.7:3307/shop", NULL, &url);
	assert_int_equal(url.engine, RS_ENGINE_MYSQL);
	expect_str(url.user, "root");
	expect_str(url.password, SECRET);
	expect_str(url.host, "10.0.0.7");
	assert_int_equal(url.port, 3307);
	expect_str(url.database, "shop");
	assert_string_equal(url.masked,
	                    "mariadb://root:****@10.0.0.7:3307/shop");
	url_clear(&url);

	/* A user without a password is shown as written. */
	parse_ok("postgres://app@pg1/app", NULL, &url);
	expect_str(url.user, "app");
	assert_null(url.password);
	expect_str(url.host, "pg1");
	assert_int_equal(url.port, 0);
	assert_string_equal(url.masked, "postgres://app@pg1/app");
	url_clear(&url);
}

static void
test_percent_encoding(void **state)
{
	struct rs_url url;

	(void)state;
	/* Every character that cannot stand in a password as it is. */
	parse_ok("postgresql://us%20er%40corp:" SECRET
	         "%40%3A%2F%25%3F%23%26+@h/my%20db",
	         NULL, &url);
	expect_str(url.user, "us er@corp");
	expect_str(url.password, SECRET "@:/%?#&+");
	expect_str(url.host, "h");
	expect_str(url.database, "my db");
	assert_string_equal(url.masked,
	                    "postgresql://us%20er%40corp:****@h/my%20db");
	url_clear(&url);

	/* ':' and '@' may also stand raw in a password: the user information
	 * runs to the last '@'. */
	parse_ok("mysql://app:" SECRET ":x@y@h/db", NULL, &url);
	expect_str(url.user, "app");
	expect_str(url.password, SECRET ":x@y");
	expect_str(url.host, "h");
	assert_string_equal(url.masked, "mysql://app:****@h/db");
	url_clear(&url);

	/* A Unix socket directory as host, percent-encoded. */
	parse_ok("postgresql://%2Fvar%2Frun%2Fpostgresql/app", NULL, &url);
	expect_str(url.host, "/var/run/postgresql");
	url_clear(&url);

	parse_fails("postgresql://app:" SECRET "%zz@h/db",
	            "the password has a '%' without two hex digits");
	parse_fails("postgresql://app:" SECRET "%4@h/db",
	            "the password has a '%' without two hex digits");
	parse_fails("postgresql://app:" SECRET "%00@h/db",
	            "the password contains %00");
	parse_fails("postgresql://a%zzb@h/db", "the user name has a '%'");
	parse_fails("postgresql://h%2/db", "the host has a '%'");
	parse_fails("postgresql://h/d%g1", "the database name has a '%'");
}

static void
test_ipv6(void **state)
{
	struct rs_url url;

	(void)state;
	parse_ok("postgresql://app@[::1]:5432/app", NULL, &url);
	expect_str(url.host, "::1");
	assert_int_equal(url.port, 5432);
	expect_str(url.database, "app");
	url_clear(&url);

	parse_ok("mysql://[2001:db8::7]/shop", NULL, &url);
	expect_str(url.host, "2001:db8::7");
	assert_int_equal(url.port, 0);
	url_clear(&url);

	parse_ok("postgresql://[fe80::1%25eth0]:6432", NULL, &url);
	expect_str(url.host, "fe80::1%eth0");
	assert_int_equal(url.port, 6432);
	assert_null(url.database);
	url_clear(&url);

	parse_ok("postgresql://[::ffff:192.0.2.1]/app", NULL, &url);
	expect_str(url.host, "::ffff:192.0.2.1");
	url_clear(&url);

	parse_fails("postgresql://[::1/app", "no closing ']'");
	parse_fails("postgresql://::1/app", "must be in brackets");
	parse_fails("postgresql://[::1]5432/app", "only ':PORT' may follow");
	parse_fails("postgresql://[db1]/app", "must hold an IPv6 address");
	parse_fails("postgresql://[]/app", "must hold an IPv6 address");
	parse_fails("postgresql://h]/app", "brackets go around");
}

static void
test_missing_parts(void **state)
{
	struct rs_url url;

	(void)state;
	/* Everything left to the driver's defaults. */
	parse_ok("postgresql://", NULL, &url);
	assert_null(url.user);
	assert_null(url.password);
	assert_null(url.host);
	assert_int_equal(url.port, 0);
	assert_null(url.database);
	assert_int_equal(url.n_params, 0);
	assert_string_equal(url.masked, "postgresql://");
	url_clear(&url);

	parse_ok("postgresql:///app", NULL, &url);
	assert_null(url.host);
	expect_str(url.database, "app");
	url_clear(&url);

	parse_ok("mysql://h:3306", NULL, &url);
	expect_str(url.host, "h");
	assert_int_equal(url.port, 3306);
	assert_null(url.database);
	url_clear(&url);

	parse_ok("mysql://h/", NULL, &url);
	assert_null(url.database);
	url_clear(&url);

	parse_ok("postgresql://:5432/app", NULL, &url);
	assert_null(url.host);
	assert_int_equal(url.port, 5432);
	url_clear(&url);

	/* Empty user and password are absent; the mask still hides whether
	 * a password was there. */
	parse_ok("postgresql://:@h/app", NULL, &url);
	assert_null(url.user);
	assert_null(url.password);
	assert_string_equal(url.masked, "postgresql://:****@h/app");
	url_clear(&url);

	parse_ok("postgresql://app:@h/app", NULL, &url);
	expect_str(url.user, "app");
	assert_null(url.password);
	url_clear(&url);

	parse_ok("postgresql://:" SECRET "@h", NULL, &url);
	assert_null(url.user);
	expect_str(url.password, SECRET);
	url_clear(&url);
}

static void
test_bad_scheme(void **state)
{
	struct rs_err err = {0};
	struct rs_url url;

	(void)state;
	parse_fails("http://h/app", "unknown scheme; it must start with "
	                            "postgresql://, postgres://, mysql://, "
	                            "mariadb:// or sqlite://");
	parse_fails("postgresqlx://h/app", "unknown scheme");
	parse_fails("://h/app", "unknown scheme");
	parse_fails("postgresql:/h/app", "it must start with postgresql://");
	parse_fails("h/app", "it must start with postgresql://");
	parse_fails("sqlite:app.db", "it must start with");
	assert_int_equal(url_parse("", NULL, &url, &err), RS_EUSAGE);
	assert_non_null(strstr(err.message, "the URL is empty"));
	assert_null(url.masked);
	assert_int_equal(url_parse(NULL, NULL, &url, &err), RS_EUSAGE);
	assert_non_null(strstr(err.message, "the URL is empty"));
}

static void
test_ports(void **state)
{
	static const char *const bad[] = {
		"postgresql://h:0/app",     "postgresql://h:70000/app",
		"postgresql://h:65536/app", "postgresql://h:abc/app",
		"postgresql://h:/app",      "postgresql://h:-1/app",
		"postgresql://h:+5432/app", "postgresql://h:5432x/app",
		"mysql://h:000003306/db",   "postgresql://[::1]:/app",
		"postgresql://[::1]:0/app", "mysql://u@h:99999999999999999999",
	};
	struct rs_url url;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		parse_fails(bad[i], "the port must be a number from 1 to "
		                    "65535");
	parse_ok("postgresql://h:1/app", NULL, &url);
	assert_int_equal(url.port, 1);
	url_clear(&url);
	parse_ok("postgresql://h:65535/app", NULL, &url);
	assert_int_equal(url.port, 65535);
	url_clear(&url);
	parse_ok("mysql://h:03306/app", NULL, &url);
	assert_int_equal(url.port, 3306);
	url_clear(&url);
}

static void
test_query_params_in_order(void **state)
{
	struct rs_url url;

	(void)state;
	parse_ok("postgresql://app@h/app?sslmode=verify-full&connect_timeout="
	         "10&application_name=re%20shard+1&options=-c%20a%3Db&"
	         "sslmode=require",
	         NULL, &url);
	assert_int_equal(url.n_params, 5);
	expect_param(&url, 0, "sslmode", "verify-full");
	expect_param(&url, 1, "connect_timeout", "10");
	expect_param(&url, 2, "application_name", "re shard+1");
	expect_param(&url, 3, "options", "-c a=b");
	expect_param(&url, 4, "sslmode", "require");
	expect_str(url.database, "app");
	url_clear(&url);

	/* Empty pieces are skipped, empty values kept, '=' in values kept. */
	parse_ok("mysql://h?&ssl-mode=REQUIRED&&ssl-ca=&x=a=b&", NULL, &url);
	assert_null(url.database);
	assert_int_equal(url.n_params, 3);
	expect_param(&url, 0, "ssl-mode", "REQUIRED");
	expect_param(&url, 1, "ssl-ca", "");
	expect_param(&url, 2, "x", "a=b");
	url_clear(&url);

	parse_ok("postgresql://h/app?", NULL, &url);
	assert_int_equal(url.n_params, 0);
	assert_null(url.params);
	url_clear(&url);

	/* ?password= becomes the URL's password and leaves the list. */
	parse_ok("postgresql://app@h/app?sslmode=require&password=" SECRET
	         "&connect_timeout=5",
	         NULL, &url);
	expect_str(url.password, SECRET);
	assert_int_equal(url.n_params, 2);
	assert_string_equal(url.params[0].name, "sslmode");
	assert_string_equal(url.params[1].name, "connect_timeout");
	assert_string_equal(url.masked,
	                    "postgresql://app@h/app?sslmode=require&"
	                    "password=****&connect_timeout=5");
	url_clear(&url);

	parse_fails("postgresql://h/app?sslmode",
	            "query parameter 1 has no '='");
	parse_fails("postgresql://h/app?a=1&=x",
	            "query parameter 2 has no name");
	parse_fails("postgresql://h/app?a%zz=1",
	            "the name of query parameter 1 has a '%'");
	parse_fails("postgresql://h/app?sslmode=%2", "the value of query "
	                                             "parameter 'sslmode' has "
	                                             "a '%'");
	parse_fails("postgresql://app:" SECRET "@h/app?password=other",
	            "gives the password twice");
}

static void
test_sqlite_paths(void **state)
{
	struct rs_url url;

	(void)state;
	parse_ok("sqlite:///srv/db0.db", NULL, &url);
	assert_int_equal(url.engine, RS_ENGINE_SQLITE);
	expect_str(url.database, "/srv/db0.db");
	assert_null(url.host);
	assert_null(url.user);
	assert_null(url.password);
	assert_int_equal(url.port, 0);
	url_clear(&url);

	/* An absolute path ignores the base directory. */
	parse_ok("sqlite:///srv/db0.db", "/plans", &url);
	expect_str(url.database, "/srv/db0.db");
	url_clear(&url);

	parse_ok("sqlite://shards/db0.db", "/plans", &url);
	expect_str(url.database, "/plans/shards/db0.db");
	assert_string_equal(url.masked, "sqlite://shards/db0.db");
	url_clear(&url);

	parse_ok("sqlite://shards/db0.db", "/plans/", &url);
	expect_str(url.database, "/plans/shards/db0.db");
	url_clear(&url);

	parse_ok("sqlite://db0.db", "plans", &url);
	expect_str(url.database, "plans/db0.db");
	url_clear(&url);

	parse_ok("sqlite://shards/db0.db", NULL, &url);
	expect_str(url.database, "shards/db0.db");
	url_clear(&url);

	parse_ok("sqlite://db0.db", "", &url);
	expect_str(url.database, "db0.db");
	url_clear(&url);

	/* No host part: what looks like one is a directory. */
	parse_ok("sqlite://localhost/x.db", "/p", &url);
	expect_str(url.database, "/p/localhost/x.db");
	assert_null(url.host);
	url_clear(&url);

	parse_ok("sqlite:///srv/my%20shard%23%3F.db?mode=ro&cache=shared", NULL,
	         &url);
	expect_str(url.database, "/srv/my shard#?.db");
	assert_int_equal(url.n_params, 2);
	expect_param(&url, 0, "mode", "ro");
	expect_param(&url, 1, "cache", "shared");
	url_clear(&url);

	/* '@' is an ordinary character of a file name; after a ':' it looks
	 * like a password and is masked in what is printed. */
	parse_ok("sqlite:///srv/a@b.db", NULL, &url);
	expect_str(url.database, "/srv/a@b.db");
	assert_string_equal(url.masked, "sqlite:///srv/a@b.db");
	url_clear(&url);
	parse_ok("sqlite:///srv/a:b@c.db", NULL, &url);
	expect_str(url.database, "/srv/a:b@c.db");
	assert_string_equal(url.masked, "sqlite:///srv/a:****@c.db");
	url_clear(&url);

	parse_fails("sqlite://", "it names no file");
	parse_fails("sqlite://?mode=ro", "it names no file");
	parse_fails("sqlite:///srv/x#y.db", "takes no #fragment");
	parse_fails("sqlite:///srv/x%zz.db", "the file path has a '%'");
}

static void
test_server_url_mistakes(void **state)
{
	(void)state;
	parse_fails("postgresql://app@h/app?application_name=me@corp",
	            "it has an '@' after the host");
	parse_fails("postgresql://h/app#top", "takes no #fragment");
	parse_fails("postgresql://h/app/extra", "the database name has a '/'");
	parse_fails("postgresql://h1,h2/app", "several hosts");
	parse_fails("postgresql://h1:5432,h2:5432/app", "several hosts");
	parse_fails("postgresql://h/my db", "a space or a control character");
	parse_fails("postgresql://h/app\n", "a space or a control character");
	parse_fails("postgresql://h/a%00b", "contains %00");
}

/* A long URL is cut in the message, so that what is wrong still shows. */
static void
test_long_url_message(void **state)
{
	char text[2100];
	struct rs_err err = {0};
	struct rs_url url;

	(void)state;
	strcpy(text, "postgresql://");
	memset(text + 13, 'd', 2000);
	strcpy(text + 2013, ":1:2/app");
	assert_int_equal(url_parse(text, NULL, &url, &err), RS_EUSAGE);
	assert_null(url.masked);
	assert_non_null(strstr(err.message, "dd...': "));
	assert_non_null(strstr(err.message, "an IPv6 address must be in "
	                                    "brackets"));
}

/* Nothing url.c prints for TEXT may contain SECRET_PIECE: not the masked
 * URL when TEXT parses, not the message when it does not, and, with
 * IN_MESSAGES, not url_mask_text(TEXT) either. */
static void
expect_secret_hidden(const char *text, int in_messages)
{
	struct rs_err err = {0};
	struct rs_url url;
	char *masked;
	int rc;

	assert_non_null(strstr(text, SECRET_PIECE)); /* the test's premise */
	rc = url_parse(text, "/plans", &url, &err);
	if (rc == 0) {
		if (strstr(url.masked, SECRET_PIECE) != NULL) {
			print_error("url_parse(\"%s\").masked = \"%s\"\n", text,
			            url.masked);
			fail();
		}
	} else if (strstr(err.message, SECRET_PIECE) != NULL ||
	           err.message[0] == '\0') {
		print_error("url_parse(\"%s\") error \"%s\"\n", text,
		            err.message);
		fail();
	}
	url_clear(&url);
	if (!in_messages)
		return;
	masked = url_mask_text(text);
	assert_non_null(masked);
	if (strstr(masked, SECRET_PIECE) != NULL) {
		print_error("url_mask_text(\"%s\") = \"%s\"\n", text, masked);
		fail();
	}
	free(masked);
}

static void
test_secret_never_printed(void **state)
{
	static const char *const texts[] = {
		/* accepted */
		"postgresql://app:" SECRET "@h/db",
		"mariadb://app:" SECRET ":more@h:3306/db",
		"postgresql://a@b:" SECRET "@h/db",
		"postgresql://h/db?password=" SECRET,
		"postgresql://h/db?sslmode=require&password=" SECRET "&x=1",
		"postgresql://h/db?sslpassword=" SECRET,
		"postgresql://h/db?PassWord=" SECRET,
		"sqlite:///x.db?password=" SECRET,
		"sqlite://app:" SECRET "@h/x.db",
		"postgresql://password=" SECRET ":x@h/db",
		"postgresql://h/db?x=1&password=" SECRET,
		/* refused, for every reason a URL with a password can be */
		"postgresql://app:" SECRET "@h:abc/db",
		"postgresql://app:" SECRET "@h:0/db",
		"postgresql://app:Zq7/xK9@h/db",
		"postgresql://app:Zq7?xK9@h/db",
		"postgresql://app:Zq7#xK9@h/db",
		"postgresql://app:" SECRET "%zz@h/db",
		"postgresql://app:" SECRET "%00@h/db",
		"postgresql://app:" SECRET "@h1,h2/db",
		"postgresql://app:" SECRET "@[::1/db",
		"postgresql://app:" SECRET "@h/a/b",
		"postgresql://app:" SECRET "@h/db?x=%zz",
		"postgresql://app:" SECRET "@h/db?bad",
		"postgresql://app:" SECRET "@h/db?password=other",
		"postgresql://app:" SECRET "@h/db?n=me@corp",
		"http://app:" SECRET "@h/db",
		"postgresql:/app:" SECRET "@h/db",
		"app:" SECRET "@h/db",
		"mysql://app:" SECRET "@h/db#x",
		"postgresql://h/db?password=" SECRET "&bad",
		"postgresql://h/db?pass%77ord=" SECRET "&bad",
		"postgresql://h/db?x%00password=" SECRET "&bad",
		"postgresql://h/db?sslpassword=" SECRET "#frag",
		"sqlite://app:" SECRET "@h/x.db#frag",
		"password=" SECRET ":x@h/db",
		"user=app password=" SECRET " host=h",
	};

	/* White space ends a URL inside a message, so url_mask_text cannot
	 * see these passwords whole; url_parse refuses them, masked. */
	static const char *const spaced[] = {
		"postgresql://app:Zq7 xK9@h/db",
		"postgresql://app:Zq7\txK9@h/db",
		"postgresql://app:Zq7\nxK9@h/db",
		"postgresql://h/db?password=Zq7 xK9",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(texts); i++)
		expect_secret_hidden(texts[i], 1);
	for (size_t i = 0; i < ARRAY_LEN(spaced); i++)
		expect_secret_hidden(spaced[i], 0);
}

static void
test_mask_text(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"could not connect to postgresql://app:pw@h/db: refused",
	         "could not connect to postgresql://app:****@h/db: refused"},
		{"\"mysql://u:p@ss@h/db?password=x&ssl-mode=REQUIRED\" failed",
	         "\"mysql://u:****@h/db?password=****&ssl-mode=REQUIRED\" "
	         "failed"},
		{"host=h port=5432 password=pw dbname=app",
	         "host=h port=5432 password=**** dbname=app"},
		{"password = 'p w\\'x' host=h", "password = '****' host=h"},
		{"PASSWORD=\"a b\"", "PASSWORD=\"****\""},
		{"sslpassword=pw passwd=pw pwd=pw x.password=pw",
	         "sslpassword=**** passwd=**** pwd=**** x.password=****"},
		{"a://u:x@h and b://v:y@k", "a://u:****@h and b://v:****@k"},
		/* A URL that lost its scheme, and a password with a ':'. */
		{"bad URL app:pw@h/db", "bad URL app:****@h/db"},
		{"(password=pw:x@h)", "(password=****@h)"},
		{"postgresql://password=pw:x@h/db",
	         "postgresql://password=****@h/db"},
		/* Nothing secret: unchanged. */
		{"postgresql://app@h:5432/db?sslmode=require",
	         "postgresql://app@h:5432/db?sslmode=require"},
		{"passfile=/home/app/.pgpass user=app",
	         "passfile=/home/app/.pgpass user=app"},
		{"duplicate key value violates unique constraint",
	         "duplicate key value violates unique constraint"},
		{"Access denied for user 'app'@'::1' (using password: YES)",
	         "Access denied for user 'app'@'::1' (using password: YES)"},
		{"FATAL:  password authentication failed for user \"app\"",
	         "FATAL:  password authentication failed for user \"app\""},
		{"", ""},
		/* When unsure, too much is hidden rather than too little. */
		{"postgresql://h:5432/db?n=a@b", "postgresql://h:****@b"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char *got = url_mask_text(cases[i].text);

		assert_non_null(got);
		if (strcmp(got, cases[i].want) != 0) {
			print_error("url_mask_text(\"%s\") = \"%s\", want "
			            "\"%s\"\n",
			            cases[i].text, got, cases[i].want);
			fail(); /* leaks GOT: the test is over */
		}
		free(got);
	}
	assert_null(url_mask_text(NULL));
}

static void
test_password_sources(void **state)
{
	struct rs_err err = {0};
	struct rs_url url;
	const char *password = "sentinel";

	(void)state;
	parse_ok("postgresql://app:" SECRET "@h/app", NULL, &url);

	/* No password_env: the URL's. */
	assert_int_equal(url_password(&url, NULL, &password, &err), 0);
	expect_str(password, SECRET);

	/* password_env wins over the URL. */
	assert_int_equal(setenv("RS_TEST_URL_PASSWORD", "from-env", 1), 0);
	assert_int_equal(
		url_password(&url, "RS_TEST_URL_PASSWORD", &password, &err), 0);
	expect_str(password, "from-env");

	/* Unset: an error naming the variable, and no password anywhere. */
	assert_int_equal(unsetenv("RS_TEST_URL_PASSWORD"), 0);
	password = "sentinel";
	assert_int_equal(
		url_password(&url, "RS_TEST_URL_PASSWORD", &password, &err),
		RS_EUSAGE);
	assert_null(password);
	assert_int_equal(err.code, RS_EUSAGE);
	assert_non_null(strstr(err.message, "RS_TEST_URL_PASSWORD"));
	assert_non_null(strstr(err.message, "not set"));
	assert_non_null(strstr(err.message, "postgresql://app:****@h/app"));
	assert_null(strstr(err.message, SECRET_PIECE));

	/* Set but empty: refused too. */
	assert_int_equal(setenv("RS_TEST_URL_PASSWORD", "", 1), 0);
	assert_int_equal(
		url_password(&url, "RS_TEST_URL_PASSWORD", &password, &err),
		RS_EUSAGE);
	assert_non_null(strstr(err.message, "is empty"));
	assert_int_equal(unsetenv("RS_TEST_URL_PASSWORD"), 0);

	assert_int_equal(url_password(&url, "", &password, &err), RS_EUSAGE);
	assert_non_null(strstr(err.message, "password_env for"));
	assert_null(strstr(err.message, SECRET_PIECE));
	url_clear(&url);

	/* No password at all: NULL, for libpq's ~/.pgpass. */
	parse_ok("postgresql://app@h/app", NULL, &url);
	password = "sentinel";
	assert_int_equal(url_password(&url, NULL, &password, &err), 0);
	assert_null(password);
	url_clear(&url);

	/* MariaDB: the message points at its option files. */
	parse_ok("mysql://app@h/app", NULL, &url);
	assert_int_equal(
		url_password(&url, "RS_TEST_URL_PASSWORD", &password, &err),
		RS_EUSAGE);
	assert_non_null(strstr(err.message, "MariaDB option files"));
	url_clear(&url);
}

static void
test_pg_conninfo(void **state)
{
	static const char *const want_kw[] = {
		"host",    "port",
		"user",    "password",
		"dbname",  "fallback_application_name",
		"sslmode", "application_name",
		NULL,
	};
	static const char *const want_val[] = {
		"::1",     "6432",        "app",   "from-env", "orders",
		"reshard", "verify-full", "mover", NULL,
	};
	struct rs_err err = {0};
	struct rs_url url;
	const char **kw, **val;
	size_t i;

	(void)state;
	parse_ok("postgresql://app:" SECRET "@[::1]:6432/orders?sslmode=verify-"
	         "full&application_name=mover",
	         NULL, &url);
	assert_int_equal(url_pg_conninfo(&url, "from-env", &kw, &val, &err), 0);
	for (i = 0; want_kw[i] != NULL; i++) {
		assert_non_null(kw[i]);
		assert_string_equal(kw[i], want_kw[i]);
		assert_string_equal(val[i], want_val[i]);
	}
	assert_null(kw[i]);
	assert_null(val[i]);
	url_pg_conninfo_free(kw);
	url_clear(&url);

	/* What the URL leaves out is left out, so libpq's defaults apply. */
	parse_ok("postgresql:///app?host=/tmp", NULL, &url);
	assert_int_equal(url_pg_conninfo(&url, NULL, &kw, &val, &err), 0);
	assert_string_equal(kw[0], "dbname");
	assert_string_equal(val[0], "app");
	assert_string_equal(kw[1], "fallback_application_name");
	assert_string_equal(kw[2], "host");
	assert_string_equal(val[2], "/tmp");
	assert_null(kw[3]);
	url_pg_conninfo_free(kw);
	url_clear(&url);

	parse_ok("mysql://h/app", NULL, &url);
	kw = val = (const char **)&url; /* must be reset */
	assert_int_equal(url_pg_conninfo(&url, NULL, &kw, &val, &err),
	                 RS_EINTERNAL);
	assert_null(kw);
	assert_null(val);
	url_clear(&url);
	url_pg_conninfo_free(NULL);
}

static void
test_mysql_target(void **state)
{
	struct rs_err err = {0};
	struct rs_url url;
	struct rs_url_mysql target;

	(void)state;
	parse_ok("mysql://app:" SECRET "@db1:3307/shop?ssl-mode=VERIFY_IDENTITY"
	         "&ssl_ca=%2Fetc%2Fca.pem",
	         NULL, &url);
	assert_int_equal(url_mysql_target(&url, url.password, &target, &err),
	                 0);
	expect_str(target.host, "db1");
	assert_null(target.unix_socket);
	assert_int_equal(target.port, 3307);
	expect_str(target.user, "app");
	expect_str(target.password, SECRET);
	expect_str(target.db, "shop");
	assert_int_equal(target.n_options, 2);
	assert_true(url_param_name_is(&target.options[0], "ssl-mode"));
	assert_true(url_param_name_is(&target.options[0], "SSL_MODE"));
	assert_string_equal(target.options[0].value, "VERIFY_IDENTITY");
	assert_true(url_param_name_is(&target.options[1], "ssl-ca"));
	assert_false(url_param_name_is(&target.options[1], "ssl-cap"));
	assert_false(url_param_name_is(&target.options[1], "ssl"));
	assert_false(url_param_name_is(&target.options[1], NULL));
	assert_string_equal(target.options[1].value, "/etc/ca.pem");
	url_clear(&url);

	/* A host that is a path is the socket; no password means NULL. */
	parse_ok("mariadb://app@%2Frun%2Fmysqld%2Fmysqld.sock/shop", NULL,
	         &url);
	assert_int_equal(url_mysql_target(&url, NULL, &target, &err), 0);
	assert_null(target.host);
	expect_str(target.unix_socket, "/run/mysqld/mysqld.sock");
	assert_int_equal(target.port, 0);
	assert_null(target.password);
	assert_int_equal(target.n_options, 0);
	url_clear(&url);

	parse_ok("sqlite:///x.db", NULL, &url);
	assert_int_equal(url_mysql_target(&url, NULL, &target, &err),
	                 RS_EINTERNAL);
	assert_null(target.db);
	url_clear(&url);
}

static void
test_clear(void **state)
{
	struct rs_url url;

	(void)state;
	parse_ok("postgresql://app:" SECRET "@h/app?sslmode=require", NULL,
	         &url);
	url_clear(&url);
	assert_null(url.user);
	assert_null(url.password);
	assert_null(url.params);
	assert_null(url.masked);
	assert_int_equal(url.n_params, 0);
	url_clear(&url); /* twice is harmless */
	url_clear(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schemes_and_aliases),
		cmocka_unit_test(test_all_parts),
		cmocka_unit_test(test_percent_encoding),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_missing_parts),
		cmocka_unit_test(test_bad_scheme),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_query_params_in_order),
		cmocka_unit_test(test_sqlite_paths),
		cmocka_unit_test(test_server_url_mistakes),
		cmocka_unit_test(test_long_url_message),
		cmocka_unit_test(test_secret_never_printed),
		cmocka_unit_test(test_mask_text),
		cmocka_unit_test(test_password_sources),
		cmocka_unit_test(test_pg_conninfo),
		cmocka_unit_test(test_mysql_target),
		cmocka_unit_test(test_clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
