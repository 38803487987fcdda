#include "C4SNet.h"
void *dec(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x - 1);
    return hnd;
}
void *inc(void *hnd, int y)
{
    C4SNetOut(hnd, 1, y + 1);
    return hnd;
}
