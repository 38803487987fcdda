#include "C4SNet.h"
void *bad(void *hnd, int x)
{
    C4SNetOut(hnd, 3, x);
    return hnd;
}
