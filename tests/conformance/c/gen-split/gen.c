#include "C4SNet.h"
void *gen(void *hnd, int k, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, k, i);
    return hnd;
}
