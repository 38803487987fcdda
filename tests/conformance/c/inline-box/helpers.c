#include "C4SNet.h"

int clamp(int x) { return x > 1000 ? 1000 : x; }

void *twice(void *hnd, c4snet_data_t *v)
{
    int x = *(int *)C4SNetGetData(v) * 2;
    C4SNetFree(v);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return hnd;
}
