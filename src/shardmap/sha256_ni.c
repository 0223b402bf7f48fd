/*
 * sha256_64 of short keys with the x86 SHA extensions, several keys at once.
 * A key of at most 55 bytes is one padded SHA-256 block, and its point is
 * the first two words of the state after compressing that block from the
 * initial value: 32 sha256rnds2 (two rounds each) in one dependency chain.
 * A chain alone leaves the SHA unit mostly idle, so the compressions of
 * SHA256_NI_LANES independent blocks are interleaved round by round.
 * OpenSSL stays the reference: hash.c falls back on it for long keys and
 * on CPUs without SHA-NI, and the tests compare this code against it.
 * Where the CPU also has AVX-512, hash.c prefers sha256_avx512.c, which
 * measured faster (see there).
 *
 * Measured on this project's machine (2 vCPU AMD EPYC, family 1Ah, SHA-NI;
 * OpenSSL 3.0, gcc 12 -O3, the 10 M keys of 10 to 17 bytes of bench/dryrun,
 * keys already in memory, batches of 4096, pinned with taskset -c 1, best
 * of 5 x 3 runs; a shared VM, single runs were up to 10 % slower):
 *
 *	hash_sha256_64 per key (OpenSSL, one block)     52
 *	hash_sha256_64_batch, 2 lanes                   32
 *	hash_sha256_64_batch, 4 lanes                   25.5
 *	hash_sha256_64_batch, 8 lanes                   22    <- kept
 *
 * ns per key.  Alone, sha256rnds2 measured about 4 cycles of latency
 * (1.15 ns) whichever operand carries the chain, and 4 independent chains
 * still only reached one every 0.76 ns, 8 chains one every 0.57 ns (about
 * 2 cycles): 18 ns a key is the floor, hence 8 lanes, although 8 states and
 * schedules do not fit the 16 xmm registers (sha256rnds2 has no EVEX form)
 * and spill to the stack.  sha256_ni_64 alone (blocks built from the keys
 * included) takes 21 ns a key; the batch's gathering adds about 1.
 *
 * The functions that use the intrinsics are compiled for "sha,sse4.1,ssse3"
 * by a target attribute, so the rest of the build needs no -msha; they run
 * only after hash.c has asked sha256_ni_available() (CPUID) once.
 */
#include "shardmap/sha256_lanes.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define SHA256_NI_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define SHA256_NI_X86 0
#endif

#if SHA256_NI_X86

#define SHA256_NI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* The 64 round constants of FIPS 180-4 §4.2.2, four to a vector. */
static _Alignas(16) const uint32_t sha256_ni_k[64] = {
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

/* Build the padded block of each key and compress them all from the initial
 * value, interleaved.  sha256rnds2 keeps the state as two vectors, ABEF and
 * CDGH (A in the top lane); the message schedule is the usual SHA-NI one
 * (sha256msg1, palignr + paddd, sha256msg2 per four words).  Cannot fail. */
static SHA256_NI_TARGET void
sha256_ni_compress(const char *const keys[SHA256_NI_LANES],
                   const size_t lens[SHA256_NI_LANES],
                   uint64_t points[SHA256_NI_LANES])
{
	/* Big-endian words: byte-reverse each 32-bit lane. */
	const __m128i bswap =
		_mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	/* H0..H7 of FIPS 180-4 §5.3.3 as ABEF and CDGH. */
	const __m128i abef0 = _mm_set_epi32(0x6a09e667, (int)0xbb67ae85,
	                                    0x510e527f, (int)0x9b05688c);
	const __m128i cdgh0 = _mm_set_epi32(0x3c6ef372, (int)0xa54ff53a,
	                                    0x1f83d9ab, 0x5be0cd19);
	_Alignas(16) unsigned char block[SHA256_NI_LANES][64];
	__m128i abef[SHA256_NI_LANES], cdgh[SHA256_NI_LANES];
	__m128i w[SHA256_NI_LANES][4];
	int lane, i;

	memset(block, 0, sizeof(block));
	for (lane = 0; lane < SHA256_NI_LANES; lane++) {
		size_t len = lens[lane];
		unsigned bits = (unsigned)len * 8;

		if (len > 0)
			memcpy(block[lane], keys[lane], len);
		block[lane][len] = 0x80;
		block[lane][62] = (unsigned char)(bits >> 8);
		block[lane][63] = (unsigned char)bits;
		abef[lane] = abef0;
		cdgh[lane] = cdgh0;
	}
#pragma GCC unroll 16
	for (i = 0; i < 16; i++) {
		const __m128i k = _mm_load_si128(
			(const __m128i *)&sha256_ni_k[(ptrdiff_t)4 * i]);

#pragma GCC unroll 16
		for (lane = 0; lane < SHA256_NI_LANES; lane++) {
			__m128i *x = w[lane], m;

			if (i < 4) {
				x[i] = _mm_shuffle_epi8(
					_mm_load_si128((
						const __m128i *)(block[lane] +
				                                 (ptrdiff_t)16 *
				                                         i)),
					bswap);
			} else {
				/* W[t-16..t-13] + σ0(W[t-15..t-12]) +
				 * W[t-7..t-4], then + σ1 of the newest. */
				__m128i t = _mm_sha256msg1_epu32(
					x[i % 4], x[(i + 1) % 4]);

				t = _mm_add_epi32(
					t, _mm_alignr_epi8(x[(i + 3) % 4],
				                           x[(i + 2) % 4], 4));
				x[i % 4] =
					_mm_sha256msg2_epu32(t, x[(i + 3) % 4]);
			}
			/* Rounds 4i, 4i+1 write the new ABEF over CDGH, whose
			 * old value the next two rounds no longer need, and
			 * 4i+2, 4i+3 write over the old ABEF: the two swap
			 * back each quad. */
			m = _mm_add_epi32(x[i % 4], k);
			cdgh[lane] = _mm_sha256rnds2_epu32(cdgh[lane],
			                                   abef[lane], m);
			m = _mm_shuffle_epi32(m, 0x0e);
			abef[lane] = _mm_sha256rnds2_epu32(abef[lane],
			                                   cdgh[lane], m);
		}
	}
	/* H0 (A) and H1 (B) are the top 64-bit lane of ABEF: A << 32 | B. */
	for (lane = 0; lane < SHA256_NI_LANES; lane++)
		points[lane] = (uint64_t)_mm_extract_epi64(
			_mm_add_epi32(abef[lane], abef0), 1);
}

/* SHA-NI and the SSSE3 and SSE4.1 the code uses, as CPUID reports them.
 * Cannot fail: a CPU without leaf 7 has no SHA-NI. */
int
sha256_ni_available(void)
{
	unsigned eax, ebx, ecx, edx;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return 0;
	if (!(ecx & bit_SSSE3) || !(ecx & bit_SSE4_1))
		return 0;
	if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
		return 0;
	return (ebx & bit_SHA) != 0;
}

#else /* not x86-64 */

/* No SHA-NI code off x86-64.  Cannot fail. */
int
sha256_ni_available(void)
{
	return 0;
}

#endif

/* Cannot fail (see sha256_lanes.h for what the caller must ensure). */
void
sha256_ni_64(const char *const keys[SHA256_NI_LANES],
             const size_t lens[SHA256_NI_LANES],
             uint64_t points[SHA256_NI_LANES])
{
#if SHA256_NI_X86
	sha256_ni_compress(keys, lens, points);
#else
	(void)keys;
	(void)lens;
	(void)points;
#endif
}
