/*
 * Shard URLs and their secrets (DESIGN §4, §7 rule 7).
 *
 * A shard is named by a URL: postgresql:// or postgres:// for PostgreSQL,
 * mysql:// or mariadb:// for MariaDB/MySQL, sqlite:// for SQLite.  url_parse
 * splits one into its parts and keeps, beside them, a masked copy that is the
 * only form of the URL ever printed, logged or stored: the password after
 * "user:" and the value of every password-like query parameter are replaced
 * by "****".  Error messages quote that masked form and nothing else from the
 * URL, so no message can carry a secret.
 *
 * Grammar, for the server engines:
 *
 *     scheme://[user[:password]@][host][:port][/database][?name=value&...]
 *
 * The user information ends at the last '@' before the first '/', '?' or
 * '#', so a password may hold ':' and '@' as they are, but '/', '?' and '#'
 * must be percent-encoded (%2F, %3F, %23).  A raw '@' later in the URL is
 * refused, because it almost always means such a password was not encoded
 * (and it would otherwise end up printed as part of a database name).  An
 * IPv6 host is written in brackets ([::1]); a host that starts with '/'
 * once decoded (%2Frun%2Fpostgresql) is a Unix socket directory (PostgreSQL)
 * or socket file (MariaDB).  '+' is a '+', not a space.  An empty user or
 * password (":@") counts as absent, as it does for libpq.
 *
 * For sqlite:// everything up to '?' is the file path: sqlite:///srv/db0.db
 * is the absolute /srv/db0.db, and sqlite://shards/db0.db is the relative
 * shards/db0.db, resolved against the base directory given to url_parse (the
 * plan's directory), the way the plan's journal path is.  There is no host
 * part: sqlite://localhost/x.db is the relative path localhost/x.db.  '~' is
 * not expanded.
 *
 * Query parameters are passed through in order, percent-decoded, for the
 * engine's driver to check: sslmode, connect_timeout, application_name for
 * libpq; ssl-mode, ssl-ca, connect-timeout for MariaDB.  The one exception
 * is `password`, which for the server engines is taken out of the list and
 * becomes the URL's password, so that password_env can override it.
 *
 * Where passwords come from (url_password): password_env when the plan names
 * one, else the URL (for throwaway setups), else nobody here: the driver
 * looks itself, libpq in ~/.pgpass or PGPASSFILE, MariaDB Connector/C in its
 * option files.
 */
#ifndef RS_URL_H
#define RS_URL_H

#include "common/err.h"

enum rs_engine {
	RS_ENGINE_POSTGRES, /* postgresql://, postgres:// */
	RS_ENGINE_MYSQL,    /* mysql://, mariadb:// */
	RS_ENGINE_SQLITE,   /* sqlite:// */
};

struct rs_url_param {
	char *name;  /* percent-decoded, never empty */
	char *value; /* percent-decoded, possibly empty */
};

struct rs_url {
	enum rs_engine engine;
	char *user;     /* NULL when absent; percent-decoded */
	char *password; /* NULL when absent; percent-decoded; never printed */
	char *host;     /* NULL when absent; an IPv6 literal without brackets */
	int port;       /* 1 to 65535, or 0 when absent */
	char *database; /* decoded path without its '/'; NULL when absent; for
	                   sqlite the file path, resolved against base_dir */
	struct rs_url_param *params; /* query parameters in order, decoded */
	int n_params;
	char *masked; /* the URL as written, secrets replaced by "****" as
	                 url_mask_text does, reading the text as one URL:
	                 the only form that may be printed, logged, stored */
};

/* Parse TEXT into *URL (which need not be initialised).  A relative sqlite
 * path is joined to BASE_DIR unless BASE_DIR is NULL or empty, in which case
 * it stays relative to the working directory.
 *
 * On error returns RS_EUSAGE (RS_ENOMEM when out of memory), leaves *URL
 * empty (url_clear on it is harmless) and writes to ERR a message of the
 * form "URL 'MASKED': what is wrong and what would be right", where MASKED
 * is TEXT masked like url->masked (white space included: all of TEXT up to
 * its last '@' counts as the user information), never the password. */
int url_parse(const char *text, const char *base_dir, struct rs_url *url,
              struct rs_err *err);

/* Free everything *URL owns, wiping the password first, and leave it empty.
 * URL may be NULL; clearing an empty or cleared url does nothing. */
void url_clear(struct rs_url *url);

/* The engine's canonical scheme: "postgresql", "mysql" or "sqlite" ("unknown"
 * for a value outside the enum).  Never fails. */
const char *url_engine_name(enum rs_engine engine);

