/*
 * Text helpers for messages: misspelling suggestions, number and time
 * formatting, and escaping keys (the format is described in text.h).
 */
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t
text_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row = malloc((lb + 1) * sizeof(size_t));
	size_t result;

	if (row == NULL)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	result = row[lb];
	free(row);
	return result;
}

const char *
text_closest(const char *word, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t best_distance = (size_t)-1;

	for (size_t i = 0; i < n; i++) {
		size_t d = text_edit_distance(word, words[i]);
		size_t longer = strlen(word) > strlen(words[i])
		                        ? strlen(word)
		                        : strlen(words[i]);
		size_t limit = longer / 3 < 2 ? 2 : longer / 3;

		if (d <= limit && d < best_distance) {
			best_distance = d;
			best = words[i];
		}
	}
	return best;
}

size_t
text_int64(int64_t v, char *out)
{
	static const char pairs[201] = "00010203040506070809"
				       "10111213141516171819"
				       "20212223242526272829"
				       "30313233343536373839"
				       "40414243444546474849"
				       "50515253545556575859"
				       "60616263646566676869"
				       "70717273747576777879"
				       "80818283848586878889"
				       "90919293949596979899";
	/* The magnitude as unsigned: INT64_MIN has no positive int64. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	char digits[TEXT_INT64_SIZE];
	size_t first = sizeof(digits), n = 0;

	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;

		u /= 100;
		digits[--first] = pairs[d + 1];
		digits[--first] = pairs[d];
	}
	if (u >= 10) {
		digits[--first] = pairs[u * 2 + 1];
		digits[--first] = pairs[u * 2];
	} else
		digits[--first] = (char)('0' + u);
	if (v < 0)
		out[n++] = '-';
	memcpy(out + n, digits + first, sizeof(digits) - first);
	return n + sizeof(digits) - first;
}

char *
text_thousands(uint64_t v, char *buf, size_t size)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	size_t k = 0;

	for (int i = 0; i < n && k + 2 < size; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	if (size > 0)
		buf[k < size ? k : size - 1] = '\0';
	return buf;
}

char *
text_iso_time(int64_t ms, char *buf, size_t size)
{
	/* Floor division, so that a time before 1970 keeps its order. */
	int64_t secs = ms / 1000 - (ms % 1000 < 0);
	int frac = (int)(ms - secs * 1000);
	time_t t = (time_t)secs;
	struct tm tm;
	char day[24];

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return buf;
	if ((size_t)snprintf(buf, size, "%s.%03dZ", day, frac) >= size)
		buf[0] = '\0';
	return buf;
}

int
text_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *
text_hex_encode(const void *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = bytes;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	return out;
}

/* The escape of byte C into OUT (1 to 4 bytes); returns how many. */
static size_t
text_escape_one(unsigned char c, char *out)
{
	static const char hex[] = "0123456789abcdef";
	char letter = 0;

	if (!text_escape_byte(c)) {
		out[0] = (char)c;
		return 1;
	}
	switch (c) {
	case '\\':
		letter = '\\';
		break;
	case '\t':
		letter = 't';
		break;
	case '\n':
		letter = 'n';
		break;
	case '\r':
		letter = 'r';
		break;
	case '\b':
		letter = 'b';
		break;
	case '\f':
		letter = 'f';
		break;
	case '\v':
		letter = 'v';
		break;
	default:
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		return 4;
	}
	out[0] = '\\';
	out[1] = letter;
	return 2;
}

size_t
text_escape_key(const char *key, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += text_escape_one((unsigned char)key[i], out + n);
	return n;
}

char *
text_key_shown(const char *key, size_t len, char *buf, size_t size)
{
	size_t total = 0, n = 0, room;
	char one[TEXT_ESCAPE_GROWTH];

	for (size_t i = 0; i < len; i++)
		total += text_escape_one((unsigned char)key[i], one);
	room = total < size ? total : size - 4; /* else "..." and the NUL */
	for (size_t i = 0; i < len; i++) {
		size_t k = text_escape_one((unsigned char)key[i], one);

		if (n + k > room)
			break;
		memcpy(buf + n, one, k);
		n += k;
	}
	memcpy(buf + n, total < size ? "" : "...", total < size ? 1 : 4);
	return buf;
}
