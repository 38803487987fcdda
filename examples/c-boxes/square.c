#include "C4SNet.h"

/* {v} -> {v}: squares every element into a new field */
void *square(void *hnd, c4snet_data_t *v)
{
    size_t n = C4SNetArraySize(v);
    const int *in = C4SNetGetData(v);
    long *out;
    c4snet_data_t *w = C4SNetAlloc(CTYPE_long, n, (void **)&out);
    for (size_t i = 0; i < n; i++)
        out[i] = (long)in[i] * in[i];
    C4SNetFree(v);                 /* we own v: release it */
    C4SNetOut(hnd, 1, w);
    return hnd;
}