/* Choose the password for URL: the value of the environment variable
 * PASSWORD_ENV when it is not NULL, else the URL's password, else NULL, which
 * means "let the driver find it" (libpq: ~/.pgpass or PGPASSFILE; MariaDB:
 * its option files).  *PASSWORD is borrowed from the environment or from URL
 * and stays valid until the variable changes or URL is cleared.
 *
 * On error (PASSWORD_ENV is "", or the variable is not set or is empty)
 * returns RS_EUSAGE, sets *PASSWORD to NULL and writes a message naming the
 * variable and the masked URL, never a password. */
int url_password(const struct rs_url *url, const char *password_env,
                 const char **password, struct rs_err *err);

/* Mask the secrets inside an arbitrary message, for instance a driver's
 * error text that echoes the connection string:
 *   - "://user:secret@" becomes "://user:****@", up to the last '@' before
 *     the next white space; so does a word "user:secret@host" that lost
 *     its scheme;
 *   - "password=secret" becomes "password=****", for every key containing
 *     "pass" (sslpassword, passwd; not passfile), "pwd", "secret" or
 *     "token", in any case and percent-encoded or not, with or without
 *     spaces around '=' and with quoted values ('se cret') as in libpq's
 *     conninfo; in a URL the value ends at '&', elsewhere at white space.
 * When unsure it masks too much rather than too little: "h:5432/db?n=a@b"
 * becomes "h:****@b", and a file name "/srv/a:b@c.db" "/srv/a:****@c.db".
 * A password with white space inside a URL cannot be recognised in a
 * message; url_parse refuses such URLs.
 *
 * Returns a new string that the caller frees, or NULL when TEXT is NULL or
 * memory runs out. */
char *url_mask_text(const char *text);

/* Whether the parameter PARAM is called NAME, the way MariaDB reads option
 * names: ignoring case, '-' and '_' alike ("ssl_mode" is "ssl-mode").  Never
 * fails; NULL arguments are never equal. */
int url_param_name_is(const struct rs_url_param *param, const char *name);

/* The arguments of PQconnectStartParams for a postgresql:// URL, without
 * depending on libpq: two NULL-terminated arrays, in this order host, port,
 * user, password, dbname, fallback_application_name ("reshard"), then every
 * query parameter as written.  A part the URL leaves out is left out, so
 * libpq applies its defaults (PGHOST, ~/.pgpass...); a query parameter with
 * the same keyword as an earlier entry wins, as in libpq's own URIs
 * (postgresql:///app?host=/tmp).  PASSWORD is url_password's choice and may
 * be NULL.
 *
 * Call PQconnectStartParams(*KEYWORDS, *VALUES, 0): expand_dbname must be 0,
 * so that a database name is never read as a connection string.  The values
 * point into URL and PASSWORD, which must outlive the arrays; free both
 * arrays with url_pg_conninfo_free(*KEYWORDS) (one allocation; never free
 * *VALUES).
 *
 * On error returns RS_ENOMEM, or RS_EINTERNAL when URL is not a PostgreSQL
 * URL, sets both arrays to NULL and writes ERR. */
int url_pg_conninfo(const struct rs_url *url, const char *password,
                    const char ***keywords, const char ***values,
                    struct rs_err *err);

/* Free the arrays of url_pg_conninfo (KEYWORDS may be NULL). */
void url_pg_conninfo_free(const char **keywords);

/* The arguments of mysql_real_connect for a mysql:// URL.  Every pointer is
 * borrowed from the url and the password given to url_mysql_target; nothing
 * needs freeing.  NULL means "not given": the backend calls
 * mysql_optionsv(MYSQL_READ_DEFAULT_GROUP, "client") so that MariaDB's
 * option files supply it (then the driver's defaults apply). */
struct rs_url_mysql {
	const char *host;        /* NULL: option files, else localhost */
	const char *unix_socket; /* the host when it is a path; host is NULL */
	unsigned int port;       /* 0: option files, else 3306 */
	const char *user;        /* NULL: option files, else the login name */
	const char *password;    /* NULL: option files, else none */
	const char *db;          /* NULL: no default database */
	const struct rs_url_param *options; /* the query parameters in order
	                                       (ssl-mode, ssl-ca, ...): the
	                                       backend maps each to
	                                       mysql_optionsv and refuses the
	                                       names it does not know */
	int n_options;
};

/* Fill *TARGET from a mysql:// URL and PASSWORD (url_password's choice, may
 * be NULL).  On error (URL is not a MariaDB/MySQL URL) returns RS_EINTERNAL,
 * zeroes *TARGET and writes ERR. */
int url_mysql_target(const struct rs_url *url, const char *password,
                     struct rs_url_mysql *target, struct rs_err *err);

#endif
