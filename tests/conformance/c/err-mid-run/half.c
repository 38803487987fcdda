#include "C4SNet.h"
void *half(void *hnd, int x)
{
    C4SNetOut(hnd, x == 2 ? 3 : 1, x);   /* variant 3: not declared */
    return hnd;
}
