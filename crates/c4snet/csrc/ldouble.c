/*
 * long double formatting and parsing for c4snet.
 *
 * Rust has no type for C's `long double`, so values travel as the 16 bytes
 * of their storage slot (C4SNet's element size for CTYPE_ldouble). Only the
 * bytes that carry the value are meaningful: on x86_64 the x87 format uses
 * 10 of the 16 bytes and the rest is padding, which `c4snet_ldouble_parse`
 * always zeroes so that equal values have equal bytes.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if LDBL_MANT_DIG == 64
#define SNET_LDBL_VALUE_BYTES 10
#else
#define SNET_LDBL_VALUE_BYTES sizeof(long double)
#endif

#define SNET_LDBL_SLOT 16

_Static_assert(sizeof(long double) <= SNET_LDBL_SLOT, "long double larger than its C4SNet slot");

/* Formats the long double stored in src[0..16] as printf("%.32Le") into
 * buf (capacity cap, NUL-terminated when cap > 0). Returns snprintf's result:
 * the length the full output needs. */
int c4snet_ldouble_format(char *buf, size_t cap, const unsigned char *src)
{
    long double v;
    memcpy(&v, src, sizeof v);
    return snprintf(buf, cap, "%.32Le", v);
}

/* Parses the NUL-terminated s with strtold, stores the value into
 * dst[0..16] (padding zeroed) and returns the number of bytes consumed
 * (0 when s does not start with a number). */
size_t c4snet_ldouble_parse(const char *s, unsigned char *dst)
{
    char *end = NULL;
    long double v = strtold(s, &end);
    memset(dst, 0, SNET_LDBL_SLOT);
    memcpy(dst, &v, SNET_LDBL_VALUE_BYTES);
    return (size_t)(end - s);
}
