/*
 * sha256_64 of short keys with AVX-512, 32 keys at once.
 *
 * A key of at most 55 bytes is one padded SHA-256 block, and its point is
 * the first two words of the state after compressing that block from the
 * initial value (as in sha256_ni.c).  Here each 512-bit register holds one
 * 32-bit word of 16 different messages, so one instruction does a step of
 * 16 compressions: vprord for the rotations, vpternlogd for Ch, Maj and the
 * three-way XORs, vpaddd for the sums.  A round's chain of dependent
 * operations is long (about 11 cycles measured) while the unit can issue
 * 3 to 4 of them a cycle, so two groups of 16 are interleaved round by
 * round; the message schedules (with the round constants added) are
 * computed first, for both groups, into memory that the rounds read.
 *
 * Measured on this project's machine (2 vCPU AMD EPYC, family 1Ah, gcc 12
 * -O2, keys of 10 to 17 bytes from bench/gen_keys.py already in the cache,
 * ns per key, best of 9, pinned with taskset; a shared VM whose single runs
 * vary by 10-30 %):
 *
 *	sha256_ni_64, 8 lanes (SHA-NI)                     21-28
 *	AVX-512, one group of 16                           22-23
 *	AVX-512, two groups of 16 (32 lanes)    <- kept    15.5-16.5
 *	AVX-512, three or four groups                      17-21 (spills)
 *	8 SHA-NI lanes and 16 AVX-512 lanes interleaved    18.6-23
 *
 * The last row shows that the SHA unit and the AVX-512 pipes are not free
 * to overlap on this CPU, so a batch takes one path or the other.
 *
 * Blocks are built without copying: a masked byte load reads exactly the
 * key's bytes (masked-off bytes are never accessed, so a key at the end of
 * a mapping is safe), the 0x80 pad byte comes from a masked broadcast, and
 * the 16 rows are transposed into words with unpack and shuffle steps.  The
 * length word W15 is the lengths times 8, taken straight from LENS.
 *
 * The functions that use the intrinsics are compiled for "avx512f,avx512bw"
 * by a target attribute, so the rest of the build needs no -mavx512f; they
 * run only after hash.c has asked sha256_avx512_available() once about
 * the CPU and the operating system.
 */
#include "shardmap/sha256_lanes.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SHA256_AVX512_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define SHA256_AVX512_X86 0
#endif

#if SHA256_AVX512_X86

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw")))

#define GROUPS 2 /* groups of 16 lanes, interleaved */

/* The 64 round constants of FIPS 180-4 §4.2.2. */
static const uint32_t sha256_avx512_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* H0..H7 of FIPS 180-4 §5.3.3. */
static const uint32_t sha256_avx512_h0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#define ROR(x, n)     _mm512_ror_epi32((x), (n))
#define XOR3(x, y, z) _mm512_ternarylogic_epi32((x), (y), (z), 0x96)
#define CH(e, f, g)   _mm512_ternarylogic_epi32((e), (f), (g), 0xca)
#define MAJ(a, b, c)  _mm512_ternarylogic_epi32((a), (b), (c), 0xe8)
#define ADD(x, y)     _mm512_add_epi32((x), (y))

/* The message words W0..W15 of 16 keys, W[t] holding word t of every
 * lane.  Row L is key L's padded block as bytes; the 16 x 16 matrix of
 * 32-bit words is transposed in four steps (32-bit and 64-bit unpacks
 * within 128-bit lanes, then two rounds of 128-bit shuffles), and each word
 * is byte-swapped to big-endian.  Cannot fail. */
