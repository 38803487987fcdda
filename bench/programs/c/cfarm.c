/* Box `work` for cfarm.snet and concurrent.snet.
 * Spends W iterations of integer mixing on record X (no memory traffic, no
 * shared state: safe to call concurrently) and emits <h>, a hash of the
 * result (so the loop cannot be optimised away), and <ok>=1. */
#include "C4SNet.h"

void *work(void *hnd, int X, int W)
{
    unsigned long long s = (unsigned long long)X * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = 0; i < W; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
    }
    C4SNetOut(hnd, 1, X, (int)(s & 0x7fffffff), 1);
    return hnd;
}
