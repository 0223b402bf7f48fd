/*
 * The shortest decimal digits of dtoa.h.
 *
 * A port of Ryu, by Ulf Adams: "Ryū: fast float-to-string conversion",
 * PLDI 2018, and its reference implementation (github.com/ulfjack/ryu,
 * ryu/d2s.c with ryu/d2s_small_table.h).  Copyright 2018 Ulf Adams; used
 * under the Boost Software License, Version 1.0
 * (https://www.boost.org/LICENSE_1_0.txt), one of the two licences it is
 * offered under (the other is Apache 2.0).  The power-of-5 tables and the
 * way 5^i is rebuilt from every 26th power are Ryu's; the rest is
 * reworked: one core for both widths and both ways of choosing digits.
 *
 * The core, shortest(), sees a value V and the ends LO < V < HI of the
 * interval of reals that read back as V, as integers MV, MM, MP times
 * 2^E2 (below 2^55), each end included or not.  It scales the three by
 * 10^-q with one 64×128-bit multiplication each (exact: Ryu's tables are
 * precise enough for any 55-bit integer), then drops decimal digits while
 * the interval still holds an integer at the coarser scale.
 *
 *  - A double: MV = 4m, MP = 4m + 2, MM = 4m - 2 for V = m × 2^e (the
 *    halfway points to the neighbours, E2 = e - 2); MM = 4m - 1 at a power
 *    of two, whose lower neighbour is half as far.  Both ends are included
 *    when m is even (strtod's ties to even).
 *  - A float is first written as the double it equals (m shifted up to 53
 *    bits), so the same tables and the same 55-bit arithmetic serve; only
 *    the interval is the float's, wider.
 *  - Read through a double ((float)strtod), a float's interval moves by
 *    half a double step at each end: a decimal that strtod rounds onto the
 *    halfway point between two floats goes to the even one.
 *
 * Digits come out two ways (dtoa.h): Ryu's, the closest of the shortest,
 * and "rounded", V rounded to the fewest digits that stay inside.  With a
 * symmetric interval both are the same decimal, so the rounded way only
 * walks its own loop when the interval is lopsided.
 */
#include "common/dtoa.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* Bits kept of 5^i and of 2^k / 5^i (Ryu's small-table variant). */
#define POW5_BITCOUNT     121
#define POW5_INV_BITCOUNT 122

/* Every 26th entry of Ryu's full tables, as { low, high } 64-bit halves:
 * POW5_SPLIT2[k] is 5^(26k) in 121 bits, POW5_INV_SPLIT2[k] is
 * 2^(pow5bits(26k) - 1 + 122) / 5^(26k) rounded up, in 122; pow5() and
 * inv_pow5() rebuild the others from them and 5^0..5^25, and the offset
 * tables hold the corrections to the rebuilt values (a bit for each 5^i,
 * two for each 1/5^i).  Checked against the exact full tables, computed
 * with big integers, for all 326 and 292 entries used. */
#define POW5_TABLE_SIZE 26

static const uint64_t POW5_TABLE[POW5_TABLE_SIZE] = {
	1ull,
	5ull,
	25ull,
	125ull,
	625ull,
	3125ull,
	15625ull,
	78125ull,
	390625ull,
	1953125ull,
	9765625ull,
	48828125ull,
	244140625ull,
	1220703125ull,
	6103515625ull,
	30517578125ull,
	152587890625ull,
	762939453125ull,
	3814697265625ull,
	19073486328125ull,
	95367431640625ull,
	476837158203125ull,
	2384185791015625ull,
	11920928955078125ull,
	59604644775390625ull,
	298023223876953125ull,
};

static const uint64_t POW5_SPLIT2[13][2] = {
	{0u, 72057594037927936u},
	{10376293541461622784u, 93132257461547851u},
	{15052517733678820785u, 120370621524202240u},
	{6258995034005762182u, 77787690973264271u},
	{14893927168346708332u, 100538234169297439u},
	{4272820386026678563u, 129942622070561240u},
	{7330497575943398595u, 83973451344588609u},
	{18377130505971182927u, 108533142064701048u},
	{10038208235822497557u, 140275798336537794u},
	{7017903361312433648u, 90651109995611182u},
	{6366496589810271835u, 117163813585596168u},
	{9264989777501460624u, 75715339914673581u},
	{17074144231291089770u, 97859783203563123u},
};

