/* A C box beside the C++ ones: both kinds link into one program. */
#include "C4SNet.h"

void *scale(void *hnd, c4snet_data_t *sorted, int sum)
{
    size_t n = C4SNetArraySize(sorted);
    double *out;
    c4snet_data_t *f = C4SNetAlloc(CTYPE_double, n, (void **)&out);
    const int *v = C4SNetGetData(sorted);
    for (size_t i = 0; i < n; i++)
        out[i] = sum == 0 ? 0.0 : (double)v[i] / sum;
    C4SNetFree(sorted);
    C4SNetOut(hnd, 1, f);
    return hnd;
}
