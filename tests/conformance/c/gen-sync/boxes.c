#include "C4SNet.h"
void *ga(void *hnd, int na)
{
    for (int k = 0; k < na; k++)
        C4SNetOut(hnd, 1, 3 * k, k);
    return hnd;
}
void *gb(void *hnd, int lo, int hi)
{
    for (int k = hi - 1; k >= lo; k--)
        C4SNetOut(hnd, 1, 7 * k, k);
    return hnd;
}
void *gc(void *hnd, int nc)
{
    for (int c = 0; c < nc; c++)
        C4SNetOut(hnd, 1, c);
    return hnd;
}
void *gd(void *hnd, int nd)
{
    for (int d = 0; d < nd; d++)
        C4SNetOut(hnd, 1, 5);
    return hnd;
}
