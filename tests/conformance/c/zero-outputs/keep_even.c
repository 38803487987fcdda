#include "C4SNet.h"
void *keep_even(void *hnd, int x)
{
    if (x % 2 == 0)
        C4SNetOut(hnd, 1, x);
    return hnd;   /* odd: no output record at all */
}
