#include "C4SNet.h"

/* d passes D on; B or C flows around it (flow inheritance). */
void *d(void *hnd, c4snet_data_t *D)
{
    C4SNetOut(hnd, 1, D);
    return hnd;
}

static void *scale(void *hnd, c4snet_data_t *x, int k)
{
    int v = *(int *)C4SNetGetData(x) * k;
    C4SNetFree(x);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &v));
    return hnd;
}

void *l(void *hnd, c4snet_data_t *B) { return scale(hnd, B, 2); }
void *r(void *hnd, c4snet_data_t *C) { return scale(hnd, C, 3); }
