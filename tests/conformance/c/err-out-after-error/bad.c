#include "C4SNet.h"
void *bad(void *hnd, int x)
{
    int i;
    C4SNetOut(hnd, 3, x);
    for (i = 0; i < 200; i++)
        C4SNetOut(hnd, 1, x + i);
    return hnd;
}
