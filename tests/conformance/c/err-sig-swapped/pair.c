#include "C4SNet.h"

/* Field and tag swapped: the tag would be read from the field's pointer. */
void *pair(void *hnd, int k, c4snet_data_t *v)
{
    (void)k;
    C4SNetOut(hnd, 1, v);
    return hnd;
}

void *keep(void *hnd, c4snet_data_t *v)
{
    C4SNetOut(hnd, 1, v);
    return hnd;
}
