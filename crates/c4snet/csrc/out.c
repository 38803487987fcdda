/*
 * C4SNetOut, the one variadic function of the interface, and
 * C4SNetOutValues, the same with its values in an array (what C4SNet.h's
 * macro C4SNetOut calls in C99 and later).
 *
 * Stable Rust cannot define a C variadic function, so this file does the
 * va_list part: it finds how many values variant `variant` of the calling
 * box takes and which are ints (tags, binding tags) and which are field
 * pointers (in the thread's `current` slot, which the Rust side fills around
 * every box call, when the handle is the running invocation's and the
 * variant is declared; otherwise it asks the Rust side, snet_c4snet_out_begin),
 * reads exactly those from the va_list, and hands the array back
 * (snet_c4snet_out_end, with the invocation found for the handle), which
 * builds the record. A variant of at most TAGS_FAST ints (its table says
 * so) is read without a look at the kinds and handed to
 * snet_c4snet_out_tags, which does not look at them either.
 * Any error (stale handle, variant out of range) is recorded by the Rust side
 * and reported with the box's name; begin then returns a negative count.
 *
 * C4SNetOutValues checks the handle, the variant and its count of values
 * against the same slot and hands the array on as it is (a 64-bit word
 * holding an int tag by its value or a field pointer has, on a
 * little-endian machine of 64-bit pointers, the layout of the snet_arg_t
 * holding it); anything else goes to snet_c4snet_out_values, which checks
 * everything again, converts the words and reports what is wrong.
 */
#include <limits.h>
#include <stdarg.h>
#include "C4SNet.h"

/* Must match `SnetArg` in src/lib.rs. */
typedef union { c4snet_data_t *field; int tag; } snet_arg_t;

/* Must match `VariantKinds` and `Current` in src/invoke.rs. `tags`: the
 * variant's count of values when every one is an int and there are at
 * most TAGS_FAST of them (read without a look at their kinds), else -1;
 * `ints`: the count of values when every one is an int (any count), else
 * INTS_NONE, which no int count equals where C4SNetOutValues reads it
 * (64-bit long). */
struct snet_c4snet_variant { const int *kinds; long n; long tags; long ints; };
struct snet_c4snet_current {
    void *hnd;    /* the handle of the invocation running on this thread (0: none) */
    void *inv;    /* its state */
    const struct snet_c4snet_variant *variants;  /* its box's output variants */
    long nvariants;
    const char *name;   /* its box's name, for the crash handler (not NUL-terminated) */
    unsigned long name_len;
    const char *loc;    /* where the box is declared (FILE:LINE:COL; null: unknown) */
    unsigned long loc_len;
    unsigned long long origin;  /* the input record behind the call (the engine's Origin bits) */
    const unsigned long long *origin_at;  /* where it is instead, when not null (a run's) */
};

/* The invocation running on this thread: the Rust side sets it around
 * every box call (and clears it while a call is suspended). */
static __thread struct snet_c4snet_current current;

struct snet_c4snet_current *snet_c4snet_current(void)
{
    return &current;
}

int  snet_c4snet_out_begin(void *hnd, int variant, const int **kinds, void **inv);
void snet_c4snet_out_end(void *inv, int variant, const snet_arg_t *values, int n);
void snet_c4snet_out_tags(void *inv, int variant, const snet_arg_t *values, int n);
void snet_c4snet_out_values(void *hnd, int variant, const unsigned long long *values, int n);

#define ARGS_STACK 16
#define TAGS_FAST 4
#define INTS_NONE LONG_MIN

/* Reads `n` values by their kinds (1: an int, 0: a field pointer). */
#define READ_VALUES(values, kinds, n, ap) \
    for (int i_ = 0; i_ < (n); i_++) { \
        if ((kinds)[i_]) \
            (values)[i_].tag = va_arg(ap, int); \
        else \
            (values)[i_].field = va_arg(ap, c4snet_data_t *); \
    }

