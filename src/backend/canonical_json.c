/*
 * JSON in the canonical form (the rules are in canonical.h): a recursive
 * reader over the value's text that writes the normalised document as it
 * goes: no insignificant whitespace, strings decoded and re-escaped the
 * one way, numbers as canonical decimals, object members sorted by key
 * with the last duplicate kept (jsonb's rule), at most JSON_MAX_DEPTH
 * arrays and objects deep.  canon_read_json follows the contract of
 * canonical_impl.h.
 */
#include "backend/canonical_impl.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most arrays and objects nested in one another (MySQL allows 100;
 * jsonb rarely holds more). */
#define JSON_MAX_DEPTH 1000

struct json_reader {
	struct cursor c;
	struct rs_err *err;
	const char **why;
};

/* One object member while its object is read: the key's decoded bytes
 * and its value's canonical text, both in the object's scratch buffer. */
struct json_member {
	size_t key_off, key_len;
	size_t value_off, value_len;
	size_t index;    /* position in the object, to keep the last dup */
	const char *key; /* set once the scratch buffer stops moving */
};

static int json_value(struct json_reader *r, struct rs_canon_buf *out,
                      int depth);

static int
json_fail(struct json_reader *r, const char *why)
{
	*r->why = why;
	return RS_EVALUE;
}

static void
json_blanks(struct json_reader *r)
{
	while (r->c.i < r->c.len &&
	       (r->c.s[r->c.i] == ' ' || r->c.s[r->c.i] == '\t' ||
	        r->c.s[r->c.i] == '\n' || r->c.s[r->c.i] == '\r'))
		r->c.i++;
}

static int
json_utf8(struct rs_canon_buf *out, unsigned long cp, struct rs_err *err)
{
	unsigned char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | (cp >> 6));
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | (cp >> 12));
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | (cp >> 18));
		b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return canonical_buf_append(out, b, n, err);
}

/* Four hex digits of a \u escape. */
static bool
json_hex4(struct json_reader *r, unsigned long *cp)
{
	*cp = 0;
	if (r->c.len - r->c.i < 4)
		return false;
	for (int k = 0; k < 4; k++) {
		int v = text_hex_digit(r->c.s[r->c.i + (size_t)k]);

		if (v < 0)
			return false;
		*cp = *cp * 16 + (unsigned long)v;
	}
	r->c.i += 4;
	return true;
}

/* Read a string (the cursor on its '"') and append its decoded bytes. */
static int
json_string_decode(struct json_reader *r, struct rs_canon_buf *out)
{
	r->c.i++;
	for (;;) {
		size_t start = r->c.i;
		unsigned long cp, low;
		char ch;
		int rc;

		while (r->c.i < r->c.len && r->c.s[r->c.i] != '"' &&
		       r->c.s[r->c.i] != '\\' &&
		       (unsigned char)r->c.s[r->c.i] >= 0x20)
			r->c.i++;
		rc = canonical_buf_append(out, r->c.s + start, r->c.i - start,
		                          r->err);
		if (rc != 0)
			return rc;
		if (r->c.i >= r->c.len)
			return json_fail(r,
			                 "a string without its closing quote");
		ch = r->c.s[r->c.i++];
		if (ch == '"')
			return 0;
		if (ch != '\\')
			return json_fail(r, "a control character in a string");
		if (r->c.i >= r->c.len)
			return json_fail(r,
			                 "a string without its closing quote");
		ch = r->c.s[r->c.i++];
		switch (ch) {
		case '"':
		case '\\':
		case '/':
			rc = buf_putc(out, ch, r->err);
			break;
		case 'b':
			rc = buf_putc(out, '\b', r->err);
			break;
		case 'f':
			rc = buf_putc(out, '\f', r->err);
			break;
		case 'n':
			rc = buf_putc(out, '\n', r->err);
			break;
		case 'r':
			rc = buf_putc(out, '\r', r->err);
			break;
		case 't':
			rc = buf_putc(out, '\t', r->err);
			break;
		case 'u':
			if (!json_hex4(r, &cp))
				return json_fail(r, "\\u not followed by four "
				                    "hex digits");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return json_fail(r, "a lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (r->c.len - r->c.i < 2 ||
				    r->c.s[r->c.i] != '\\' ||
				    r->c.s[r->c.i + 1] != 'u')
					return json_fail(r, "a lone high "
					                    "surrogate");
				r->c.i += 2;
				if (!json_hex4(r, &low) || low < 0xdc00 ||
				    low > 0xdfff)
					return json_fail(r, "a lone high "
					                    "surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (low - 0xdc00);
			}
			rc = json_utf8(out, cp, r->err);
			break;
		default:
			return json_fail(r, "an unknown escape in a string");
		}
		if (rc != 0)
			return rc;
	}
}

