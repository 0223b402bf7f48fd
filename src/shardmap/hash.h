/*
 * The hash functions of DESIGN §2: a shard key's canonical text → a 64-bit
 * point.  These are a compatibility contract with the routers that
 * applications run, so they are exact to the bit and covered by test
 * vectors computed with independent implementations (tests/test_hash.c).
 *
 * Keys are passed as their canonical text: text keys as UTF-8 bytes,
 * integer keys in decimal ("-42").  No function here allocates or does I/O.
 */
#ifndef RS_HASH_H
#define RS_HASH_H

#include <stddef.h>
#include <stdint.h>

enum rs_hash {
	RS_HASH_SHA256_64, /* first 8 bytes of SHA-256, big-endian (default) */
	RS_HASH_JAVA,      /* |String.hashCode()| over UTF-16 code units */
	RS_HASH_FNV1A_64,  /* FNV-1a 64-bit of the bytes */
	RS_HASH_IDENTITY,  /* the non-negative integer key itself */
};

/* Name ↔ enum, as written in a plan's `hash` setting.  hash_from_name
 * returns 0, or -1 when NAME is not one of the four names. */
const char *hash_name(enum rs_hash hash);
int hash_from_name(const char *name, enum rs_hash *hash);

/* The names of all hash functions, comma-separated, for error messages. */
const char *hash_names(void);

/* Hash KEY (LEN bytes, need not be NUL-terminated) to *POINT.
 * Returns 0, or RS_EKEY when the function cannot take the key: a key that
 * is not a non-negative decimal integer fitting 64 bits for identity, or
 * a key that is not valid UTF-8 for java.  *POINT is untouched on error. */
int hash_point(enum rs_hash hash, const char *key, size_t len, uint64_t *point);

/* The individual functions, for callers that have already chosen one. */
uint64_t hash_sha256_64(const char *key, size_t len);
uint64_t hash_fnv1a_64(const char *key, size_t len);
int hash_java(const char *key, size_t len, uint64_t *point);
int hash_identity(const char *key, size_t len, uint64_t *point);

/* Hash N keys with sha256_64 at once: POINTS[i] = hash_sha256_64(KEYS[i],
 * LENS[i]).  Faster than N single calls on CPUs with AVX-512 or the SHA
 * extensions (several keys' blocks are compressed together); identical
 * results everywhere.  Cannot fail. */
void hash_sha256_64_batch(const char *const *keys, const size_t *lens, size_t n,
                          uint64_t *points);

/* The implementations hash_sha256_64_batch can use, fastest first. */
enum rs_sha256_impl {
	RS_SHA256_AVX512,  /* 32 keys at once (sha256_avx512.c) */
	RS_SHA256_SHANI,   /* 8 keys at once (sha256_ni.c) */
	RS_SHA256_OPENSSL, /* one key at a time: every CPU */
};

/* The implementation the batch uses now: the fastest this CPU has, unless
 * hash_sha256_use chose another.  Cannot fail. */
enum rs_sha256_impl hash_sha256_impl(void);

/* The name of IMPL ("avx512", "sha-ni", "openssl"), for reports, and
 * back: hash_sha256_impl_from_name returns 0, or -1 for another name. */
const char *hash_sha256_impl_name(enum rs_sha256_impl impl);
int hash_sha256_impl_from_name(const char *name, enum rs_sha256_impl *impl);

/* Make the batch use IMPL from now on (RESHARD_SHA256, tests), or the
 * fastest this CPU has again.  hash_sha256_use returns 0, or -1 when this
 * CPU cannot run IMPL (nothing changes).  Not synchronised with batches
 * running at the same time (they may take either implementation, all
 * exact). */
int hash_sha256_use(enum rs_sha256_impl impl);
void hash_sha256_use_fastest(void);

#endif
