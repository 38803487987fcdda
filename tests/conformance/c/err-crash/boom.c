#include "C4SNet.h"
void *boom(void *hnd, int x)
{
    volatile int *p = 0;
    if (x == 3)
        *p = x;   /* SIGSEGV */
    C4SNetOut(hnd, 1, x);
    return hnd;
}
