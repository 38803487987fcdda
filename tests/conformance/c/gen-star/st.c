#include "C4SNet.h"
void *st(void *hnd, int s, int p)
{
    if (s == 0) {
        C4SNetOut(hnd, 2, 1, p, -1);
        return hnd;
    }
    for (int w = 0; w < 2000; w++) {
        if (w == 500)
            C4SNetOut(hnd, 1, s - 1, 2 * p);
        else if (w == 1500)
            C4SNetOut(hnd, 1, s - 1, 2 * p + 1);
        else
            C4SNetOut(hnd, 2, 1, p, w);
    }
    return hnd;
}
