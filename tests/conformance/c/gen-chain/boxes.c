#include "C4SNet.h"
void *gen1(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
void *gen2(void *hnd, int i, int m)
{
    for (int j = 0; j < m; j++)
        C4SNetOut(hnd, 1, i, j);
    return hnd;
}