static const uint32_t POW5_OFFSETS[13] = {
	0x00000000, 0x00000000, 0x00000000, 0x033c55be, 0x03db77d8,
	0x0265ffb2, 0x00000800, 0x01a8ff56, 0x00000000, 0x0037a200,
	0x00004000, 0x03fffffc, 0x00003ffe,
};

static const uint64_t POW5_INV_SPLIT2[13][2] = {
	{1u, 288230376151711744u},
	{7661987648932456967u, 223007451985306231u},
	{12652048002903177473u, 172543658669764094u},
	{5522544058086115566u, 266998379490113760u},
	{3181575136763469022u, 206579990246952687u},
	{4551508647133041040u, 159833525776178802u},
	{1116074521063664381u, 247330401473104534u},
	{17400360011128145022u, 191362629322552438u},
	{9297997190148906106u, 148059663038321393u},
	{11720143854957885429u, 229111231347799689u},
	{15401709288678291155u, 177266229209635622u},
	{3003071137298187333u, 274306203439684434u},
	{17516772882021341108u, 212234145163966538u},
};

static const uint32_t POW5_INV_OFFSETS[20] = {
	0x51505404, 0x55054514, 0x45555545, 0x05511411, 0x00505010,
	0x00000004, 0x00000000, 0x00000000, 0x55555040, 0x00505051,
	0x00050040, 0x55554000, 0x51659559, 0x00001000, 0x15000010,
	0x55455555, 0x41404051, 0x00001010, 0x00000014, 0x00000000,
};

/* ceil(log2(5^e)) for 0 < e ≤ 1500 (1 for e = 0). */
static inline int32_t
pow5bits(int32_t e)
{
	return (int32_t)((((uint32_t)e * 1217359) >> 19) + 1);
}

/* floor(log10(2^e)) and floor(log10(5^e)), 0 ≤ e ≤ 1500. */
static inline int32_t
log10_pow2(int32_t e)
{
	return (int32_t)(((uint32_t)e * 78913) >> 18);
}

static inline int32_t
log10_pow5(int32_t e)
{
	return (int32_t)(((uint32_t)e * 732923) >> 20);
}

/* 5^i in POW5_BITCOUNT bits: floor(5^i / 2^(pow5bits(i) - 121)). */
static inline void
pow5(uint32_t i, uint64_t out[2])
{
	uint32_t base = i / POW5_TABLE_SIZE, offset = i % POW5_TABLE_SIZE;
	const uint64_t *mul = POW5_SPLIT2[base];
	u128 b0, b2, sum;
	uint32_t delta;

	if (offset == 0) {
		out[0] = mul[0];
		out[1] = mul[1];
		return;
	}
	b0 = (u128)POW5_TABLE[offset] * mul[0];
	b2 = (u128)POW5_TABLE[offset] * mul[1];
	delta = (uint32_t)(pow5bits((int32_t)i) -
	                   pow5bits((int32_t)(base * POW5_TABLE_SIZE)));
	sum = (b0 >> delta) + (b2 << (64 - delta)) +
	      ((POW5_OFFSETS[base] >> offset) & 1);
	out[0] = (uint64_t)sum;
	out[1] = (uint64_t)(sum >> 64);
}

/* 2^k / 5^i in POW5_INV_BITCOUNT bits, rounded up:
 * floor(2^(pow5bits(i) - 1 + 122) / 5^i) + 1. */
static inline void
inv_pow5(uint32_t i, uint64_t out[2])
{
	uint32_t base = (i + POW5_TABLE_SIZE - 1) / POW5_TABLE_SIZE;
	uint32_t offset = base * POW5_TABLE_SIZE - i;
	const uint64_t *mul = POW5_INV_SPLIT2[base];
	u128 b0, b2, sum;
	uint32_t delta;

	if (offset == 0) {
		out[0] = mul[0];
		out[1] = mul[1];
		return;
	}
	b0 = (u128)POW5_TABLE[offset] * (mul[0] - 1);
	b2 = (u128)POW5_TABLE[offset] * mul[1];
	delta = (uint32_t)(pow5bits((int32_t)(base * POW5_TABLE_SIZE)) -
	                   pow5bits((int32_t)i));
	sum = (b0 >> delta) + (b2 << (64 - delta)) + 1 +
	      ((POW5_INV_OFFSETS[i / 16] >> ((i % 16) << 1)) & 3);
	out[0] = (uint64_t)sum;
	out[1] = (uint64_t)(sum >> 64);
}

