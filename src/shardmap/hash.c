/*
 * The hash functions of DESIGN §2: sha256_64, java, fnv1a_64 and identity,
 * each turning a key's canonical text into a 64-bit point.  They are a
 * compatibility contract with the routers that applications run, so every
 * one is exact to the bit; tests/test_hash.c checks them against vectors
 * computed by Python's hashlib, a Python FNV-1a and a JVM.
 *
 * sha256_64 is on the hot path of a dry-run (one call per key read), so it
 * uses OpenSSL's low-level SHA-256 functions; see hash_sha256_64.  Callers
 * with many keys at hand use hash_sha256_64_batch, which hashes short keys
 * several at a time with AVX-512 (sha256_avx512.c) or SHA-NI (sha256_ni.c)
 * where the CPU has them, two to three times as fast, and is exact to the
 * same bit.  Nothing here allocates or does I/O, and every function is
 * reentrant: the only state is the one-time CPU checks and the choice of
 * implementation a test may force, all atomics.
 */

/*
 * SHA256_Init, SHA256_Transform and friends are deprecated in OpenSSL 3 in
 * favour of EVP, but EVP is much slower for short keys.  Measured on this
 * project's machine (AMD EPYC with SHA-NI, OpenSSL 3.0, gcc -O2, 2M keys of
 * 10 to 17 bytes from bench/gen_keys.py, single thread, ns per key):
 *
 *	EVP_Digest(..., EVP_sha256(), NULL)         310-350
 *	SHA256() one-shot (EVP_Q_digest inside)     370-600
 *	EVP_MD_fetch once + one reused EVP_MD_CTX    90-100
 *	SHA256_Init/Update/Final                         69
 *	one padded block through SHA256_Transform     52-55
 *
 * The one-shot calls look the algorithm up in the provider on every call;
 * the fetched EVP_MD still pays the EVP dispatch and would need one context
 * per thread.  The low-level functions run the same SHA-NI assembly
 * (without SHA-NI a block costs 120 ns instead of 50) with nothing around
 * it, and their context lives on the stack.  Hence this define, in this
 * file only.  If a future OpenSSL drops them, the fallback is a fetched
 * EVP_MD with a per-thread EVP_MD_CTX.
 */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "shardmap/hash.h"

#include <stdatomic.h>
#include <string.h>

#include <openssl/sha.h>

#include "common/err.h"
#include "shardmap/sha256_lanes.h"

/* Indexed by enum rs_hash: the names a plan's `hash` setting takes. */
static const char *const hash_name_table[] = {
	[RS_HASH_SHA256_64] = "sha256_64",
	[RS_HASH_JAVA] = "java",
	[RS_HASH_FNV1A_64] = "fnv1a_64",
	[RS_HASH_IDENTITY] = "identity",
};

#define HASH_COUNT (sizeof(hash_name_table) / sizeof(hash_name_table[0]))

/* Returns NULL for a value that is not an enum rs_hash. */
const char *
hash_name(enum rs_hash hash)
{
	if ((unsigned)hash >= HASH_COUNT)
		return NULL;
	return hash_name_table[hash];
}

/* The match is exact and case-sensitive, as the names are written in
 * DESIGN §2.  On error (-1) *HASH is untouched. */
int
hash_from_name(const char *name, enum rs_hash *hash)
{
	size_t i;

	if (name == NULL)
		return -1;
	for (i = 0; i < HASH_COUNT; i++) {
		if (strcmp(name, hash_name_table[i]) == 0) {
			*hash = (enum rs_hash)i;
			return 0;
		}
	}
	return -1;
}

/* Cannot fail. */
const char *
hash_names(void)
{
	return "sha256_64, java, fnv1a_64, identity";
}

/*
 * Keys of up to 55 bytes (nearly all of them) fit one SHA-256 block with
 * their padding, so the block is built here and compressed with a single
 * SHA256_Transform; the point is then the first two words of the state,
 * which is what the digest's first 8 bytes read big-endian are.  This
 * skips SHA256_Update's buffering and SHA256_Final's second padding pass
 * and byte output (52 instead of 69 ns a key).  Longer keys take the
 * ordinary Init/Update/Final path.  Cannot fail; KEY may be NULL when LEN
 * is 0.
 */
