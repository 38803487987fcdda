#include "C4SNet.h"
void *classify(void *hnd, int x)
{
    if (x > 0) C4SNetOut(hnd, 1, x);
    else if (x < 0) C4SNetOut(hnd, 2, -x);
    else C4SNetOut(hnd, 3, 0);
    return hnd;
}
