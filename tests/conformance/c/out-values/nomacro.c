#define C4SNET_NO_OUT_MACRO
#include "C4SNet.h"
/* the function: one tag for an even x, no values for an odd one */
void *nomacro(void *hnd, int x)
{
    if (x % 2 == 0)
        C4SNetOut(hnd, 1, x + 1000);
    else
        C4SNetOut(hnd, 2);
    return hnd;
}
