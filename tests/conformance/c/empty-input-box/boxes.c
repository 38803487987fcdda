#include "C4SNet.h"
void *t(void *hnd)
{
    C4SNetOut(hnd, 1, 42);
    return hnd;
}
void *w(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}
