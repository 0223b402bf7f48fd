/*
 * Shortest round-trip decimal digits of a double or a float (Ryu: Ulf
 * Adams, "Ryū: fast float-to-string conversion", PLDI 2018).
 *
 * Each function takes a finite non-zero V and sets *DIGITS and *EXPONENT
 * so that DIGITS × 10^EXPONENT is a decimal for |V|: the sign is ignored,
 * the caller writes it.  DIGITS never ends in a zero (they are stripped
 * into EXPONENT), so 100.0 is 1 × 10^2.  The return value is the number of
 * digits in DIGITS (1 to 17 for a double, 1 to 9 for a float).  For a zero,
 * an infinity or a NaN they return 0 and set both to 0.
 *
 * Pure functions: no allocation, no locale, errno untouched, reentrant.
 * The digits are exact integer arithmetic; no floating-point operation
 * happens, so the rounding mode does not matter either.
 *
 * Which decimal, when several are as short:
 *
 *   dtoa_shortest, ftoa_shortest: Ryu's guarantee.  The fewest digits of
 *     any decimal that reads back as V (strtod, resp. strtof, rounding to
 *     nearest, ties to even), and of those the closest to V (ties to an
 *     even last digit).
 *
 *   dtoa_rounded: V rounded to N significant digits (to nearest, ties to
 *     even: what printf("%.*e", N - 1, v) prints) for the smallest N whose
 *     rounding reads back as V; what a printf/strtod loop over N = 1..17
 *     finds, and how the canonical form (backend/canonical.c) is defined.
 *     The same as dtoa_shortest but for 46 powers of two, 2^-1017 to 2^-24
 *     and 2^89 to 2^976 (none of 2^-23 .. 2^88, so not 1, 0.5 or 1024):
 *     there the decimals that read back as V reach twice as far above V
 *     as below, the nearest 16-digit decimal lies below, out of reach,
 *     and Ryu's 16 digits are the next decimal up; dtoa_rounded takes 17.
 *
 *   ftoa_rounded_via_double: as dtoa_rounded for a float, where a decimal
 *     reads back as V when strtod reads it as a double that rounds to V as
 *     a float: (float)strtod(s, NULL) == v, how canonical.c reads float4.
 *     That double rounding differs from strtof only for a decimal within
 *     half a double's step of a point halfway between two floats.  Over
 *     all floats, it differs from ftoa_shortest for 5: 2^-96, 2^87 and
 *     2^90 (as dtoa_rounded at powers of two), and 0x15ae43fd and
 *     0x15ae43fe, on either side of 7.038531e-26, which strtof reads as
 *     the first and (float)strtod as the second.
 */
#ifndef RS_DTOA_H
#define RS_DTOA_H

#include <stdint.h>

int dtoa_shortest(double v, uint64_t *digits, int *exponent);
int ftoa_shortest(float v, uint32_t *digits, int *exponent);

int dtoa_rounded(double v, uint64_t *digits, int *exponent);
int ftoa_rounded_via_double(float v, uint32_t *digits, int *exponent);

#endif