static AVX512_TARGET inline void
sha256_avx512_words(const char *const keys[16], const size_t lens[16],
                    __m512i w[16])
{
	const __m512i bswap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b,
	                                        0x04050607, 0x00010203);
	__m512i r[16], t[16];
	int i;

	for (i = 0; i < 16; i++) {
		unsigned len = (unsigned)lens[i];
		/* A NULL key has length 0: nothing is read through it. */
		const char *key = len > 0 ? keys[i] : (const char *)lens;

		r[i] = _mm512_or_si512(
			_mm512_maskz_loadu_epi8((UINT64_C(1) << len) - 1, key),
			_mm512_maskz_set1_epi8(UINT64_C(1) << len, (char)0x80));
	}
	for (i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (i = 0; i < 16; i += 4) {
		r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	for (i = 0; i < 4; i++) {
		t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
		t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
		t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
		t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
	}
	for (i = 0; i < 4; i++) {
		r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
		r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
		r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
		r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
	}
	for (i = 0; i < 15; i++)
		w[i] = _mm512_shuffle_epi8(r[i], bswap);
	/* W15 is the length in bits (W14, its high half, is 0): the key and
	 * its pad byte end before byte 56. */
	w[15] = _mm512_slli_epi32(
		_mm512_inserti64x4(
			_mm512_castsi256_si512(_mm512_cvtepi64_epi32(
				_mm512_loadu_si512((const void *)lens))),
			_mm512_cvtepi64_epi32(
				_mm512_loadu_si512((const void *)(lens + 8))),
			1),
		3);
}

/* W[t] + K[t] for the 64 rounds, from W0..W15 (overwritten).  Cannot
 * fail. */
static AVX512_TARGET inline void
sha256_avx512_schedule(__m512i w[16], __m512i kw[64])
{
#pragma GCC unroll 64
	for (int i = 0; i < 64; i++) {
		__m512i wi = w[i & 15];

		if (i >= 16) {
			__m512i w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
			__m512i s0 = XOR3(ROR(w15, 7), ROR(w15, 18),
			                  _mm512_srli_epi32(w15, 3));
			__m512i s1 = XOR3(ROR(w2, 17), ROR(w2, 19),
			                  _mm512_srli_epi32(w2, 10));

			wi = ADD(ADD(wi, s0), ADD(w[(i - 7) & 15], s1));
			w[i & 15] = wi;
		}
		kw[i] = ADD(wi, _mm512_set1_epi32((int)sha256_avx512_k[i]));
	}
}

/* The point of each lane of a group: (A + H0) << 32 | (B + H1), written to
 * POINTS[0..15] in lane order.  Cannot fail. */
static AVX512_TARGET inline void
sha256_avx512_points(__m512i a, __m512i b, uint64_t points[16])
{
	/* Within each 128-bit lane, unpacklo pairs lanes 4k and 4k+1 as
	 * 64-bit B | A << 32, unpackhi lanes 4k+2 and 4k+3; the permutes put
	 * them back in order. */
	const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
	const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
	__m512i lo, hi;

	a = ADD(a, _mm512_set1_epi32((int)sha256_avx512_h0[0]));
	b = ADD(b, _mm512_set1_epi32((int)sha256_avx512_h0[1]));
	lo = _mm512_unpacklo_epi32(b, a);
	hi = _mm512_unpackhi_epi32(b, a);
	_mm512_storeu_si512((void *)points,
	                    _mm512_permutex2var_epi64(lo, first, hi));
	_mm512_storeu_si512((void *)(points + 8),
	                    _mm512_permutex2var_epi64(lo, second, hi));
}

static AVX512_TARGET void
sha256_avx512_compress(const char *const keys[SHA256_AVX512_LANES],
                       const size_t lens[SHA256_AVX512_LANES],
                       uint64_t points[SHA256_AVX512_LANES])
{
	_Alignas(64) __m512i kw[GROUPS][64];
	__m512i a[GROUPS], b[GROUPS], c[GROUPS], d[GROUPS];
	__m512i e[GROUPS], f[GROUPS], g[GROUPS], h[GROUPS];
	int j;

	for (j = 0; j < GROUPS; j++) {
		__m512i w[16];

		sha256_avx512_words(keys + (ptrdiff_t)16 * j,
		                    lens + (ptrdiff_t)16 * j, w);
		sha256_avx512_schedule(w, kw[j]);
		a[j] = _mm512_set1_epi32((int)sha256_avx512_h0[0]);
		b[j] = _mm512_set1_epi32((int)sha256_avx512_h0[1]);
		c[j] = _mm512_set1_epi32((int)sha256_avx512_h0[2]);
		d[j] = _mm512_set1_epi32((int)sha256_avx512_h0[3]);
		e[j] = _mm512_set1_epi32((int)sha256_avx512_h0[4]);
		f[j] = _mm512_set1_epi32((int)sha256_avx512_h0[5]);
		g[j] = _mm512_set1_epi32((int)sha256_avx512_h0[6]);
		h[j] = _mm512_set1_epi32((int)sha256_avx512_h0[7]);
	}
#pragma GCC unroll 64
	for (int i = 0; i < 64; i++) {
#pragma GCC unroll 2
		for (j = 0; j < GROUPS; j++) {
			__m512i t1 = ADD(
				ADD(ADD(h[j], kw[j][i]), CH(e[j], f[j], g[j])),
				XOR3(ROR(e[j], 6), ROR(e[j], 11),
			             ROR(e[j], 25)));
			__m512i t2 = ADD(XOR3(ROR(a[j], 2), ROR(a[j], 13),
			                      ROR(a[j], 22)),
			                 MAJ(a[j], b[j], c[j]));

			h[j] = g[j];
			g[j] = f[j];
			f[j] = e[j];
			e[j] = ADD(d[j], t1);
			d[j] = c[j];
			c[j] = b[j];
			b[j] = a[j];
			a[j] = ADD(t1, t2);
		}
	}
	for (j = 0; j < GROUPS; j++)
		sha256_avx512_points(a[j], b[j], points + (ptrdiff_t)16 * j);
}

/* AVX512F and AVX512BW as CPUID reports them, and the opmask and ZMM state
 * enabled by the operating system (XCR0 bits 1, 2, 5, 6, 7).  Cannot
 * fail. */
int
sha256_avx512_available(void)
{
	unsigned eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE))
		return 0;
	__asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	(void)xcr0_hi;
	if ((xcr0_lo & 0xe6) != 0xe6)
		return 0;
	if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
		return 0;
	return (ebx & bit_AVX512F) != 0 && (ebx & bit_AVX512BW) != 0;
}

#else /* not x86-64 */

/* No AVX-512 code off x86-64.  Cannot fail. */
int
sha256_avx512_available(void)
{
	return 0;
}

#endif

/* Cannot fail (see sha256_lanes.h for what the caller must ensure). */
void
sha256_avx512_64(const char *const keys[SHA256_AVX512_LANES],
                 const size_t lens[SHA256_AVX512_LANES],
                 uint64_t points[SHA256_AVX512_LANES])
{
#if SHA256_AVX512_X86
	sha256_avx512_compress(keys, lens, points);
#else
	(void)keys;
	(void)lens;
	(void)points;
#endif
}
