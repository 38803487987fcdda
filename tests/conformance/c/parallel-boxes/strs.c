#include "C4SNet.h"
void *strs(void *hnd, c4snet_data_t *s)
{
    long n = (long)C4SNetArraySize(s);
    C4SNetFree(s);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_long, 1, &n));
    return hnd;
}
