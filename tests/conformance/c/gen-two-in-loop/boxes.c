#include "C4SNet.h"
/* 2500 leaves; while a > 0, children for gb (2p after leaf 4, 2p+1 after leaf 1299) */
void *ga(void *hnd, int a, int p)
{
    for (int w = 0; w < 2500; w++) {
        C4SNetOut(hnd, 2, p, w, 1);
        if (a > 0 && w == 4)
            C4SNetOut(hnd, 1, a - 1, 2 * p);
        if (a > 0 && w == 1299)
            C4SNetOut(hnd, 1, a - 1, 2 * p + 1);
    }
    return hnd;
}
/* the same, feeding ga */
void *gb(void *hnd, int b, int p)
{
    for (int w = 0; w < 2500; w++) {
        C4SNetOut(hnd, 2, p, w, 2);
        if (b > 0 && w == 4)
            C4SNetOut(hnd, 1, b - 1, 2 * p);
        if (b > 0 && w == 1299)
            C4SNetOut(hnd, 1, b - 1, 2 * p + 1);
    }
    return hnd;
}
