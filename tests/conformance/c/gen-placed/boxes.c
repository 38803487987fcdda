#include "C4SNet.h"
void *gen(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
void *cons(void *hnd, int i)
{
    if (i % 1000 == 999)
        C4SNetOut(hnd, 1, i, (i % 4099) * (i % 4099));
    return hnd;
}
void *gen2(void *hnd, int m)
{
    for (int j = 0; j < m; j++)
        C4SNetOut(hnd, 1, j);
    return hnd;
}
void *cons2(void *hnd, int j)
{
    if (j % 1000 == 0)
        C4SNetOut(hnd, 1, j);
    return hnd;
}