/* Append BYTES as a canonical JSON string. */
static int
json_string_write(struct rs_canon_buf *out, const char *bytes, size_t n,
                  struct rs_err *err)
{
	int rc = buf_putc(out, '"', err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		unsigned char ch = (unsigned char)bytes[i];

		switch (ch) {
		case '"':
			rc = buf_puts(out, "\\\"", err);
			break;
		case '\\':
			rc = buf_puts(out, "\\\\", err);
			break;
		case '\b':
			rc = buf_puts(out, "\\b", err);
			break;
		case '\f':
			rc = buf_puts(out, "\\f", err);
			break;
		case '\n':
			rc = buf_puts(out, "\\n", err);
			break;
		case '\r':
			rc = buf_puts(out, "\\r", err);
			break;
		case '\t':
			rc = buf_puts(out, "\\t", err);
			break;
		default:
			if (ch < 0x20) {
				char escape[8];

				snprintf(escape, sizeof(escape), "\\u%04x", ch);
				rc = buf_puts(out, escape, err);
			} else {
				rc = buf_putc(out, (char)ch, err);
			}
		}
	}
	return rc != 0 ? rc : buf_putc(out, '"', err);
}

/* A number in JSON's grammar, written as a canonical decimal. */
static int
json_number(struct json_reader *r, struct rs_canon_buf *out)
{
	struct cursor *c = &r->c;
	size_t start = c->i;
	struct decimal_text d;

	cursor_take(c, '-');
	if (cursor_take(c, '0')) {
		/* no more integer digits after a leading 0 */
	} else if (c->i < c->len && is_digit(c->s[c->i])) {
		while (c->i < c->len && is_digit(c->s[c->i]))
			c->i++;
	} else {
		return json_fail(r, "not a JSON value");
	}
	if (cursor_take(c, '.')) {
		if (c->i >= c->len || !is_digit(c->s[c->i]))
			return json_fail(r, "no digits after a number's point");
		while (c->i < c->len && is_digit(c->s[c->i]))
			c->i++;
	}
	if (cursor_take(c, 'e') || cursor_take(c, 'E')) {
		if (!cursor_take(c, '+'))
			cursor_take(c, '-');
		if (c->i >= c->len || !is_digit(c->s[c->i]))
			return json_fail(r, "no digits in a number's exponent");
		while (c->i < c->len && is_digit(c->s[c->i]))
			c->i++;
	}
	if (!canon_decimal_parse(c->s + start, c->i - start, &d))
		return json_fail(r, "not a JSON number");
	return canon_decimal_write(&d, out, r->err, r->why);
}

