#include "C4SNet.h"
void *dup(void *hnd, c4snet_data_t *a)
{
    /* the same field twice: one extra reference, both passed on */
    C4SNetOut(hnd, 1, a, C4SNetShallowCopy(a));
    return hnd;
}
