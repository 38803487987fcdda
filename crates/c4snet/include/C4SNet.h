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

#if (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L) \
    || (defined(__cplusplus) && __cplusplus >= 201103L)
/* C4SNetOut with its values in an array, each converted to unsigned long
 * long (an int tag by its value, a field by its address), and their count:
 * the same output, without the variadic call. A count other than the
 * variant's count of values is an error naming the box. */
void           C4SNetOutValues(void *hnd, int variant,
                               const unsigned long long *values, int count);
#endif

/*
 * In C99 and later C (not C++), with 64-bit pointers, a call
 * C4SNetOut(hnd, variant, v1, ..., vn) is a macro: it calls
 * C4SNetOutValues(hnd, variant, (const unsigned long long[]){
 * (unsigned long long)(v1), ... }, n), with n counted here at compile
 * time. Each argument appears once in the expansion, so it is evaluated
 * once (in no particular order, as a call's arguments are). At most 32
 * values: a call with more is an error at compile time (write it
 * (C4SNetOut)(hnd, variant, ...), which calls the function). The
 * variadic function stays: (C4SNetOut)(...), its address, C89, C++, and
 * any file that defines C4SNET_NO_OUT_MACRO before including this header
 * (or #undefs C4SNetOut) call it.
 */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L \
    && defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 8 \
    && !defined(C4SNET_NO_OUT_MACRO)
#define C4SNetOut(...) \
    C4SNET_CAT_(C4SNET_OUT_, C4SNET_NVALUES_(__VA_ARGS__))(void, __VA_ARGS__)
#define C4SNET_CAT_(a, b) C4SNET_CAT2_(a, b)
#define C4SNET_CAT2_(a, b) a##b
/* The count of values (the count of arguments less the handle and the
 * variant): 0 to 32, C4SNET_MANY_ for 33 to 64, C4SNET_BAD_ for no
 * variant. Beyond 64 it is a token of the call's own, and the
 * C4SNET_OUT_ name it makes is either not defined (the leading argument
 * `void` then makes the call a syntax error) or defined and passed too
 * many arguments: an error too. */
#define C4SNET_NVALUES_(...) C4SNET_PICK_(__VA_ARGS__, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, C4SNET_MANY_, \
    C4SNET_MANY_, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, \
    18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, \
    C4SNET_BAD_, ~)
#define C4SNET_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, \
    _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, \
    _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, _41, \
    _42, _43, _44, _45, _46, _47, _48, _49, _50, _51, _52, _53, _54, _55, \
    _56, _57, _58, _59, _60, _61, _62, _63, _64, _65, _66, n, ...) n
#define C4SNET_OUT_C4SNET_BAD_(t, ...) (C4SNetOut)(__VA_ARGS__)
#define C4SNET_OUT_C4SNET_MANY_(...) ((void)sizeof(struct { int c4snet_; \
    _Static_assert(0, "C4SNetOut: more than 32 values; call the function " \
                      "itself: (C4SNetOut)(hnd, variant, ...)"); }))
#define C4SNET_OUT_0(t, h, v) C4SNetOutValues((h), (v), 0, 0)
#define C4SNET_OUT_1(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W1_(__VA_ARGS__) }, 1)
#define C4SNET_OUT_2(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W2_(__VA_ARGS__) }, 2)
#define C4SNET_OUT_3(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W3_(__VA_ARGS__) }, 3)
#define C4SNET_OUT_4(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W4_(__VA_ARGS__) }, 4)
#define C4SNET_OUT_5(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W5_(__VA_ARGS__) }, 5)
#define C4SNET_OUT_6(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W6_(__VA_ARGS__) }, 6)
#define C4SNET_OUT_7(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W7_(__VA_ARGS__) }, 7)
#define C4SNET_OUT_8(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W8_(__VA_ARGS__) }, 8)
#define C4SNET_OUT_9(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W9_(__VA_ARGS__) }, 9)
#define C4SNET_OUT_10(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W10_(__VA_ARGS__) }, 10)
#define C4SNET_OUT_11(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W11_(__VA_ARGS__) }, 11)
#define C4SNET_OUT_12(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W12_(__VA_ARGS__) }, 12)
#define C4SNET_OUT_13(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W13_(__VA_ARGS__) }, 13)
#define C4SNET_OUT_14(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W14_(__VA_ARGS__) }, 14)
#define C4SNET_OUT_15(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W15_(__VA_ARGS__) }, 15)
#define C4SNET_OUT_16(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W16_(__VA_ARGS__) }, 16)
#define C4SNET_OUT_17(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W17_(__VA_ARGS__) }, 17)
#define C4SNET_OUT_18(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W18_(__VA_ARGS__) }, 18)
#define C4SNET_OUT_19(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W19_(__VA_ARGS__) }, 19)
#define C4SNET_OUT_20(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W20_(__VA_ARGS__) }, 20)
#define C4SNET_OUT_21(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W21_(__VA_ARGS__) }, 21)
#define C4SNET_OUT_22(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W22_(__VA_ARGS__) }, 22)
#define C4SNET_OUT_23(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W23_(__VA_ARGS__) }, 23)
#define C4SNET_OUT_24(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W24_(__VA_ARGS__) }, 24)
#define C4SNET_OUT_25(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W25_(__VA_ARGS__) }, 25)
#define C4SNET_OUT_26(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W26_(__VA_ARGS__) }, 26)
#define C4SNET_OUT_27(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W27_(__VA_ARGS__) }, 27)
#define C4SNET_OUT_28(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W28_(__VA_ARGS__) }, 28)
#define C4SNET_OUT_29(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W29_(__VA_ARGS__) }, 29)
#define C4SNET_OUT_30(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W30_(__VA_ARGS__) }, 30)
#define C4SNET_OUT_31(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W31_(__VA_ARGS__) }, 31)
#define C4SNET_OUT_32(t, h, v, ...) C4SNetOutValues((h), (v), \
    (const unsigned long long[]){ C4SNET_W32_(__VA_ARGS__) }, 32)
