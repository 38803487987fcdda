#include "C4SNet.h"
void *ints(void *hnd, c4snet_data_t *a)
{
    int n = (int)C4SNetArraySize(a), sum = 0;
    for (int i = 0; i < n; i++) sum += ((int *)C4SNetGetData(a))[i];
    C4SNetFree(a);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &sum));
    return hnd;
}
