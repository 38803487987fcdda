#include "C4SNet.h"
/* running sum: emit the new sum; pass the state on while values remain */
void *compute(void *hnd, int s, int n, int v)
{
    C4SNetOut(hnd, 1, s + v);
    if (n > 1)
        C4SNetOut(hnd, 2, s + v, n - 1);
    return hnd;
}