static int
json_member_compare(const void *a, const void *b)
{
	const struct json_member *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int cmp = n > 0 ? memcmp(x->key, y->key, n) : 0;

	if (cmp != 0)
		return cmp;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Read an object's members into SCRATCH and *MEMBERS, then write them
 * sorted, the last of each duplicate key only. */
static int
json_object_members(struct json_reader *r, struct rs_canon_buf *out, int depth,
                    struct rs_canon_buf *scratch, struct json_member **members)
{
	size_t n = 0, cap = 0;
	bool first = true;
	int rc;

	r->c.i++;
	json_blanks(r);
	if (cursor_take(&r->c, '}'))
		return buf_puts(out, "{}", r->err);
	for (;;) {
		struct json_member *m;

		if (n == cap) {
			size_t more = cap == 0 ? 8 : cap * 2;
			struct json_member *grown =
				realloc(*members, more * sizeof(**members));

			if (grown == NULL)
				return rs_err_set(r->err, RS_ENOMEM,
				                  "out of memory reading JSON");
			*members = grown;
			cap = more;
		}
		m = &(*members)[n];
		m->index = n;
		json_blanks(r);
		if (r->c.i >= r->c.len || r->c.s[r->c.i] != '"')
			return json_fail(r, "an object key that is not a "
			                    "string");
		m->key_off = scratch->len;
		if ((rc = json_string_decode(r, scratch)) != 0)
			return rc;
		m->key_len = scratch->len - m->key_off;
		json_blanks(r);
		if (!cursor_take(&r->c, ':'))
			return json_fail(r, "no ':' after an object key");
		json_blanks(r);
		m->value_off = scratch->len;
		if ((rc = json_value(r, scratch, depth + 1)) != 0)
			return rc;
		m->value_len = scratch->len - m->value_off;
		n++;
		json_blanks(r);
		if (cursor_take(&r->c, '}'))
			break;
		if (!cursor_take(&r->c, ','))
			return json_fail(r, "no ',' or '}' after an object "
			                    "member");
	}
	for (size_t k = 0; k < n; k++)
		(*members)[k].key = scratch->data + (*members)[k].key_off;
	qsort(*members, n, sizeof(**members), json_member_compare);
	if ((rc = buf_putc(out, '{', r->err)) != 0)
		return rc;
	for (size_t k = 0; k < n; k++) {
		const struct json_member *m = &(*members)[k];

		if (k + 1 < n && m->key_len == m[1].key_len &&
		    memcmp(m->key, m[1].key, m->key_len) == 0)
			continue; /* a later duplicate wins */
		if ((!first && (rc = buf_putc(out, ',', r->err)) != 0) ||
		    (rc = json_string_write(out, m->key, m->key_len, r->err)) !=
		            0 ||
		    (rc = buf_putc(out, ':', r->err)) != 0 ||
		    (rc = canonical_buf_append(out,
		                               scratch->data + m->value_off,
		                               m->value_len, r->err)) != 0)
			return rc;
		first = false;
	}
	return buf_putc(out, '}', r->err);
}

static int
json_object(struct json_reader *r, struct rs_canon_buf *out, int depth)
{
	struct rs_canon_buf scratch = RS_CANON_BUF_INIT;
	struct json_member *members = NULL;
	int rc;

	if (depth >= JSON_MAX_DEPTH)
		return json_fail(r, "nested deeper than 1000 levels");
	rc = json_object_members(r, out, depth, &scratch, &members);

	free(members);
	canonical_buf_free(&scratch);
	return rc;
}

static int
json_array(struct json_reader *r, struct rs_canon_buf *out, int depth)
{
	int rc;

	if (depth >= JSON_MAX_DEPTH)
		return json_fail(r, "nested deeper than 1000 levels");
	r->c.i++;
	if ((rc = buf_putc(out, '[', r->err)) != 0)
		return rc;
	json_blanks(r);
	if (cursor_take(&r->c, ']'))
		return buf_putc(out, ']', r->err);
	for (;;) {
		json_blanks(r);
		if ((rc = json_value(r, out, depth + 1)) != 0)
			return rc;
		json_blanks(r);
		if (cursor_take(&r->c, ']'))
			return buf_putc(out, ']', r->err);
		if (!cursor_take(&r->c, ','))
			return json_fail(r, "no ',' or ']' after an array "
			                    "element");
		if ((rc = buf_putc(out, ',', r->err)) != 0)
			return rc;
	}
}

/* One value, the cursor on its first byte. */
static int
json_value(struct json_reader *r, struct rs_canon_buf *out, int depth)
{
	static const char *const literals[] = {"true", "false", "null"};
	const char *rest = r->c.s + r->c.i;
	size_t left = r->c.len - r->c.i;

	if (left == 0)
		return json_fail(r, "a value is missing");
	if (*rest == '{')
		return json_object(r, out, depth);
	if (*rest == '[')
		return json_array(r, out, depth);
	if (*rest == '"') {
		struct rs_canon_buf decoded = RS_CANON_BUF_INIT;
		int rc = json_string_decode(r, &decoded);

		if (rc == 0)
			rc = json_string_write(out, decoded.data, decoded.len,
			                       r->err);
		canonical_buf_free(&decoded);
		return rc;
	}
	for (size_t k = 0; k < ARRAY_LEN(literals); k++) {
		size_t n = strlen(literals[k]);

		if (left >= n && memcmp(rest, literals[k], n) == 0) {
			r->c.i += n;
			return buf_puts(out, literals[k], r->err);
		}
	}
	return json_number(r, out);
}

int
canon_read_json(const char *s, size_t len, struct rs_canon_buf *out,
                struct rs_err *err, const char **why)
{
	struct json_reader r = {{s, len, 0}, err, why};
	int rc;

	json_blanks(&r);
	if ((rc = json_value(&r, out, 0)) != 0)
		return rc;
	json_blanks(&r);
	if (r.c.i != len) {
		*why = "more after the JSON value";
		return RS_EVALUE;
	}
	return 0;
}
