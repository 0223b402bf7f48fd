/*
 * Unit tests of src/common/dtoa.c, the shortest round-trip digits.
 *
 * Doubles: random 64-bit patterns (splitmix64, fixed seed; NaN, infinities
 * and zeros skipped; one in seven with its exponent bits zeroed, a
 * subnormal) and edge values (every power of two, every power of ten,
 * their neighbours, DBL_MIN, DBL_TRUE_MIN, DBL_MAX, 0.1, 0.3, 2^53 + 1,
 * Ryu's own test values …).  For each:
 *  - "<digits>e<exponent>" read by strtod gives back V's exact bits; the
 *    digits have no trailing zero and the count returned is right; -V
 *    gives the same digits (every 16th random value);
 *  - every 10th random value and every edge value against the oracle, the
 *    slow loop the canonical form used to be made by: snprintf("%.*e",
 *    n - 1) then strtod for n = 1..17, the first n that reads back.  The
 *    edge values and every 100th random value run it literally.  The
 *    others take two shortcuts, both exact (argued at their functions):
 *    a normal double starts at n = 15, as canonical.c did; a subnormal
 *    bisects.  dtoa_rounded must give the oracle's decimal exactly.
 *    dtoa_shortest must too, except where Ryu is legitimately a digit
 *    shorter: 46 powers of two (listed at check_double_oracle), where the
 *    nearest n-digit decimal lies outside the interval's narrower half
 *    below V and Ryu takes the n-digit decimal just above V.  Those are
 *    checked to be exactly that, and to be shortest (no decimal of a digit
 *    less reads back).  No other difference came up, and no tie between
 *    two equally close candidates: Ryu and glibc's printf both round half
 *    to even.
 *
 * Floats: random 32-bit patterns (one in eight subnormal) and edge values
 * (every power of two and ten, their neighbours, FLT_MIN, FLT_TRUE_MIN,
 * FLT_MAX, Ryu's test values).  ftoa_shortest's text read by strtof gives
 * V back; ftoa_rounded_via_double's (every 4th random value) read by
 * strtod then rounded to a float does.  Every 100th random value and the
 * edge values against the float oracles, the loop above for n = 1..9 over
 * (double)V, read back by strtof for ftoa_shortest and by (float)strtod
 * (the old read_float4) for ftoa_rounded_via_double.  Both were also
 * compared offline over all 2^31 positive floats: the only differences
 * are the 3 powers of two and 2 double-rounding cases of
 * test_float_vectors.
 *
 * Counts: RESHARD_DTOA_VALUES random values of each width, by default
 * 10,000,000, so that the oracle sees 1,000,000 doubles; 1,000,000 when
 * built with AddressSanitizer (build-asan/), to stay well under 30 s.
 * Release takes about 9 s on 2 cores, nearly all of it glibc's strtod,
 * strtof and snprintf.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtoa.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define DEFAULT_VALUES 1000000L
#else
#define DEFAULT_VALUES 10000000L
#endif

#define ORACLE_STRIDE       10  /* doubles */
#define FULL_ORACLE_STRIDE  100 /* doubles, oracle from n = 1 */
#define FLOAT_ORACLE_STRIDE 100

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Helpers ---------------------------------------------------------- */

static long
value_count(void)
{
	const char *s = getenv("RESHARD_DTOA_VALUES");
	long n = s != NULL ? strtol(s, NULL, 10) : 0;

	return n > 0 ? n : DEFAULT_VALUES;
}

