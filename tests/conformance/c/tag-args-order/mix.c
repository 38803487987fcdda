#include "C4SNet.h"
/* arguments in signature order: <b>, a, <c>, d */
void *mix(void *hnd, int b, c4snet_data_t *a, int c, c4snet_data_t *d)
{
    int r = b * 100 + c * 10 + *(int *)C4SNetGetData(a) - *(int *)C4SNetGetData(d);
    C4SNetFree(a);
    C4SNetOut(hnd, 1, r, d);   /* pass d on unchanged */
    return hnd;
}
