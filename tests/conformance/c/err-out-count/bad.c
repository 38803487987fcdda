#include "C4SNet.h"
void *bad(void *hnd, int x)
{
    C4SNetOut(hnd, 2, x, x + 1);
    C4SNetOut(hnd, 1, x, x + 1);
    return hnd;
}