uint64_t
hash_sha256_64(const char *key, size_t len)
{
	SHA256_CTX ctx;
	unsigned char digest[SHA256_DIGEST_LENGTH];
	uint64_t point = 0;
	int i;

	SHA256_Init(&ctx);
	if (len <= SHA256_CBLOCK - 9) {
		unsigned char block[SHA256_CBLOCK];
		uint64_t bits = (uint64_t)len * 8;

		if (len > 0)
			memcpy(block, key, len);
		block[len] = 0x80;
		memset(block + len + 1, 0, SHA256_CBLOCK - 8 - (len + 1));
		for (i = 0; i < 8; i++)
			block[SHA256_CBLOCK - 8 + i] =
				(unsigned char)(bits >> (56 - 8 * i));
		SHA256_Transform(&ctx, block);
		return (uint64_t)ctx.h[0] << 32 | (uint64_t)ctx.h[1];
	}
	SHA256_Update(&ctx, key, len);
	SHA256_Final(digest, &ctx);
	for (i = 0; i < 8; i++)
		point = point << 8 | digest[i];
	return point;
}

/* A lane function: the points of its number of single-block keys. */
typedef void hash_lanes_fn(const char *const *keys, const size_t *lens,
                           uint64_t *points);

/* Indexed by enum rs_sha256_impl, fastest first: what each implementation
 * is called, which lane function it runs with how many keys a call, and
 * how to ask the CPU whether it can (NULL: OpenSSL, every CPU, one key at
 * a time). */
static const struct {
	const char *name;
	hash_lanes_fn *compress;
	size_t lanes;
	int (*available)(void);
} hash_sha256_impls[] = {
	[RS_SHA256_AVX512] = {"avx512", sha256_avx512_64, SHA256_AVX512_LANES,
                              sha256_avx512_available},
	[RS_SHA256_SHANI] = {"sha-ni", sha256_ni_64, SHA256_NI_LANES,
                             sha256_ni_available},
	[RS_SHA256_OPENSSL] = {"openssl", NULL, 1, NULL},
};

#define IMPL_COUNT (sizeof(hash_sha256_impls) / sizeof(hash_sha256_impls[0]))

/* The fastest implementation this CPU has, found on first use (-1 before:
 * asking the CPU takes CPUID, which traps to the hypervisor in a VM, too
 * slow for every batch); and the one chosen by hash_sha256_use, or -1. */
static atomic_int hash_sha256_best = -1;
static atomic_int hash_sha256_forced = -1;

/* Whether this CPU can run IMPL, an index into hash_sha256_impls. */
static int
hash_sha256_runs(size_t impl)
{
	return hash_sha256_impls[impl].available == NULL ||
	       hash_sha256_impls[impl].available();
}

/* Cannot fail. */
enum rs_sha256_impl
hash_sha256_impl(void)
{
	int impl =
		atomic_load_explicit(&hash_sha256_forced, memory_order_relaxed);

	if (impl >= 0)
		return (enum rs_sha256_impl)impl;
	impl = atomic_load_explicit(&hash_sha256_best, memory_order_relaxed);
	if (impl < 0) {
		impl = 0;
		while (!hash_sha256_runs((size_t)impl))
			impl++; /* ends at OpenSSL at the latest */
		atomic_store_explicit(&hash_sha256_best, impl,
		                      memory_order_relaxed);
	}
	return (enum rs_sha256_impl)impl;
}

/* Returns NULL for a value that is not an enum rs_sha256_impl. */
const char *
hash_sha256_impl_name(enum rs_sha256_impl impl)
{
	if ((unsigned)impl >= IMPL_COUNT)
		return NULL;
	return hash_sha256_impls[impl].name;
}

/* The match is exact; on error (-1) *IMPL is untouched. */
int
hash_sha256_impl_from_name(const char *name, enum rs_sha256_impl *impl)
{
	for (size_t i = 0; i < IMPL_COUNT; i++) {
		if (strcmp(name, hash_sha256_impls[i].name) == 0) {
			*impl = (enum rs_sha256_impl)i;
			return 0;
		}
	}
	return -1;
}

/* Returns 0, or -1 when the CPU lacks IMPL or IMPL is not one. */
int
hash_sha256_use(enum rs_sha256_impl impl)
{
	if ((unsigned)impl >= IMPL_COUNT || !hash_sha256_runs(impl))
		return -1;
	atomic_store_explicit(&hash_sha256_forced, (int)impl,
	                      memory_order_relaxed);
	return 0;
}

