/*
 * Single-block SHA-256 with AVX-512, 32 messages at once: the second
 * private helper behind hash_sha256_64_batch (shardmap/hash.h), beside
 * sha256_ni.h.  Only hash.c and the unit tests include this header.
 * Everything here gives the same points as hash_sha256_64, which stays the
 * reference (OpenSSL).
 */
#ifndef RS_SHA256_AVX512_H
#define RS_SHA256_AVX512_H

#include <stddef.h>
#include <stdint.h>

/* How many keys sha256_avx512_64 hashes in one call: two groups of 16
 * 32-bit lanes, interleaved (see sha256_avx512.c for why two). */
#define SHA256_AVX512_LANES 32

/* The longest key that fits one SHA-256 block with its padding. */
#define SHA256_AVX512_MAX_LEN 55

/* Whether sha256_avx512_64 may be called: built for x86-64, the CPU has
 * AVX512F and AVX512BW, and the operating system saves the AVX-512 state
 * (XGETBV).  Cannot fail; returns 0 or 1. */
int sha256_avx512_available(void);

/* POINTS[i] = hash_sha256_64(KEYS[i], LENS[i]) for SHA256_AVX512_LANES keys
 * of at most SHA256_AVX512_MAX_LEN bytes each (a KEYS[i] may be NULL when
 * its LENS[i] is 0).  Reads exactly LENS[i] bytes of each key (masked
 * loads).  Only call it when sha256_avx512_available() says 1: anywhere
 * else it may die of an illegal instruction.  A longer key is a bug in the
 * caller and is not checked (the point is wrong). */
void sha256_avx512_64(const char *const keys[SHA256_AVX512_LANES],
                      const size_t lens[SHA256_AVX512_LANES],
                      uint64_t points[SHA256_AVX512_LANES]);

#endif