static uint64_t
splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t
double_bits(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

static uint32_t
float_bits(float v)
{
	uint32_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

/* "<digits>e<exponent>" into BUF (32 bytes); by hand, as snprintf would
 * be a third of the test's time. */
static void
put_decimal(char *buf, uint64_t digits, int exponent)
{
	char tmp[32];
	size_t n = 0, len = 0;
	unsigned e = (unsigned)(exponent < 0 ? -exponent : exponent);

	do {
		tmp[n++] = (char)('0' + digits % 10);
		digits /= 10;
	} while (digits != 0);
	while (n > 0)
		buf[len++] = tmp[--n];
	buf[len++] = 'e';
	if (exponent < 0)
		buf[len++] = '-';
	do {
		tmp[n++] = (char)('0' + e % 10);
		e /= 10;
	} while (e != 0);
	while (n > 0)
		buf[len++] = tmp[--n];
	buf[len] = '\0';
}

static int
digit_count(uint64_t d)
{
	int n = 1;

	for (; d >= 10; n++)
		d /= 10;
	return n;
}

/* The digits of a "%.*e" text as printed (not stripped) and the exponent
 * of their last digit. */
static void
parse_printed(const char *text, uint64_t *digits, int *exponent)
{
	uint64_t m = 0;
	int n = 0;
	const char *p = text;

	if (*p == '-')
		p++;
	for (; *p != '\0' && *p != 'e'; p++) {
		if (*p != '.') {
			m = m * 10 + (uint64_t)(*p - '0');
			n++;
		}
	}
	*digits = m;
	*exponent = (int)strtol(p + 1, NULL, 10) - (n - 1);
}

static void
strip_zeros(uint64_t *digits, int *exponent)
{
	while (*digits % 10 == 0) {
		*digits /= 10;
		++*exponent;
	}
}

static bool
reads_as_double(uint64_t digits, int exponent, double v)
{
	char text[32];

	put_decimal(text, digits, exponent);
	return double_bits(strtod(text, NULL)) == double_bits(fabs(v));
}

static bool
reads_as_float(uint64_t digits, int exponent, float v)
{
	char text[32];

	put_decimal(text, digits, exponent);
	return float_bits(strtof(text, NULL)) == float_bits(fabsf(v));
}

static bool
reads_as_float_via_double(uint64_t digits, int exponent, float v)
{
	char text[32];

	put_decimal(text, digits, exponent);
	return float_bits((float)strtod(text, NULL)) == float_bits(fabsf(v));
}

/* ---- Values ----------------------------------------------------------- */

/* The Ith random double (finite, non-zero). */
static double
random_double(uint64_t *state, long i)
{
	for (;;) {
		uint64_t bits = splitmix64(state);
		double v;

		if (i % 7 == 0)
			bits &= ~(UINT64_C(0x7ff) << 52);
		memcpy(&v, &bits, sizeof(v));
		if (isfinite(v) && v != 0)
			return v;
	}
}

static float
random_float(uint64_t *state, long i)
{
	for (;;) {
		uint32_t bits = (uint32_t)(splitmix64(state) >> 32);
		float v;

		if (i % 8 == 0)
			bits &= ~(UINT32_C(0xff) << 23);
		memcpy(&v, &bits, sizeof(v));
		if (isfinite(v) && v != 0)
			return v;
	}
}

/* Edge doubles into OUT (room for EDGE_DOUBLES); returns how many. */
#define EDGE_DOUBLES 9000

static size_t
edge_doubles(double *out)
{
	static const double named[] = {
		DBL_MIN,
		DBL_TRUE_MIN,
		DBL_MAX,
		5e-324,
		1.7976931348623157e308,
		2.2250738585072014e-308,
		2.2250738585072009e-308, /* the largest subnormal */
		4.9406564584124654e-324,
		9007199254740993.0, /* 2^53 + 1: reads as 2^53 */
		9007199254740991.0,
		18014398509481985.0,
		0.1,
		0.2,
		0.3,
		0.1 + 0.2,
		1.0 / 3,
		2.0 / 3,
		1e23,
		8.41e21,
		5e-310,
		123456789012345678.0,
		2.98023223876953125e-8,
		-2.109808898695963e16,
		4.940656e-318,
		1.18575755e-316,
		2.989102097996e-312,
		9.0608011534336e15,
		4.708356024711512e18,
		9.409340012568248e18,
		1.2345678,
		4.294967294,
		4.294967295,
		4.294967296,
		4.294967297,
		1.0e15 + 1,
	};
	size_t n = 0;
	char text[32];

	for (size_t i = 0; i < ARRAY_LEN(named); i++)
		out[n++] = named[i];
	for (int k = -1074; k <= 1023; k++) {
		double p = ldexp(1.0, k);

		out[n++] = p;
		out[n++] = nextafter(p, 0);
		out[n++] = nextafter(p, INFINITY);
	}
	for (int k = -323; k <= 308; k++) {
		double p;

		snprintf(text, sizeof(text), "1e%d", k);
		p = strtod(text, NULL);
		out[n++] = p;
		out[n++] = nextafter(p, 0);
		out[n++] = nextafter(p, INFINITY);
	}
	/* the neighbour of 2^-1074 that is not a double */
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(out[i]) || out[i] == 0)
			out[i] = 1.0;
	}
	return n;
}

