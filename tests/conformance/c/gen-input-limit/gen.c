#include "C4SNet.h"
void *gen(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
