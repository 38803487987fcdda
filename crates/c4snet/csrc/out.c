/*
 * C4SNetOut, the one variadic function of the interface.
 *
 * Stable Rust cannot define a C variadic function, so this file does the
 * va_list part: it asks the Rust side (snet_c4snet_out_begin) how many values
 * variant `variant` of the calling box takes and which are ints (tags, binding
 * tags) and which are field pointers, reads exactly those from the va_list,
 * and hands the array back (snet_c4snet_out_end, with the invocation begin
 * found for the handle), which builds the record.
 * Any error (stale handle, variant out of range) is recorded by the Rust side
 * and reported with the box's name; begin then returns a negative count.
 */
#include <stdarg.h>
#include "C4SNet.h"

/* Must match `SnetArg` in src/lib.rs. */
typedef union { c4snet_data_t *field; int tag; } snet_arg_t;

int  snet_c4snet_out_begin(void *hnd, int variant, const int **kinds, void **inv);
void snet_c4snet_out_end(void *inv, int variant, const snet_arg_t *values, int n);

void C4SNetOut(void *hnd, int variant, ...)
{
    const int *kinds = 0;
    void *inv = 0;
    int n = snet_c4snet_out_begin(hnd, variant, &kinds, &inv);
    if (n < 0)
        return;
    snet_arg_t values[n > 0 ? n : 1];
    va_list ap;
    va_start(ap, variant);
    for (int i = 0; i < n; i++) {
        if (kinds[i])
            values[i].tag = va_arg(ap, int);
        else
            values[i].field = va_arg(ap, c4snet_data_t *);
    }
    va_end(ap);
    snet_c4snet_out_end(inv, variant, values, n);
}
