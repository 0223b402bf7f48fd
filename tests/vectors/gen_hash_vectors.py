#!/usr/bin/env python3
"""Generate tests/vectors/hash_vectors.h, the test vectors of DESIGN §2.

The expected points come from implementations independent of
src/shardmap/hash.c:

  sha256_64  Python's hashlib (first 8 bytes of the digest, big-endian)
  fnv1a_64   the few lines of FNV-1a below, checked against published vectors
  java       a real JVM: JavaHash.java decodes the bytes with the JDK's UTF-8
             decoder and prints Math.abs((long) s.hashCode())

Invalid UTF-8 keys are checked to be rejected by both Python's strict decoder
and the JDK's, so the C tests assert only what two other implementations agree
on.  Keys whose Java hashCode sits on the edges of the abs() step (-2^31,
-2^31 + 1, -1, 2^31 - 1) are found here by solving for a short suffix, and the
JVM confirms their hashCode.

Run from anywhere (needs python3, javac and java on PATH):

  python3 tests/vectors/gen_hash_vectors.py

It rewrites hash_vectors.h beside this script; commit the result.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "hash_vectors.h")

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1


def sha256_64(key):
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def fnv1a_64(key):
    h = FNV_OFFSET
    for b in key:
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return h


# Published FNV-1a 64 vectors (Landon Curt Noll's test suite), so that the
# reference above is not merely checked against itself.
assert fnv1a_64(b"") == 0xCBF29CE484222325
assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
assert fnv1a_64(b"foobar") == 0x85944171F73967E8


def java_string_hash(text):
    """Java's String.hashCode(), as a signed 32-bit int; only used to find
    keys for the edge cases and as a cross-check of the JVM's output."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def find_java_key(target, prefix):
    """A key PREFIX + WORD + 6 lowercase letters whose Java hashCode is
    TARGET, for the first WORD (in a fixed order) that has one."""
    base = 31 ** 6
    lowest = sum(ord("a") * 31 ** k for k in range(6))
    words = [""] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words += [a + b for a in words[1:] for b in words[1:]]
    for word in words:
        head = java_string_hash(prefix + word) & 0xFFFFFFFF
        rest = (target - head * base - lowest) % (1 << 32)
        if rest >= base:
            continue
        digits = []
        for _ in range(6):
            digits.append(rest % 31)
            rest //= 31
        if max(digits) < 26:
            suffix = "".join(chr(ord("a") + d) for d in reversed(digits))
            key = prefix + word + suffix
            assert java_string_hash(key) == target
            return key
    raise SystemExit("no key found for hashCode %d" % target)


INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1

# (key, note): valid UTF-8 keys, hashed by all three byte/text functions.
VALID = [
    ("customer-42", "ASCII"),
    ("hello", "ASCII"),
    ("The quick brown fox jumps over the lazy dog", "ASCII, 43 bytes"),
    ("0", "integer key"),
    ("12345", "integer key"),
    ("-42", "negative integer key, in its decimal form"),
    ("18446744073709551615", "integer key, UINT64_MAX"),
    ("", "empty key"),
    ("a\0b", "embedded NUL byte"),
    ("é", "U+00E9, two UTF-8 bytes"),
    ("Grüße", "Latin-1 letters"),
    ("東京", "CJK, three UTF-8 bytes each"),
    ("😀", "U+1F600, outside the BMP: a surrogate pair"),
    ("𝄞", "U+1D11E, outside the BMP: a surrogate pair"),
    ("a\u00e9\u20ac\U0001F600z", "1-, 2-, 3- and 4-byte sequences mixed"),
    ("\u0080", "U+0080, smallest 2-byte sequence"),
    ("\u07ff", "U+07FF, largest 2-byte sequence"),
    ("\u0800", "U+0800, smallest 3-byte sequence"),
    ("\ud7ff", "U+D7FF, just below the surrogates"),
    ("\ue000", "U+E000, just above the surrogates"),
    ("\uffff", "U+FFFF, largest 3-byte sequence"),
    ("\U00010000", "U+10000, smallest 4-byte sequence"),
    ("\U0010ffff", "U+10FFFF, largest code point"),
    ("polygenelubricants", "Java hashCode is Integer.MIN_VALUE"),
    (find_java_key(INT_MIN, "k"), "Java hashCode is Integer.MIN_VALUE"),
    (find_java_key(INT_MIN + 1, "k"), "Java hashCode is Integer.MIN_VALUE + 1"),
    (find_java_key(-1, "k"), "Java hashCode is -1"),
    (find_java_key(INT_MAX, "k"), "Java hashCode is Integer.MAX_VALUE"),
    ("a" * 55, "55 bytes: SHA-256 padding fits one block"),
    ("a" * 56, "56 bytes: SHA-256 padding needs a second block"),
    ("a" * 64, "64 bytes: one full SHA-256 block"),
    ("customer-" + "é東😀" * 100, "long key, several SHA-256 blocks"),
] + [
    # Around the SHA-256 block and padding boundaries, with bytes that differ
    # by position so that an off-by-one in the padding shows.
    ("".join(chr(0x21 + i % 94) for i in range(n)),
     "%d bytes around a SHA-256 block boundary" % n)
    for n in (54, 57, 63, 65, 119, 120, 128)
]