#define C4SNET_W1_(a) (unsigned long long)(a)
#define C4SNET_W2_(a, ...) (unsigned long long)(a), C4SNET_W1_(__VA_ARGS__)
#define C4SNET_W3_(a, ...) (unsigned long long)(a), C4SNET_W2_(__VA_ARGS__)
#define C4SNET_W4_(a, ...) (unsigned long long)(a), C4SNET_W3_(__VA_ARGS__)
#define C4SNET_W5_(a, ...) (unsigned long long)(a), C4SNET_W4_(__VA_ARGS__)
#define C4SNET_W6_(a, ...) (unsigned long long)(a), C4SNET_W5_(__VA_ARGS__)
#define C4SNET_W7_(a, ...) (unsigned long long)(a), C4SNET_W6_(__VA_ARGS__)
#define C4SNET_W8_(a, ...) (unsigned long long)(a), C4SNET_W7_(__VA_ARGS__)
#define C4SNET_W9_(a, ...) (unsigned long long)(a), C4SNET_W8_(__VA_ARGS__)
#define C4SNET_W10_(a, ...) (unsigned long long)(a), C4SNET_W9_(__VA_ARGS__)
#define C4SNET_W11_(a, ...) (unsigned long long)(a), C4SNET_W10_(__VA_ARGS__)
#define C4SNET_W12_(a, ...) (unsigned long long)(a), C4SNET_W11_(__VA_ARGS__)
#define C4SNET_W13_(a, ...) (unsigned long long)(a), C4SNET_W12_(__VA_ARGS__)
#define C4SNET_W14_(a, ...) (unsigned long long)(a), C4SNET_W13_(__VA_ARGS__)
#define C4SNET_W15_(a, ...) (unsigned long long)(a), C4SNET_W14_(__VA_ARGS__)
#define C4SNET_W16_(a, ...) (unsigned long long)(a), C4SNET_W15_(__VA_ARGS__)
#define C4SNET_W17_(a, ...) (unsigned long long)(a), C4SNET_W16_(__VA_ARGS__)
#define C4SNET_W18_(a, ...) (unsigned long long)(a), C4SNET_W17_(__VA_ARGS__)
#define C4SNET_W19_(a, ...) (unsigned long long)(a), C4SNET_W18_(__VA_ARGS__)
#define C4SNET_W20_(a, ...) (unsigned long long)(a), C4SNET_W19_(__VA_ARGS__)
#define C4SNET_W21_(a, ...) (unsigned long long)(a), C4SNET_W20_(__VA_ARGS__)
#define C4SNET_W22_(a, ...) (unsigned long long)(a), C4SNET_W21_(__VA_ARGS__)
#define C4SNET_W23_(a, ...) (unsigned long long)(a), C4SNET_W22_(__VA_ARGS__)
#define C4SNET_W24_(a, ...) (unsigned long long)(a), C4SNET_W23_(__VA_ARGS__)
#define C4SNET_W25_(a, ...) (unsigned long long)(a), C4SNET_W24_(__VA_ARGS__)
#define C4SNET_W26_(a, ...) (unsigned long long)(a), C4SNET_W25_(__VA_ARGS__)
#define C4SNET_W27_(a, ...) (unsigned long long)(a), C4SNET_W26_(__VA_ARGS__)
#define C4SNET_W28_(a, ...) (unsigned long long)(a), C4SNET_W27_(__VA_ARGS__)
#define C4SNET_W29_(a, ...) (unsigned long long)(a), C4SNET_W28_(__VA_ARGS__)
#define C4SNET_W30_(a, ...) (unsigned long long)(a), C4SNET_W29_(__VA_ARGS__)
#define C4SNET_W31_(a, ...) (unsigned long long)(a), C4SNET_W30_(__VA_ARGS__)
#define C4SNET_W32_(a, ...) (unsigned long long)(a), C4SNET_W31_(__VA_ARGS__)
#endif

#ifdef __cplusplus
}
#endif

#endif /* C4SNET_H */
