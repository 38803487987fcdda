#include "C4SNet.h"

/* `times` is missing: the runtime would pass it anyway. */
void *greet(void *hnd, c4snet_data_t *name)
{
    C4SNetOut(hnd, 1, name);
    return hnd;
}
