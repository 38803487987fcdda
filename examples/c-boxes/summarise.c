#include "C4SNet.h"

/* {v} -> {<total>, <count>} or {<empty>} (variant 2) */
void *summarise(void *hnd, c4snet_data_t *v)
{
    size_t n = C4SNetArraySize(v);
    const long *x = C4SNetGetData(v);
    long total = 0;
    for (size_t i = 0; i < n; i++)
        total += x[i];
    C4SNetFree(v);
    if (n == 0)
        C4SNetOut(hnd, 2, 1);
    else
        C4SNetOut(hnd, 1, (int)total, (int)n);   /* tags are ints */
    return hnd;
}