# (key bytes, note): not UTF-8, so java must reject them; sha256_64 and
# fnv1a_64 hash them like any bytes.
INVALID = [
    (b"\x80", "lone continuation byte"),
    (b"\xbf", "lone continuation byte"),
    (b"a\xffb", "0xFF never appears in UTF-8"),
    (b"\xfe", "0xFE never appears in UTF-8"),
    (b"\xc0\x80", "overlong NUL"),
    (b"\xc1\xbf", "overlong 2-byte"),
    (b"\xe0\x80\x80", "overlong 3-byte"),
    (b"\xe0\x9f\xbf", "overlong 3-byte (U+07FF)"),
    (b"\xf0\x80\x80\x80", "overlong 4-byte"),
    (b"\xf0\x8f\xbf\xbf", "overlong 4-byte (U+FFFF)"),
    (b"\xed\xa0\x80", "surrogate U+D800 encoded"),
    (b"\xed\xbf\xbf", "surrogate U+DFFF encoded"),
    (b"\xed\xa0\xbd\xed\xb8\x80", "CESU-8 surrogate pair of U+1F600"),
    (b"\xf4\x90\x80\x80", "U+110000, above U+10FFFF"),
    (b"\xf5\x80\x80\x80", "lead byte 0xF5"),
    (b"\xf8\x88\x80\x80\x80", "5-byte sequence"),
    (b"\xfc\x84\x80\x80\x80\x80", "6-byte sequence"),
    (b"\xc3", "truncated 2-byte sequence"),
    (b"abc\xc3", "truncated 2-byte sequence at the end"),
    (b"\xe2\x82", "truncated 3-byte sequence"),
    (b"\xf0\x9f\x98", "truncated 4-byte sequence"),
    (b"\xc3\x28", "bad continuation byte"),
    (b"\xe2\x28\xa1", "bad second byte of 3"),
    (b"\xe2\x82\x28", "bad third byte of 3"),
    (b"\xf0\x28\x8c\xbc", "bad second byte of 4"),
    (b"\xf0\x9f\x98\x28", "bad fourth byte of 4"),
    (b"\xc3\xa9\xc3", "valid, then truncated"),
]


def run_java(keys):
    """{key bytes: (ok, hashCode, point)} from JavaHash.java."""
    javac = shutil.which("javac")
    java = shutil.which("java")
    if javac is None or java is None:
        raise SystemExit("gen_hash_vectors.py: javac and java are needed")
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([javac, "-d", classes,
                        os.path.join(HERE, "JavaHash.java")], check=True)
        out = subprocess.run([java, "-cp", classes, "JavaHash"]
                             + [k.hex() for k in keys],
                             check=True, capture_output=True, text=True)
    results = {}
    lines = out.stdout.split("\n")[:-1]
    assert len(lines) == len(keys), out.stdout
    for key, line in zip(keys, lines):
        fields = line.split(" ")
        assert fields[0] == key.hex(), line
        if fields[1] == "ok":
            results[key] = (True, int(fields[2]), int(fields[3]))
        else:
            assert fields[1:] == ["invalid"], line
            results[key] = (False, None, None)
    return results


