#include "C4SNet.h"
/* n records: <i> = <x> = 0..n-1, <c> = 0 */
void *gen(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i, i, 0);
    return hnd;
}
void *halve(void *hnd, int x, int c)
{
    C4SNetOut(hnd, 1, x / 2, c + 1);
    return hnd;
}
/* 1500 leaves; children 2p (after leaf 399) and 2p+1 (after leaf 999) while m > 0 */
void *tree(void *hnd, int m, int p)
{
    for (int w = 0; w < 1500; w++) {
        C4SNetOut(hnd, 2, p, w);
        if (m > 0 && w == 399)
            C4SNetOut(hnd, 1, m - 1, 2 * p);
        if (m > 0 && w == 999)
            C4SNetOut(hnd, 1, m - 1, 2 * p + 1);
    }
    return hnd;
}