/* floor(M × MUL / 2^J) for the 128-bit MUL, 64 < J < 128. */
static inline uint64_t
mul_shift(uint64_t m, const uint64_t mul[2], int32_t j)
{
	u128 b0 = (u128)m * mul[0], b2 = (u128)m * mul[1];

	return (uint64_t)(((b0 >> 64) + b2) >> (j - 64));
}

static inline bool
multiple_of_pow5(uint64_t v, uint32_t p)
{
	for (; p > 0; p--) {
		if (v % 5 != 0)
			return false;
		v /= 5;
	}
	return true;
}

static inline bool
multiple_of_pow2(uint64_t v, uint32_t p)
{
	return p < 64 && (v & ((UINT64_C(1) << p) - 1)) == 0;
}

/* The number of decimal digits of D > 0: from its bit length (log10(2)
 * is about 1233 / 4096), corrected by one comparison. */
static int
digit_count(uint64_t d)
{
	static const uint64_t pow10[20] = {
		1u,
		10u,
		100u,
		1000u,
		10000u,
		100000u,
		1000000u,
		10000000u,
		100000000u,
		1000000000u,
		10000000000u,
		100000000000u,
		1000000000000u,
		10000000000000u,
		100000000000000u,
		1000000000000000u,
		10000000000000000u,
		100000000000000000u,
		1000000000000000000u,
		10000000000000000000u,
	};
	int t = (64 - __builtin_clzll(d)) * 1233 >> 12;

	return t + (d >= pow10[t]);
}

/* V and the interval of reals that read back as V, all ×2^E2. */
struct bounds {
	uint64_t mv, mp, mm;
	int32_t e2;
	bool hi_in, lo_in; /* HI (MP), LO (MM) themselves read back as V */
};

/* The decimal of B's interval (dtoa.h): Ryu's when !ROUNDED, else V
 * rounded to the fewest digits that stay inside.  Sets *DIGITS and
 * *EXPONENT, trailing zeros stripped; returns the digit count. */
