/* Trivial box for cpipe.snet: {<X>} -> {<X=X+1>}. */
#include "C4SNet.h"

void *inc(void *hnd, int X)
{
    C4SNetOut(hnd, 1, X + 1);
    return hnd;
}