/* Cannot fail. */
void
hash_sha256_use_fastest(void)
{
	atomic_store_explicit(&hash_sha256_forced, -1, memory_order_relaxed);
}

#define LANES_MAX SHA256_AVX512_LANES

/* Whether each of the N lengths fits one block.  Cannot fail. */
static inline int
hash_all_short(const size_t *lens, size_t n)
{
	size_t longest = 0;

	for (size_t i = 0; i < n; i++)
		longest |= lens[i];
	/* The OR is at least the largest length: if it is <= 55, so are
	 * all; otherwise look at each. */
	if (longest <= SHA256_LANES_MAX_LEN)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (lens[i] > SHA256_LANES_MAX_LEN)
			return 0;
	return 1;
}

/* Short keys gathered from around long ones, for one call of a lane
 * function. */
struct hash_lanes {
	const char *key[LANES_MAX];
	size_t len[LANES_MAX];
	size_t index[LANES_MAX]; /* where each key's point goes */
};

/* Hash the USED keys of GATHER with COMPRESS (which takes LANES keys; the
 * lanes past USED get empty keys, whose points are dropped) and put each
 * point at its index in POINTS.  Cannot fail. */
static void
hash_lanes_flush(struct hash_lanes *gather, size_t used, size_t lanes,
                 hash_lanes_fn *compress, uint64_t *points)
{
	uint64_t point[LANES_MAX];

	for (size_t lane = used; lane < lanes; lane++) {
		gather->key[lane] = NULL;
		gather->len[lane] = 0;
	}
	compress(gather->key, gather->len, point);
	for (size_t lane = 0; lane < used; lane++)
		points[gather->index[lane]] = point[lane];
}

/*
 * Keys of at most 55 bytes (one block) are hashed as many at a time as the
 * implementation takes (32 for AVX-512, 8 for SHA-NI; see sha256_avx512.c
 * and sha256_ni.c for the figures): straight from KEYS and LENS where a
 * whole group is short, else gathered around the long keys; the lanes left
 * over at the end are filled with empty keys, whose points are dropped.
 * Longer keys, and every key on a CPU with neither, take hash_sha256_64.
 * Cannot fail; a KEYS[i] may be NULL when its LENS[i] is 0, and KEYS, LENS
 * and POINTS may be NULL when N is 0.
 */
void
hash_sha256_64_batch(const char *const *keys, const size_t *lens, size_t n,
                     uint64_t *points)
{
	struct hash_lanes gather;
	enum rs_sha256_impl impl = hash_sha256_impl();
	hash_lanes_fn *compress = hash_sha256_impls[impl].compress;
	size_t i, used = 0, lanes = hash_sha256_impls[impl].lanes;

	if (compress == NULL) {
		for (i = 0; i < n; i++)
			points[i] = hash_sha256_64(keys[i], lens[i]);
		return;
	}
	for (i = 0; i < n; i++) {
		/* A whole group of short keys is hashed where it lies. */
		if (used == 0 && n - i >= lanes &&
		    hash_all_short(lens + i, lanes)) {
			compress(keys + i, lens + i, points + i);
			i += lanes - 1;
			continue;
		}
		if (lens[i] > SHA256_LANES_MAX_LEN) {
			points[i] = hash_sha256_64(keys[i], lens[i]);
			continue;
		}
		gather.key[used] = keys[i];
		gather.len[used] = lens[i];
		gather.index[used] = i;
		if (++used == lanes) {
			hash_lanes_flush(&gather, used, lanes, compress,
			                 points);
			used = 0;
		}
	}
	if (used > 0)
		hash_lanes_flush(&gather, used, lanes, compress, points);
}

