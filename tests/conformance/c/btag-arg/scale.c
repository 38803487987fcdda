#include "C4SNet.h"
void *scale(void *hnd, c4snet_data_t *v, int k)
{
    int n = (int)C4SNetArraySize(v);
    int *src = C4SNetGetData(v);
    int *dst;
    c4snet_data_t *out = C4SNetAlloc(CTYPE_int, n, (void **)&dst);
    for (int i = 0; i < n; i++)
        dst[i] = src[i] * k;
    C4SNetFree(v);
    C4SNetOut(hnd, 1, out, k);
    return hnd;
}