/* Edge floats into OUT (room for 2,000); returns how many. */
static size_t
edge_floats(float *out)
{
	static const float named[] = {
		FLT_MIN,        FLT_TRUE_MIN,   FLT_MAX,
		1.1754944e-38f, 0.1f,           0.3f,
		16777216.0f,    16777217.0f,    3.1415927f,
		3.355445e7f,    8.999999e9f,    3.4366717e10f,
		3.0540412e5f,   8.0990312e3f,   2.4414062e-4f,
		2.4414062e-3f,  4.3945312e-3f,  6.3476562e-3f,
		4.7223665e21f,  8388608.0f,     1.6777216e7f,
		3.3554436e7f,   6.7131496e7f,   1.9310392e-38f,
		-2.47e-43f,     1.993244e-38f,  4103.9003f,
		5.3399997e9f,   6.0898e-39f,    0.0010310042f,
		2.8823261e17f,  7.038531e-26f,  9.2234038e17f,
		6.7108872e7f,   1.0e-44f,       2.816025e14f,
		9.223372e18f,   1.5846085e29f,  1.1811161e19f,
		5.368709e18f,   4.6143165e18f,  0.007812537f,
		1.4e-45f,       1.18697724e20f, 1.00014165e-36f,
		200.0f,         3.3554432e7f,   1.23456735e-36f,
	};
	size_t n = 0;
	char text[32];

	for (size_t i = 0; i < ARRAY_LEN(named); i++)
		out[n++] = named[i];
	for (int k = -149; k <= 127; k++) {
		float p = ldexpf(1.0f, k);

		out[n++] = p;
		out[n++] = nextafterf(p, 0);
		out[n++] = nextafterf(p, INFINITY);
	}
	for (int k = -45; k <= 38; k++) {
		float p;

		snprintf(text, sizeof(text), "1e%d", k);
		p = strtof(text, NULL);
		if (p == 0)
			continue;
		out[n++] = p;
		out[n++] = nextafterf(p, 0);
		out[n++] = nextafterf(p, INFINITY);
	}
	/* the neighbours of FLT_MAX and 2^-149 that are not floats */
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(out[i]) || out[i] == 0)
			out[i] = 1.0f;
	}
	return n;
}

/* ---- Doubles ---------------------------------------------------------- */

/* Round trip, digit count, no trailing zero, sign ignored (when NEGATE);
 * and dtoa_rounded the same but at powers of two, where it may be a digit
 * longer (and must read back too). */
static void
check_double(double v, bool negate)
{
	uint64_t d, nd, rd;
	int e, ne, re, n, rn;

	n = dtoa_shortest(v, &d, &e);
	if (n != digit_count(d) || d % 10 == 0 || !reads_as_double(d, e, v)) {
		print_error("%a (%.17g): dtoa_shortest gave %" PRIu64 "e%d, "
		            "%d digits\n",
		            v, v, d, e, n);
		fail();
	}
	if (negate) {
		assert_int_equal(dtoa_shortest(-v, &nd, &ne), n);
		assert_true(nd == d && ne == e);
	}
	rn = dtoa_rounded(v, &rd, &re);
	if (rd == d && re == e && rn == n)
		return;
	if ((double_bits(v) & ((UINT64_C(1) << 52) - 1)) != 0 || rn != n + 1 ||
	    rd % 10 == 0 || !reads_as_double(rd, re, v)) {
		print_error("%a (%.17g): dtoa_rounded gave %" PRIu64 "e%d, "
		            "dtoa_shortest %" PRIu64 "e%d\n",
		            v, v, rd, re, d, e);
		fail();
	}
}

/* Whether printf's N digits of V read back as V; if so, sets the digits
 * (stripped) and exponent. */
static bool
printed_reads_back(double v, int n, uint64_t *digits, int *exponent)
{
	char text[48];

	snprintf(text, sizeof(text), "%.*e", n - 1, v);
	if (strtod(text, NULL) != v)
		return false;
	parse_printed(text, digits, exponent);
	strip_zeros(digits, exponent);
	return true;
}