/* Everything but the common case of C4SNetOut (a handle that is not the
 * running invocation's, a variant out of range, more than ARGS_STACK
 * values): the Rust side checks the handle and variant again and reports
 * what is wrong; the values are read from `ap`, which the caller ends. */
static __attribute__((noinline)) void out_checked(void *hnd, int variant, va_list *ap)
{
    const int *kinds = 0;
    void *inv = 0;
    int n = snet_c4snet_out_begin(hnd, variant, &kinds, &inv);
    if (n < 0)
        return;
    if (n <= ARGS_STACK) {
        snet_arg_t values[ARGS_STACK];
        READ_VALUES(values, kinds, n, *ap);
        snet_c4snet_out_end(inv, variant, values, n);
        return;
    }
    snet_arg_t values[n];
    READ_VALUES(values, kinds, n, *ap);
    snet_c4snet_out_end(inv, variant, values, n);
}

/* In parentheses: C4SNet.h's macro of the same name is not expanded. */
void (C4SNetOut)(void *hnd, int variant, ...)
{
    const struct snet_c4snet_current *c = &current;
    va_list ap;
    va_start(ap, variant);
    /* The running invocation's own handle and a declared variant. A
     * handle is never 0: with no invocation on the thread, nvariants is 0
     * (between two calls of a run it is not, but no box code runs then).
     * Nothing here has its address taken, so that the common case keeps
     * it all in registers. */
    if (__builtin_expect(hnd == c->hnd
                         && (unsigned long)(long)variant - 1 < (unsigned long)c->nvariants, 1)) {
        const struct snet_c4snet_variant *v = &c->variants[variant - 1];
        long t = v->tags;
        if (__builtin_expect(t >= 0, 1)) {
            /* Ints alone, at most TAGS_FAST: read in order, each where
             * the first va_arg of its position finds it (the compiler
             * knows the offsets from va_start: no loop, no test). */
            void *inv = c->inv;
            snet_arg_t values[TAGS_FAST];
            if (t > 0)
                values[0].tag = va_arg(ap, int);
            if (t > 1)
                values[1].tag = va_arg(ap, int);
            if (t > 2)
                values[2].tag = va_arg(ap, int);
            if (t > 3)
                values[3].tag = va_arg(ap, int);
            va_end(ap);
            snet_c4snet_out_tags(inv, variant, values, (int)t);
            return;
        }
        int n = (int)v->n;
        if (__builtin_expect(n <= ARGS_STACK, 1)) {
            const int *kinds = v->kinds;
            void *inv = c->inv;
            snet_arg_t values[ARGS_STACK];
            READ_VALUES(values, kinds, n, ap);
            va_end(ap);
            snet_c4snet_out_end(inv, variant, values, n);
            return;
        }
    }
    out_checked(hnd, variant, &ap);
    va_end(ap);
}

void C4SNetOutValues(void *hnd, int variant, const unsigned long long *values, int count)
{
#if defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 8 \
    && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const struct snet_c4snet_current *c = &current;
    /* As in C4SNetOut (the variant's place from 32-bit arithmetic: a
     * variant of 0 or less is beyond any count of variants); and the
     * count the box gave is the variant's. */
    unsigned long i = (unsigned)variant - 1u;
    if (__builtin_expect(hnd == c->hnd && i < (unsigned long)c->nvariants, 1)) {
        const struct snet_c4snet_variant *v = &c->variants[i];
        const snet_arg_t *args = (const snet_arg_t *)(const void *)values;
        /* Ints alone, as many as the box gave (one test for both). */
        if (__builtin_expect(count == v->ints, 1)) {
            snet_c4snet_out_tags(c->inv, variant, args, count);
            return;
        }
        if (count == v->n) {
            snet_c4snet_out_end(c->inv, variant, args, count);
            return;
        }
    }
#endif
    snet_c4snet_out_values(hnd, variant, values, count);
}
