#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 7);
    return hnd;
}
void *use(void *hnd, int seed, int x)
{
    C4SNetOut(hnd, 1, seed * 100 + x);
    return hnd;
}