/* Cannot fail; KEY may be NULL when LEN is 0. */
uint64_t
hash_fnv1a_64(const char *key, size_t len)
{
	const unsigned char *byte = (const unsigned char *)key;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= byte[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/*
 * Decode the UTF-8 sequence at S (AVAIL bytes left, at least 1) into
 * *CODE_POINT and return its length, or 0 if it is not well-formed by
 * Unicode's table 3-7 (RFC 3629): no overlong forms, no encoded surrogates
 * (U+D800..U+DFFF, so no CESU-8 either), nothing above U+10FFFF, no
 * truncated sequence.  This is what the JDK's UTF-8 decoder refuses when
 * told to report malformed input rather than replace it with U+FFFD.
 */
static size_t
hash_utf8_decode(const unsigned char *s, size_t avail, uint32_t *code_point)
{
	unsigned char lead = s[0];
	unsigned char low = 0x80, high = 0xbf; /* range of the second byte */
	size_t len, i;
	uint32_t cp;

	if (lead < 0x80) {
		*code_point = lead;
		return 1;
	} else if (lead >= 0xc2 && lead <= 0xdf) {
		len = 2;
		cp = lead & 0x1f;
	} else if (lead >= 0xe0 && lead <= 0xef) {
		len = 3;
		cp = lead & 0x0f;
		if (lead == 0xe0)
			low = 0xa0; /* below is overlong */
		else if (lead == 0xed)
			high = 0x9f; /* above is a surrogate */
	} else if (lead >= 0xf0 && lead <= 0xf4) {
		len = 4;
		cp = lead & 0x07;
		if (lead == 0xf0)
			low = 0x90; /* below is overlong */
		else if (lead == 0xf4)
			high = 0x8f; /* above is past U+10FFFF */
	} else {
		return 0; /* continuation byte, C0, C1 or F5..FF */
	}
	if (avail < len || s[1] < low || s[1] > high)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	*code_point = cp;
	return len;
}

/*
 * Java's String.hashCode() of the key decoded from UTF-8: h = 31·h + c over
 * the UTF-16 code units, wrapping at 32 bits (done in uint32_t, where
 * wrapping is defined), then Math.abs((long) h): a negative h, read as a
 * two's complement int, becomes 2^32 - h, so -2^31 gives 2^31.  Characters
 * outside the BMP count as their surrogate pair.
 *
 * Returns 0, or RS_EKEY when KEY is not valid UTF-8 (see hash_utf8_decode);
 * *POINT is untouched on error.
 */
int
hash_java(const char *key, size_t len, uint64_t *point)
{
	const unsigned char *s = (const unsigned char *)key;
	uint32_t h = 0;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n;

		if (s[i] < 0x80) {
			h = 31u * h + s[i++];
			continue;
		}
		n = hash_utf8_decode(s + i, len - i, &cp);
		if (n == 0)
			return RS_EKEY;
		i += n;
		if (cp < 0x10000) {
			h = 31u * h + cp;
		} else {
			cp -= 0x10000;
			h = 31u * h + (0xd800 + (cp >> 10));
			h = 31u * h + (0xdc00 + (cp & 0x3ff));
		}
	}
	if (h & UINT32_C(0x80000000))
		*point = (UINT64_C(1) << 32) - h;
	else
		*point = h;
	return 0;
}

/*
 * The key read as a non-negative decimal integer: one or more ASCII digits
 * and nothing else (no sign, not even "+" or "-0", no spaces, no "0x"),
 * with a value of at most 2^64 - 1.  Leading zeros are accepted and ignored
 * ("007" is 7), as by SQL's CAST('007' AS BIGINT), Java's Long.parseLong and
 * Python's int(); a key that reaches reshard as text from a varchar column
 * or a --keys file gets the point its number has.  (Integer columns never
 * produce them: their canonical text has none.)
 *
 * Returns 0, or RS_EKEY for any other key; *POINT is untouched on error.
 */
int
hash_identity(const char *key, size_t len, uint64_t *point)
{
	uint64_t value = 0;
	size_t i;

	if (len == 0)
		return RS_EKEY;
	for (i = 0; i < len; i++) {
		unsigned digit = (unsigned char)key[i] - (unsigned)'0';

		if (digit > 9)
			return RS_EKEY;
		if (value > (UINT64_MAX - digit) / 10)
			return RS_EKEY; /* does not fit 64 bits */
		value = value * 10 + digit;
	}
	*point = value;
	return 0;
}

/*
 * Returns 0, RS_EKEY as described in hash.h, or RS_EINTERNAL when HASH is
 * not an enum rs_hash (a bug in the caller).  *POINT is untouched on error.
 */
int
hash_point(enum rs_hash hash, const char *key, size_t len, uint64_t *point)
{
	switch (hash) {
	case RS_HASH_SHA256_64:
		*point = hash_sha256_64(key, len);
		return 0;
	case RS_HASH_JAVA:
		return hash_java(key, len, point);
	case RS_HASH_FNV1A_64:
		*point = hash_fnv1a_64(key, len);
		return 0;
	case RS_HASH_IDENTITY:
		return hash_identity(key, len, point);
	}
	return RS_EINTERNAL;
}
