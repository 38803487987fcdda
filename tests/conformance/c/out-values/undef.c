#include "C4SNet.h"
#undef C4SNetOut
/* the function: a field and two tags */
void *undef(void *hnd, c4snet_data_t *a, int x)
{
    C4SNetOut(hnd, 1, a, x, -x);
    return hnd;
}
