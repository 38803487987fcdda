#include "C4SNet.h"
void *inc(void *hnd, c4snet_data_t *a)
{
    int v = *(int *)C4SNetGetData(a) + 1;
    C4SNetFree(a);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &v));
    return hnd;
}
void *twice(void *hnd, c4snet_data_t *b)
{
    int v = *(int *)C4SNetGetData(b) * 2;
    C4SNetFree(b);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &v));
    return hnd;
}