def c_string(key):
    """KEY as C string literal(s), a new one on each line after 56 columns.
    Bytes outside printable ASCII become \\x escapes; a hex digit right after
    one starts a new literal, since C reads \\x escapes greedily.  '?' is
    escaped too so that no trigraph can form."""
    lines = [[]]
    width = 0
    after_hex = False
    for b in key:
        c = chr(b)
        if width >= 56:
            lines.append([])
            width = 0
            after_hex = False
        if 0x20 <= b < 0x7F and c not in '"\\?':
            token = c
            if after_hex and c in "0123456789abcdefABCDEF":
                token = '" "' + c
            after_hex = False
        else:
            token = "\\x%02x" % b
            after_hex = True
        lines[-1].append(token)
        width += len(token)
    return "\n\t  ".join('"' + "".join(line) + '"' for line in lines)


def comment(key, note):
    """A comment naming the key: its text when short and printable."""
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if (text is not None and 0 < len(text) <= 40 and text.isprintable()
            and "*/" not in text and "??" not in text):
        return "/* %s: %s */" % (text, note)
    return "/* %s */" % note


def main():
    valid = [(k.encode("utf-8"), note) for k, note in VALID]
    keys = [k for k, _ in valid] + [k for k, _ in INVALID]
    assert len(set(keys)) == len(keys), "duplicate key"
    java = run_java(keys)

    lines = []
    for key, note in valid:
        ok, code, point = java[key]
        assert ok, "the JVM rejected %r" % key
        assert code == java_string_hash(key.decode("utf-8")), key
        assert point == abs(code)
        lines.append("\t%s\n\t{%s, %d,\n\t UINT64_C(0x%016x), UINT64_C(%d),\n"
                     "\t UINT64_C(0x%016x)},"
                     % (comment(key, note), c_string(key), len(key),
                        sha256_64(key), point, fnv1a_64(key)))
    codes = [java[k][1] for k, _ in valid]
    for edge in (INT_MIN, INT_MIN + 1, -1, INT_MAX):
        assert edge in codes, edge

    bad_lines = []
    for key, note in INVALID:
        try:
            key.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            raise SystemExit("Python decodes %r" % key)
        assert not java[key][0], "the JVM accepts %r" % key
        bad_lines.append("\t%s\n\t{%s, %d,\n\t UINT64_C(0x%016x), "
                         "UINT64_C(0x%016x)},"
                         % (comment(key, note), c_string(key), len(key),
                            sha256_64(key), fnv1a_64(key)))

    with open(OUTPUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(HEADER)
        f.write("static const struct hash_vector hash_vectors[] = {\n")
        f.write("\n".join(lines))
        f.write("\n};\n\n")
        f.write("static const struct hash_bad_utf8 hash_bad_utf8[] = {\n")
        f.write("\n".join(bad_lines))
        f.write("\n};\n\n/* clang-format on */\n\n#endif\n")
    print("wrote %s: %d vectors, %d invalid UTF-8 keys"
          % (os.path.relpath(OUTPUT), len(lines), len(bad_lines)))


HEADER = """\
/*
 * Test vectors for src/shardmap/hash.c (DESIGN §2).
 *
 * GENERATED by tests/vectors/gen_hash_vectors.py: do not edit, run it again.
 * sha256_64 comes from Python's hashlib, fnv1a_64 from an FNV-1a written in
 * Python, java from a JVM running tests/vectors/JavaHash.java
 * (Math.abs((long) new String(bytes, UTF_8).hashCode())).  Keys are byte
 * strings with an explicit length: some hold NUL bytes.
 */
#ifndef RS_HASH_VECTORS_H
#define RS_HASH_VECTORS_H

#include <stddef.h>
#include <stdint.h>

struct hash_vector {
	const char *key;    /* the key bytes, valid UTF-8 */
	size_t len;         /* their number */
	uint64_t sha256_64; /* expected points */
	uint64_t java;
	uint64_t fnv1a_64;
};

/* Keys that are not UTF-8: java must reject them with RS_EKEY, both JVM and
 * Python refuse to decode them; the byte hashes still take them. */
struct hash_bad_utf8 {
	const char *key;
	size_t len;
	uint64_t sha256_64;
	uint64_t fnv1a_64;
};

/* clang-format off */
"""

if __name__ == "__main__":
    sys.exit(main())
