/*
 * C4SNet.h -- the C box interface of snet (docs/c-interface.md).
 *
 * Hand-written and checked against the Rust side by crates/c4snet/tests/header.rs
 * (enum values, function types). Box code written against this header compiles
 * with `snet build PROG.snet box.c -o PROG` and no other flags.
 *
 * A c4snet_data_t* is a counted reference to a field: C4SNetShallowCopy adds
 * one reference, C4SNetFree drops one; the field's memory goes away with the
 * last reference. A box owns the field references it is called with and must
 * pass each one on (C4SNetOut takes ownership) or C4SNetFree it.
 */
#ifndef C4SNET_H
#define C4SNET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cdata c4snet_data_t;      /* an opaque, reference-counted field */

typedef enum {
    CTYPE_uchar, CTYPE_char, CTYPE_ushort, CTYPE_short,
    CTYPE_uint,  CTYPE_int,  CTYPE_ulong,  CTYPE_long,
    CTYPE_float, CTYPE_double, CTYPE_ldouble, CTYPE_pointer,
} c4snet_type_t;                          /* this order, these values */

c4snet_data_t *C4SNetAlloc(c4snet_type_t type, size_t size, void **data);
    /* new field of `size` elements; *data receives the (zero-filled) buffer */
c4snet_data_t *C4SNetCreate(c4snet_type_t type, size_t size, const void *data);
    /* new field holding a copy of `size` elements at `data` */
void           C4SNetFree(c4snet_data_t *ptr);          /* drop one reference */
c4snet_data_t *C4SNetShallowCopy(c4snet_data_t *ptr);   /* add one reference */
c4snet_data_t *C4SNetDeepCopy(c4snet_data_t *ptr);      /* independent copy */
int            C4SNetSizeof(c4snet_data_t *data);       /* bytes per element */
size_t         C4SNetArraySize(c4snet_data_t *data);    /* element count */
void          *C4SNetGetData(c4snet_data_t *ptr);       /* pointer to elements */
c4snet_type_t  C4SNetGetType(c4snet_data_t *data);
char          *C4SNetGetString(c4snet_data_t *data);    /* malloc'd NUL-terminated copy of a char array */
void           C4SNetOut(void *hnd, int variant, ...);  /* emit an output record */

#ifdef __cplusplus
}
#endif

#endif /* C4SNET_H */