static int
shortest(const struct bounds *b, bool rounded, uint64_t *digits, int *exponent)
{
	uint64_t vr, vp, vm, mul[2], output;
	bool vr_tz = false, vp_tz = false, vm_tz = false, vm_ok;
	int32_t e10, removed = 0;
	uint32_t last = 0;

	/* Step 3 of Ryu: vr, vp, vm = floor(x × 2^e2 / 10^e10), with
	 * whether each is exact (the removed part is zero). */
	if (b->e2 >= 0) {
		uint32_t q = (uint32_t)(log10_pow2(b->e2) - (b->e2 > 3));
		int32_t k = POW5_INV_BITCOUNT + pow5bits((int32_t)q) - 1;
		int32_t i = -b->e2 + (int32_t)q + k;

		inv_pow5(q, mul);
		vr = mul_shift(b->mv, mul, i);
		vp = mul_shift(b->mp, mul, i);
		vm = mul_shift(b->mm, mul, i);
		e10 = (int32_t)q;
		/* x × 2^e2 / 10^q is an integer when 5^q divides x (e2 ≥ q);
		 * never for q > 23, as 5^24 > 2^55 > x. */
		if (q <= 23) {
			vr_tz = multiple_of_pow5(b->mv, q);
			vp_tz = multiple_of_pow5(b->mp, q);
			vm_tz = multiple_of_pow5(b->mm, q);
		}
	} else {
		uint32_t q = (uint32_t)(log10_pow5(-b->e2) - (-b->e2 > 1));
		int32_t i = -b->e2 - (int32_t)q;
		int32_t k = pow5bits(i) - POW5_BITCOUNT;
		int32_t j = (int32_t)q - k;

		pow5((uint32_t)i, mul);
		vr = mul_shift(b->mv, mul, j);
		vp = mul_shift(b->mp, mul, j);
		vm = mul_shift(b->mm, mul, j);
		e10 = (int32_t)q + b->e2;
		/* x × 5^-e2 / 2^q: an integer when 2^q divides x. */
		vr_tz = multiple_of_pow2(b->mv, q);
		vp_tz = multiple_of_pow2(b->mp, q);
		vm_tz = multiple_of_pow2(b->mm, q);
	}
	if (vp_tz && !b->hi_in)
		vp--; /* HI itself is out */
	vm_ok = vm_tz && b->lo_in;

	/* Step 4: drop digits while the interval holds a shorter decimal. */
	if (rounded &&
	    (b->mp - b->mv != b->mv - b->mm || b->hi_in != b->lo_in)) {
		/* Lopsided: at each length, is V rounded to it inside?  The
		 * last (shortest) length where it is wins. */
		bool rest_zero = vr_tz, found = false;

		output = 0;
		while (vp / 10 > vm / 10 || (vm_ok && vm % 10 == 0)) {
			uint64_t r;

			vm_tz &= vm % 10 == 0;
			vm_ok = vm_tz && b->lo_in;
			rest_zero &= last == 0;
			last = (uint32_t)(vr % 10);
			vr /= 10;
			vp /= 10;
			vm /= 10;
			removed++;
			r = vr + (last > 5 ||
			          (last == 5 && (!rest_zero || (vr & 1) != 0)));
			if (r <= vp && (r > vm || (r == vm && vm_ok))) {
				output = r;
				found = true;
				*exponent = e10 + removed;
			}
		}
		if (!found) /* cannot happen: 17 (9) digits always do */
			return shortest(b, false, digits, exponent);
	} else if (vm_ok || vr_tz) {
		/* Ryu's general case (under 1%): an exact end or V. */
		while (vp / 10 > vm / 10) {
			vm_ok &= vm % 10 == 0;
			vr_tz &= last == 0;
			last = (uint32_t)(vr % 10);
			vr /= 10;
			vp /= 10;
			vm /= 10;
			removed++;
		}
		if (vm_ok) {
			/* LO is a decimal: it may be shorter still. */
			while (vm % 10 == 0) {
				vr_tz &= last == 0;
				last = (uint32_t)(vr % 10);
				vr /= 10;
				vp /= 10;
				vm /= 10;
				removed++;
			}
		}
		if (vr_tz && last == 5 && vr % 2 == 0)
			last = 4; /* exactly ...50000: to even */
		output = vr + ((vr == vm && !vm_ok) || last >= 5);
		*exponent = e10 + removed;
	} else {
		/* The common case: nothing exact, no tie possible. */
		bool round_up = false;

		/* Floats lose some ten digits here: four at a time first. */
		while (vp / 10000 > vm / 10000) {
			round_up = vr % 10000 >= 5000;
			vr /= 10000;
			vp /= 10000;
			vm /= 10000;
			removed += 4;
		}
		if (vp / 100 > vm / 100) {
			round_up = vr % 100 >= 50;
			vr /= 100;
			vp /= 100;
			vm /= 100;
			removed += 2;
		}
		while (vp / 10 > vm / 10) {
			round_up = vr % 10 >= 5;
			vr /= 10;
			vp /= 10;
			vm /= 10;
			removed++;
		}
		output = vr + (vr == vm || round_up);
		*exponent = e10 + removed;
	}

	while (output % 10 == 0) {
		output /= 10;
		++*exponent;
	}
	*digits = output;
	return digit_count(output);
}

/* ---- Doubles ---------------------------------------------------------- */

/* Ryu's d2d_small_int: an integer in [1, 2^53) is its own shortest
 * decimal (a shorter one would be a multiple of 10 other than V, at least
 * 1 away, while the interval reaches 1/2 at most).  Returns false for
 * other values. */
static bool
small_int(uint64_t ieee_m, uint32_t ieee_e, uint64_t *digits, int *exponent)
{
	uint64_t m2 = (UINT64_C(1) << 52) | ieee_m;
	int32_t e2 = (int32_t)ieee_e - 1023 - 52;

	if (e2 > 0 || e2 < -52 || (m2 & ((UINT64_C(1) << -e2) - 1)) != 0)
		return false;
	m2 >>= -e2;
	*exponent = 0;
	while (m2 % 10 == 0) {
		m2 /= 10;
		++*exponent;
	}
	*digits = m2;
	return true;
}

