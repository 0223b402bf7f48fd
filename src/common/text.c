/*
 * Text helpers for messages: misspelling suggestions and number formatting.
 */
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