/* The oracle: the first n from FROM to 17 for which printf's n digits read
 * back as V.  Sets the digits (stripped) and exponent; returns n.  FROM is
 * 1, or 15 for a normal V: then a decimal D of fewer digits that reads
 * back is within half an ulp of V, under 1.2 × 10^-16 V, while two 15-digit
 * decimals are at least 10^-15 V apart, so D (padded) is the nearest
 * 15-digit decimal and %.14e prints it: the same digits once stripped. */
static int
oracle_double(double v, int from, uint64_t *digits, int *exponent)
{
	for (int n = from; n <= 17; n++) {
		if (printed_reads_back(v, n, digits, exponent))
			return n;
	}
	fail_msg("%a: 17 digits do not read back", v);
	return 0;
}

/* The same by bisection, for a V whose interval is symmetric (not a power
 * of two): there, if n digits read back so do n + 1 (every n-digit
 * decimal is an (n+1)-digit one, so the nearest gets no farther), and the
 * first n is found in 5 printf rounds instead of up to 17.  For
 * subnormals, where the loop cannot start at 15. */
static int
oracle_double_bisect(double v, uint64_t *digits, int *exponent)
{
	int lo = 1, hi = 17; /* the answer is in [lo, hi] */

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		uint64_t d;
		int e;

		if (printed_reads_back(v, mid, &d, &e))
			hi = mid;
		else
			lo = mid + 1;
	}
	assert_true(printed_reads_back(v, lo, digits, exponent));
	return lo;
}

/* V against the oracle (see the header); FULL starts it at n = 1.
 * Returns true when dtoa_shortest is legitimately shorter than the oracle:
 * the 46 powers of two 2^k, k = -1017 -1007 -957 -921 -808 -791 -788
 * -778 -705 -695 -662 -652 -549 -509 -496 -489 -383 -366 -296 -140 -97
 * -77 -44 -24 89 122 132 172 182 275 305 345 378 398 405 481 534 544 554
 * 574 594 710 803 863 896 976.  2^-24 = 5.9604644775390625e-8 for one:
 * the oracle needs all 17 digits, as 5.960464477539062e-8 (nearest, 16)
 * is below V by more than the quarter step there; Ryu's
 * 5.960464477539063e-8, above V, reads back. */
static bool
check_double_oracle(double v, bool full)
{
	uint64_t od = 0, d, rd, nearest;
	int oe = 0, e, re, on, n, ne;
	char text[48];

	if (full || (double_bits(v) & ((UINT64_C(1) << 52) - 1)) == 0)
		on = oracle_double(v, 1, &od, &oe);
	else if (fabs(v) < DBL_MIN)
		on = oracle_double_bisect(v, &od, &oe);
	else
		on = oracle_double(v, 15, &od, &oe);
	dtoa_rounded(v, &rd, &re);
	if (rd != od || re != oe) {
		print_error("%a (%.17g): dtoa_rounded gave %" PRIu64 "e%d, the "
		            "oracle %" PRIu64 "e%d\n",
		            v, v, rd, re, od, oe);
		fail();
	}
	n = dtoa_shortest(v, &d, &e);
	if (d == od && e == oe)
		return false;
	/* Only at a power of two, one digit shorter, and then: the nearest
	 * n-digit decimal does not read back, Ryu's is the next one up. */
	snprintf(text, sizeof(text), "%.*e", n - 1, fabs(v));
	parse_printed(text, &nearest, &ne);
	for (; e > ne; e--)
		d *= 10;
	if ((double_bits(v) & ((UINT64_C(1) << 52) - 1)) != 0 || n + 1 != on ||
	    strtod(text, NULL) == fabs(v) || e != ne || d != nearest + 1) {
		print_error("%a (%.17g): dtoa_shortest gave %" PRIu64 "e%d (%d "
		            "digits), the oracle %" PRIu64 "e%d (%d)\n",
		            v, v, d, e, n, od, oe, on);
		fail();
	}
	/* Shortest: neither (n-1)-digit decimal around V reads back. */
	if (n > 1) {
		snprintf(text, sizeof(text), "%.*e", n - 2, fabs(v));
		parse_printed(text, &nearest, &ne);
		assert_false(reads_as_double(nearest, ne, v));
		assert_false(reads_as_double(nearest - 1, ne, v));
		assert_false(reads_as_double(nearest + 1, ne, v));
	}
	return true;
}

