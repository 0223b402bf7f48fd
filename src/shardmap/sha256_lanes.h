/*
 * Single-block SHA-256 of several messages at once: the private helpers
 * behind hash_sha256_64_batch (shardmap/hash.h), not an interface of their
 * own.  Two implementations, one file each: sha256_avx512.c (AVX-512, 32
 * messages a call) and sha256_ni.c (the SHA extensions, 8 a call).  Only
 * hash.c and the unit tests include this header.  Everything here gives
 * the same points as hash_sha256_64, which stays the reference (OpenSSL).
 *
 * A lane function's contract: POINTS[i] = hash_sha256_64(KEYS[i], LENS[i])
 * for its number of keys, each of at most SHA256_LANES_MAX_LEN bytes (a
 * KEYS[i] may be NULL when its LENS[i] is 0).  Only call it when its
 * _available function says 1: anywhere else it may die of an illegal
 * instruction.  A longer key is a bug in the caller and is not checked
 * (the point is wrong).  Cannot fail.
 */
#ifndef RS_SHA256_LANES_H
#define RS_SHA256_LANES_H

#include <stddef.h>
#include <stdint.h>

/* The longest key that fits one SHA-256 block with its padding. */
#define SHA256_LANES_MAX_LEN 55

/* Keys a call of each lane function hashes (see each file for why). */
#define SHA256_AVX512_LANES 32
#define SHA256_NI_LANES     8

/* Whether the CPU and this build can run each: x86-64, and AVX512F and
 * AVX512BW with the AVX-512 state enabled by the operating system (XGETBV),
 * or SHA-NI with the SSSE3 and SSE4.1 the code also uses.  Each call asks
 * the CPU (CPUID, which traps to the hypervisor in a VM): hash.c asks once
 * and keeps the answer.  Cannot fail; returns 0 or 1. */
int sha256_avx512_available(void);
int sha256_ni_available(void);

/* The lane functions.  sha256_avx512_64 reads exactly LENS[i] bytes of each
 * key (masked loads); sha256_ni_64 copies each key into its block. */
void sha256_avx512_64(const char *const keys[SHA256_AVX512_LANES],
                      const size_t lens[SHA256_AVX512_LANES],
                      uint64_t points[SHA256_AVX512_LANES]);
void sha256_ni_64(const char *const keys[SHA256_NI_LANES],
                  const size_t lens[SHA256_NI_LANES],
                  uint64_t points[SHA256_NI_LANES]);

#endif
