#include "C4SNet.h"
void *acc(void *hnd, int k, int v)
{
    C4SNetOut(hnd, 1, k, v * 10 + k);
    return hnd;
}