/* Known answers: Ryu's own test vectors (as "d.dddE±x", converted) and
 * the cases where the two ways differ. */
static void
test_double_vectors(void **state)
{
	static const struct {
		double v;
		uint64_t digits;
		int exponent;
	} cases[] = {
		{1.0, 1, 0},
		{0.1, 1, -1},
		{0.3, 3, -1},
		{0.1 + 0.2, 30000000000000004u, -17},
		{100.0, 1, 2},
		{1e23, 1, 23},
		{5e-324, 5, -324},
		{DBL_MIN, 22250738585072014u, -324},
		{DBL_MAX, 17976931348623157u, 292},
		{9007199254740993.0, 9007199254740992u, 0},
		{2.98023223876953125e-8, 29802322387695312u, -24},
		{-2.109808898695963e16, 2109808898695963u, 1},
		{4.940656e-318, 4940656, -324},
		{1.18575755e-316, 118575755, -324},
		{2.989102097996e-312, 2989102097996u, -324},
		{9.0608011534336e15, 90608011534336u, 2},
		{4.708356024711512e18, 4708356024711512u, 3},
		{9.409340012568248e18, 9409340012568248u, 3},
		{1.2345678, 12345678, -7},
		{1.0e15 + 1, 1000000000000001u, 0},
		{4.294967295, 4294967295u, -9},
		{5.764607523034235e39, 5764607523034235u, 24},
		{1.152921504606847e40, 1152921504606847u, 25},
		{1.7800590868057611e-307, 17800590868057611u, -323},
		{3.196104012172126e-27, 3196104012172126u, -42},
	};
	uint64_t d;
	int e;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(dtoa_shortest(cases[i].v, &d, &e),
		                 digit_count(cases[i].digits));
		if (d != cases[i].digits || e != cases[i].exponent) {
			print_error("%.17g gave %" PRIu64 "e%d, expected "
			            "%" PRIu64 "e%d\n",
			            cases[i].v, d, e, cases[i].digits,
			            cases[i].exponent);
			fail();
		}
		dtoa_rounded(cases[i].v, &d, &e);
		assert_true(d == cases[i].digits && e == cases[i].exponent);
	}
	/* 2^-24: Ryu's 16 digits above V, the rounded 17, exact */
	assert_int_equal(dtoa_shortest(0x1p-24, &d, &e), 16);
	assert_true(d == 5960464477539063u && e == -23);
	assert_int_equal(dtoa_rounded(0x1p-24, &d, &e), 17);
	assert_true(d == 59604644775390625u && e == -24);
	/* not numbers */
	assert_int_equal(dtoa_shortest(0.0, &d, &e), 0);
	assert_true(d == 0 && e == 0);
	assert_int_equal(dtoa_shortest(-0.0, &d, &e), 0);
	assert_int_equal(dtoa_rounded(INFINITY, &d, &e), 0);
	assert_int_equal(dtoa_shortest(NAN, &d, &e), 0);
}

static void
test_double_edges(void **state)
{
	double *v = malloc(EDGE_DOUBLES * sizeof(*v));
	size_t n;
	int shorter = 0;

	(void)state;
	assert_non_null(v);
	n = edge_doubles(v);
	assert_true(n <= EDGE_DOUBLES);
	for (size_t i = 0; i < n; i++) {
		check_double(v[i], true);
		shorter += check_double_oracle(v[i], true);
	}
	assert_int_equal(shorter, 46);
	free(v);
}

static void
test_double_random(void **state)
{
	uint64_t seed = 20180618;
	long count = value_count(), oracle = 0;

	(void)state;
	for (long i = 0; i < count; i++) {
		double v = random_double(&seed, i);

		check_double(v, i % 16 == 0);
		if (i % ORACLE_STRIDE == 0) {
			assert_false(check_double_oracle(
				v, i % FULL_ORACLE_STRIDE == 0));
			oracle++;
		}
	}
	print_message("%ld random doubles, %ld against the oracle\n", count,
	              oracle);
}

/* ---- Floats ----------------------------------------------------------- */

