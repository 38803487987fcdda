/*
 * C4SNetOut, the one variadic function of the interface.
 *
 * Stable Rust cannot define a C variadic function, so this file does the
 * va_list part: it finds how many values variant `variant` of the calling
 * box takes and which are ints (tags, binding tags) and which are field
 * pointers (in the thread's `current` slot, which the Rust side fills around
 * every box call, when the handle is the running invocation's and the
 * variant is declared; otherwise it asks the Rust side, snet_c4snet_out_begin),
 * reads exactly those from the va_list, and hands the array back
 * (snet_c4snet_out_end, with the invocation found for the handle), which
 * builds the record.
 * Any error (stale handle, variant out of range) is recorded by the Rust side
 * and reported with the box's name; begin then returns a negative count.
 */
#include <stdarg.h>
#include "C4SNet.h"

/* Must match `SnetArg` in src/lib.rs. */
typedef union { c4snet_data_t *field; int tag; } snet_arg_t;

/* Must match `VariantKinds` and `Current` in src/invoke.rs. */
struct snet_c4snet_variant { const int *kinds; long n; };
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

/* Reads the values of a variant of more than ARGS_STACK labels. */
#define ARGS_STACK 16
static void out_many(void *inv, int variant, const int *kinds, int n, va_list *ap)
{
    snet_arg_t values[n];
    for (int i = 0; i < n; i++) {
        if (kinds[i])
            values[i].tag = va_arg(*ap, int);
        else
            values[i].field = va_arg(*ap, c4snet_data_t *);
    }
    snet_c4snet_out_end(inv, variant, values, n);
}

void C4SNetOut(void *hnd, int variant, ...)
{
    const int *kinds = 0;
    void *inv = 0;
    int n;
    const struct snet_c4snet_current *c = &current;
    /* The running invocation's own handle and a declared variant. A
     * handle is never 0: with no invocation on the thread, nvariants is 0
     * (between two calls of a run it is not, but no box code runs then). */
    if (__builtin_expect(hnd == c->hnd
                         && (unsigned long)(long)variant - 1 < (unsigned long)c->nvariants, 1)) {
        kinds = c->variants[variant - 1].kinds;
        n = (int)c->variants[variant - 1].n;
        inv = c->inv;
    } else {
        /* Anything else: the Rust side checks it again and reports it. */
        n = snet_c4snet_out_begin(hnd, variant, &kinds, &inv);
        if (n < 0)
            return;
    }
    va_list ap;
    va_start(ap, variant);
    if (__builtin_expect(n > ARGS_STACK, 0)) {
        out_many(inv, variant, kinds, n, &ap);
        va_end(ap);
        return;
    }
    snet_arg_t values[ARGS_STACK];
    for (int i = 0; i < n; i++) {
        if (kinds[i])
            values[i].tag = va_arg(ap, int);
        else
            values[i].field = va_arg(ap, c4snet_data_t *);
    }
    va_end(ap);
    snet_c4snet_out_end(inv, variant, values, n);
}