static int
double_digits(double v, bool rounded, uint64_t *digits, int *exponent)
{
	uint64_t bits, ieee_m, m2;
	uint32_t ieee_e;
	struct bounds b;

	memcpy(&bits, &v, sizeof(bits));
	ieee_m = bits & ((UINT64_C(1) << 52) - 1);
	ieee_e = (uint32_t)(bits >> 52) & 0x7ff;
	*digits = 0;
	*exponent = 0;
	if (ieee_e == 0x7ff || (ieee_e == 0 && ieee_m == 0))
		return 0;
	if (ieee_e != 0 && small_int(ieee_m, ieee_e, digits, exponent))
		return digit_count(*digits);
	if (ieee_e == 0) {
		m2 = ieee_m;
		b.e2 = 1 - 1023 - 52 - 2;
	} else {
		m2 = (UINT64_C(1) << 52) | ieee_m;
		b.e2 = (int32_t)ieee_e - 1023 - 52 - 2;
	}
	b.mv = 4 * m2;
	b.mp = b.mv + 2;
	/* A power of two's lower neighbour is half as far (but not the
	 * smallest normal's: subnormals are as far apart as it). */
	b.mm = b.mv - (ieee_m != 0 || ieee_e <= 1 ? 2 : 1);
	b.hi_in = b.lo_in = (m2 & 1) == 0;
	return shortest(&b, rounded, digits, exponent);
}

int
dtoa_shortest(double v, uint64_t *digits, int *exponent)
{
	return double_digits(v, false, digits, exponent);
}

int
dtoa_rounded(double v, uint64_t *digits, int *exponent)
{
	return double_digits(v, true, digits, exponent);
}

/* ---- Floats ----------------------------------------------------------- */

/* The float V as the double it is equals, with the float's interval;
 * VIA_DOUBLE moves the ends for (float)strtod.  Returns false for zeros,
 * infinities and NaNs. */
static bool
float_bounds(float v, bool via_double, struct bounds *b)
{
	uint32_t bits, ieee_m, ieee_e, m2f;
	int32_t e2f, shift;
	uint64_t half_up, half_down;
	bool even;

	memcpy(&bits, &v, sizeof(bits));
	ieee_m = bits & ((UINT32_C(1) << 23) - 1);
	ieee_e = (bits >> 23) & 0xff;
	if (ieee_e == 0xff || (ieee_e == 0 && ieee_m == 0))
		return false;
	if (ieee_e == 0) {
		m2f = ieee_m;
		e2f = 1 - 127 - 23;
	} else {
		m2f = (UINT32_C(1) << 23) | ieee_m;
		e2f = (int32_t)ieee_e - 127 - 23;
	}
	even = (m2f & 1) == 0;
	/* Shift the mantissa up to 53 bits, as the double V is; the unit is
	 * then a quarter of the double's step, 2^(e2f - shift - 2). */
	shift = 52 - (31 - __builtin_clz(m2f));
	b->e2 = e2f - shift - 2;
	b->mv = (uint64_t)m2f << (shift + 2);
	half_up = UINT64_C(1) << (shift + 1); /* half a float step */
	half_down = ieee_m != 0 || ieee_e <= 1 ? half_up : half_up / 2;
	b->mp = b->mv + half_up;
	b->mm = b->mv - half_down;
	b->hi_in = b->lo_in = even;
	if (via_double) {
		/* strtod rounds a decimal within half a double step of a
		 * halfway point onto it (the point is an even double, having
		 * 25 bits at most), and then the float tie goes to the even
		 * float: V's ends grow by that half step when V is even and
		 * shrink by it when odd.  Half a double step is 2 units in
		 * V's binade, 1 in the binade below, where the lower end of
		 * a power of two lies (the upper end never leaves V's). */
		uint64_t h_up = 2, h_down = b->mv == UINT64_C(1) << 54 ? 1 : 2;

		b->mp = even ? b->mp + h_up : b->mp - h_up;
		b->mm = even ? b->mm - h_down : b->mm + h_down;
	}
	return true;
}

static int
float_digits(float v, bool rounded, bool via_double, uint32_t *digits,
             int *exponent)
{
	struct bounds b;
	uint64_t d;
	int n;

	*digits = 0;
	*exponent = 0;
	if (!float_bounds(v, via_double, &b))
		return 0;
	n = shortest(&b, rounded, &d, exponent);
	*digits = (uint32_t)d;
	return n;
}

int
ftoa_shortest(float v, uint32_t *digits, int *exponent)
{
	return float_digits(v, false, false, digits, exponent);
}

int
ftoa_rounded_via_double(float v, uint32_t *digits, int *exponent)
{
	return float_digits(v, true, true, digits, exponent);
}