/* As check_double; and ftoa_rounded_via_double's digits read back through
 * a double (when VIA_DOUBLE). */
static void
check_float(float v, bool negate, bool via_double)
{
	uint32_t d, nd, rd;
	int e, ne, re, n;

	n = ftoa_shortest(v, &d, &e);
	if (n != digit_count(d) || d % 10 == 0 || !reads_as_float(d, e, v)) {
		print_error("%a (%.9g): ftoa_shortest gave %" PRIu32 "e%d\n",
		            (double)v, (double)v, d, e);
		fail();
	}
	if (negate) {
		assert_int_equal(ftoa_shortest(-v, &nd, &ne), n);
		assert_true(nd == d && ne == e);
	}
	if (!via_double)
		return;
	n = ftoa_rounded_via_double(v, &rd, &re);
	if (n != digit_count(rd) || rd % 10 == 0 ||
	    !reads_as_float_via_double(rd, re, v)) {
		print_error("%a (%.9g): ftoa_rounded_via_double gave "
		            "%" PRIu32 "e%d\n",
		            (double)v, (double)v, rd, re);
		fail();
	}
}

/* V against the float oracles; returns true when ftoa_shortest is
 * shorter than the strtof one (checked as for doubles). */
static bool
check_float_oracle(float v)
{
	char text[48];
	uint64_t sd = 0, vd = 0, nearest;
	int se = 0, ve = 0, sn = 0, vn = 0, n, ne;
	uint32_t d, rd;
	int e, re;

	for (int k = 1; k <= 9 && (sn == 0 || vn == 0); k++) {
		snprintf(text, sizeof(text), "%.*e", k - 1, fabs((double)v));
		if (sn == 0 && strtof(text, NULL) == fabsf(v)) {
			sn = k;
			parse_printed(text, &sd, &se);
			strip_zeros(&sd, &se);
		}
		if (vn == 0 && (float)strtod(text, NULL) == fabsf(v)) {
			vn = k;
			parse_printed(text, &vd, &ve);
			strip_zeros(&vd, &ve);
		}
	}
	assert_true(sn != 0 && vn != 0);
	ftoa_rounded_via_double(v, &rd, &re);
	if (rd != vd || re != ve) {
		print_error("%a (%.9g): ftoa_rounded_via_double gave "
		            "%" PRIu32 "e%d, the oracle %" PRIu64 "e%d\n",
		            (double)v, (double)v, rd, re, vd, ve);
		fail();
	}
	n = ftoa_shortest(v, &d, &e);
	if (d == sd && e == se)
		return false;
	snprintf(text, sizeof(text), "%.*e", n - 1, fabs((double)v));
	parse_printed(text, &nearest, &ne);
	for (; e > ne; e--)
		d *= 10;
	if ((float_bits(v) & ((UINT32_C(1) << 23) - 1)) != 0 || n + 1 != sn ||
	    strtof(text, NULL) == fabsf(v) || e != ne || d != nearest + 1) {
		print_error("%a (%.9g): ftoa_shortest gave %" PRIu32 "e%d, "
		            "the oracle %" PRIu64 "e%d\n",
		            (double)v, (double)v, d, e, sd, se);
		fail();
	}
	if (n > 1) {
		snprintf(text, sizeof(text), "%.*e", n - 2, fabs((double)v));
		parse_printed(text, &nearest, &ne);
		assert_false(reads_as_float(nearest, ne, v));
		assert_false(reads_as_float(nearest - 1, ne, v));
		assert_false(reads_as_float(nearest + 1, ne, v));
	}
	return true;
}

/* Known answers, and all the floats (over the 2^31 positive ones, found
 * offline) where the two ways differ. */
