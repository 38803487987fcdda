#include "C4SNet.h"

/* One extra parameter after a field and a tag. */
void *scale(void *hnd, c4snet_data_t *v, int k,
            c4snet_data_t *unused)
{
    int x = *(int *)C4SNetGetData(v) * k + (unused == NULL ? 1 : 0);
    C4SNetFree(v);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x), k);
    return hnd;
}
