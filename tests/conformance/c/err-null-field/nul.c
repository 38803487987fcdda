#include "C4SNet.h"
void *nul(void *hnd, int x)
{
    (void)x;
    C4SNetOut(hnd, 1, (c4snet_data_t *)0);
    return hnd;
}