static void
test_float_vectors(void **state)
{
	static const struct {
		float v;
		uint32_t digits;
		int exponent;
	} cases[] = {
		{1.0f, 1, 0},
		{0.1f, 1, -1},
		{3.1415927f, 31415927, -7},
		{16777216.0f, 16777216, 0},
		{FLT_MAX, 34028235, 31},
		{FLT_TRUE_MIN, 1, -45},
		{1.1754944e-38f, 11754944, -45},
		{3.355445e7f, 3355445, 1},
		{8.999999e9f, 9, 9},
		{3.4366717e10f, 3436672, 4},
		{3.0540412e5f, 30540412, -2},
		{8.0990312e3f, 80990312, -4},
		{2.4414062e-4f, 24414062, -11},
		{4.7223665e21f, 47223665, 14},
		{1.9310392e-38f, 19310392, -45},
		{-2.47e-43f, 247, -45},
		{4103.9003f, 41039004, -4},
		{5.3399997e9f, 53399997, 2},
		{6.0898e-39f, 60898, -43},
		{2.8823261e17f, 2882326, 11},
		{9.2234038e17f, 9223404, 11},
		{6.7108872e7f, 6710887, 1},
		{1.0e-44f, 1, -44},
		{1.5846085e29f, 15846086, 22},
		{4.6143165e18f, 46143166, 11},
		{0.007812537f, 7812537, -9},
		{1.18697724e20f, 118697725, 12},
		{1.00014165e-36f, 100014165, -44},
		{200.0f, 2, 2},
		{1.23456735e-36f, 123456735, -44},
	};
	/* Where ftoa_rounded_via_double differs: 3 powers of two (Ryu
	 * shorter, as for doubles), and the 2 floats around 7.038531e-26,
	 * which strtod reads as a double that rounds to the float above
	 * (0x15ae43fe) though strtof reads it as 0x15ae43fd. */
	static const struct {
		uint32_t bits;
		uint32_t digits, rounded;
		int exponent, rounded_exponent;
	} differ[] = {
		{0x0f800000, 12621775, 126217745, -36, -37}, /* 2^-96 */
		{0x6b000000, 15474251, 154742505, 19, 18},   /* 2^87 */
		{0x6c800000, 12379401, 123794004, 20, 19},   /* 2^90 */
		{0x15ae43fd, 7038531, 70385307, -32, -33},
		{0x15ae43fe, 70385313, 7038531, -33, -32},
	};
	uint32_t d;
	int e;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(ftoa_shortest(cases[i].v, &d, &e),
		                 digit_count(cases[i].digits));
		if (d != cases[i].digits || e != cases[i].exponent) {
			print_error("%.9g gave %" PRIu32 "e%d, expected "
			            "%" PRIu32 "e%d\n",
			            (double)cases[i].v, d, e, cases[i].digits,
			            cases[i].exponent);
			fail();
		}
		ftoa_rounded_via_double(cases[i].v, &d, &e);
		assert_true(d == cases[i].digits && e == cases[i].exponent);
	}
	for (size_t i = 0; i < ARRAY_LEN(differ); i++) {
		float v;

		memcpy(&v, &differ[i].bits, sizeof(v));
		ftoa_shortest(v, &d, &e);
		assert_true(d == differ[i].digits && e == differ[i].exponent);
		ftoa_rounded_via_double(v, &d, &e);
		assert_true(d == differ[i].rounded &&
		            e == differ[i].rounded_exponent);
	}
	assert_int_equal(ftoa_shortest(0.0f, &d, &e), 0);
	assert_true(d == 0 && e == 0);
	assert_int_equal(ftoa_rounded_via_double(-INFINITY, &d, &e), 0);
	assert_int_equal(ftoa_shortest(NAN, &d, &e), 0);
}

static void
test_float_edges(void **state)
{
	float v[2000];
	size_t n = edge_floats(v);
	int shorter = 0;

	(void)state;
	assert_true(n <= ARRAY_LEN(v));
	for (size_t i = 0; i < n; i++) {
		check_float(v[i], true, true);
		shorter += check_float_oracle(v[i]);
	}
	assert_int_equal(shorter, 3);
}

static void
test_float_random(void **state)
{
	uint64_t seed = 1149;
	long count = value_count(), oracle = 0;

	(void)state;
	for (long i = 0; i < count; i++) {
		float v = random_float(&seed, i);

		check_float(v, i % 16 == 0, i % 4 == 0);
		if (i % FLOAT_ORACLE_STRIDE == 0) {
			check_float_oracle(v);
			oracle++;
		}
	}
	print_message("%ld random floats, %ld against the oracle\n", count,
	              oracle);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_double_vectors),
		cmocka_unit_test(test_double_edges),
		cmocka_unit_test(test_double_random),
		cmocka_unit_test(test_float_vectors),
		cmocka_unit_test(test_float_edges),
		cmocka_unit_test(test_float_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
