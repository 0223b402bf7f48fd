/*
 * Small text helpers shared by messages: the closest known word to a
 * misspelt one, and numbers with thousands separators.
 */
#ifndef RS_TEXT_H
#define RS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The Levenshtein distance between A and B (bytes). */
size_t text_edit_distance(const char *a, const char *b);

/* The word of WORDS (N of them) closest to WORD, or NULL when none is close
 * enough to be a plausible misspelling (distance above a third of the
 * longer word, at least 2). */
const char *text_closest(const char *word, const char *const *words, size_t n);

/* The value of hex digit C (either case), or -1 when C is not one. */
int text_hex_digit(int c);

/* Format V with thousands separators ("12,345") into BUF; returns BUF. */
char *text_thousands(uint64_t v, char *buf, size_t size);

#endif
