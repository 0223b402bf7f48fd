/*
 * The plan's canonical text, for the journal's fingerprint.
 */
#include "engine/plan_text.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/url.h"
#include "common/strbuf.h"
#include "common/text.h"

/* Overrides listed one a line in the text; more are fingerprinted. */
#define PLAN_TEXT_MAX_OVERRIDES 1000

/* Append one line: a printf-style text and a newline. */
static void text_line(struct rs_strbuf *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
text_line(struct rs_strbuf *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vprintf(t, fmt, ap);
	va_end(ap);
	strbuf_add(t, "\n", 1);
}

/* Append the LEN bytes of KEY escaped (text.h), every one of them: a
 * message cuts a long key (text_key_shown), but the fingerprint must
 * change with any byte of a pinned key.  A key a message shows whole is
 * written as it shows it, as releases before this one wrote every key,
 * so that their journals still resume.  Out of memory sets T->failed. */
static void
text_key(struct rs_strbuf *t, const char *key, size_t len)
{
	if (len > SIZE_MAX / TEXT_ESCAPE_GROWTH ||
	    strbuf_reserve(t, TEXT_ESCAPE_GROWTH * len) != 0) {
		t->failed = 1;
		return;
	}
	t->len += text_escape_key(key, len, t->text + t->len);
	t->text[t->len] = '\0';
}

/* The overrides of DEF: each on its line when there are few, else their
 * count and a SHA-256 of them all (a plan that pins a million keys keeps
 * a short fingerprint text; a changed key still changes it). */
static void
text_overrides(struct rs_strbuf *t, const char *which,
               const struct rs_plan *plan, const struct rs_map_def *def)
{
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *md;

	if (def->n_overrides <= PLAN_TEXT_MAX_OVERRIDES) {
		for (int i = 0; i < def->n_overrides; i++) {
			const struct rs_map_override *o = &def->overrides[i];

			strbuf_printf(t, "%s.overrides[%d] = key '", which, i);
			text_key(t, o->key, o->len);
			text_line(t, "' node %s", plan->shards[o->shard].name);
		}
		return;
	}
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		t->failed = 1;
		return;
	}
	for (int i = 0; i < def->n_overrides; i++) {
		const struct rs_map_override *o = &def->overrides[i];
		const char *node = plan->shards[o->shard].name;
		uint64_t n = o->len;

		/* Length-prefixed: no key can pass for another. */
		if (EVP_DigestUpdate(md, &n, sizeof(n)) != 1 ||
		    EVP_DigestUpdate(md, o->key, o->len) != 1 ||
		    EVP_DigestUpdate(md, node, strlen(node) + 1) != 1)
			len = (unsigned)-1;
	}
	if (len != 0 || EVP_DigestFinal_ex(md, digest, &len) != 1) {
		EVP_MD_CTX_free(md);
		t->failed = 1;
		return;
	}
	EVP_MD_CTX_free(md);
	for (unsigned i = 0; i < len; i++)
		snprintf(hex + 2 * (size_t)i, 3, "%02x", digest[i]);
	text_line(t, "%s.overrides = %d keys, sha256 %s", which,
	          def->n_overrides, hex);
}

static void
text_map(struct rs_strbuf *t, const char *which, const struct rs_plan *plan,
         const struct rs_map_def *def)
{
	text_line(t, "%s.map = %s", which, map_kind_name(def->kind));
	text_overrides(t, which, plan, def);
	for (int i = 0; i < def->n_nodes; i++)
		text_line(t, "%s.nodes[%d] = %s", which, i,
		          plan->shards[def->nodes[i]].name);
	if (def->kind == RS_MAP_SLOTS)
		text_line(t,
		          "%s.databases = %d; tables_per_db = %d; "
		          "table_format = %s",
		          which, def->databases, def->tables_per_db,
		          def->table_format ? def->table_format
		                            : RS_TABLE_FORMAT_DEFAULT);
	if (def->kind == RS_MAP_RING)
		text_line(t, "%s.vnodes = %d", which, def->vnodes);
	if (def->kind == RS_MAP_LOGICAL) {
		if (def->bits > 0)
			text_line(t, "%s.shift = %d; bits = %d", which,
			          def->shift, def->bits);
		else
			text_line(t, "%s.logical_shards = %llu", which,
			          (unsigned long long)def->logical_shards);
		for (int i = 0; i < def->n_ranges; i++)
			text_line(t, "%s.assign[%d] = last %llu node %s", which,
			          i, (unsigned long long)def->ranges[i].end,
			          plan->shards[def->ranges[i].shard].name);
		return;
	}
	for (int i = 0; i < def->n_ranges; i++)
		text_line(t, "%s.ranges[%d] = end 0x%016llx node %s", which, i,
		          (unsigned long long)def->ranges[i].end,
		          plan->shards[def->ranges[i].shard].name);
}

char *
engine_plan_text(const struct rs_plan *plan)
{
	struct rs_strbuf t = {0};

	text_line(&t, "version = %d", plan->version);
	text_line(&t, "name = %s", plan->name);
	text_line(&t, "hash = %s", hash_name(plan->hash));
	text_line(&t, "strategy = %s", plan_strategy_name(plan->strategy));
	for (int i = 0; i < plan->n_tables; i++)
		text_line(&t, "tables[%d] = %s key %s", i, plan->tables[i].name,
		          plan->tables[i].key);
	for (int i = 0; i < plan->n_shards; i++) {
		const struct rs_plan_shard *s = &plan->shards[i];
		char *masked = url_mask_text(s->url);

		text_line(&t, "shards[%d] = %s url %s replica %s", i, s->name,
		          masked != NULL ? masked : "?",
		          s->replica >= 0 ? plan->shards[s->replica].name
		                          : "-");
		free(masked);
	}
	text_map(&t, "from", plan, &plan->from_def);
	text_map(&t, "to", plan, &plan->to_def);
	text_line(&t, "publish.file = %s", plan->publish_file);
	return strbuf_finish(&t);
}

void
engine_plan_fingerprint(const char *text, char hex[65])
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	hex[0] = '\0';
	if (EVP_Digest(text, strlen(text), digest, &len, EVP_sha256(), NULL) !=
	    1)
		len = 0; /* libcrypto failed: no fingerprint, refused later */
	for (size_t i = 0; i < len && i < 32; i++)
		snprintf(hex + 2 * (size_t)i, 3, "%02x", digest[i]);
}

int
engine_open_journal(const struct rs_plan *plan, const char *command,
                    struct rs_journal **journal, struct rs_err *err)
{
	char *text = engine_plan_text(plan);
	char hex[65];
	int rc;

	if (text == NULL)
		return rs_err_set(err, RS_ENOMEM, "out of memory");
	engine_plan_fingerprint(text, hex);
	rc = journal_open_as(plan->journal, hex, text, command, journal, err);
	free(text);
	return rc;
}
