/*
 * Single-block SHA-256 with the x86 SHA extensions (SHA-NI), several
 * messages at once: the private helper behind hash_sha256_64_batch
 * (shardmap/hash.h), not an interface of its own.  Only hash.c and the unit
 * tests include this header.  Everything here gives the same points as
 * hash_sha256_64, which stays the reference (OpenSSL).
 */
#ifndef RS_SHA256_NI_H
#define RS_SHA256_NI_H

#include <stddef.h>
#include <stdint.h>

/* How many keys sha256_ni_64 hashes in one call (interleaved); see
 * sha256_ni.c for why 8. */
#define SHA256_NI_LANES 8

/* The longest key that fits one SHA-256 block with its padding. */
#define SHA256_NI_MAX_LEN 55

/* Whether sha256_ni_64 may be called: the CPU has SHA-NI (and the SSSE3
 * and SSE4.1 the code also uses) and this was built for x86-64.  Cannot
 * fail; returns 0 or 1. */
int sha256_ni_available(void);

/* POINTS[i] = hash_sha256_64(KEYS[i], LENS[i]) for SHA256_NI_LANES keys of
 * at most SHA256_NI_MAX_LEN bytes each (a KEYS[i] may be NULL when its LENS[i]
 * is 0).  Only call it when sha256_ni_available() says 1: anywhere else it
 * does not check and may die of an illegal instruction.  A longer key is a
 * bug in the caller; it is not checked either (its bytes past
 * SHA256_NI_MAX_LEN are ignored and the point is wrong). */
void sha256_ni_64(const char *const keys[SHA256_NI_LANES],
                  const size_t lens[SHA256_NI_LANES],
                  uint64_t points[SHA256_NI_LANES]);

#endif
