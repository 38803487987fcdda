#include "C4SNet.h"
/* n records <i> = 0..n-1 */
void *gen(void *hnd, int n)
{
    for (int i = 0; i < n; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
void *sq(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x * x);
    return hnd;
}
/* s > 0: 3000 records {<s> - 1, <j>} (the filter after it keeps j = 1234 only);
   s = 0: 2000 records {<done>, <j>}, j counting down */
void *gs(void *hnd, int s)
{
    if (s > 0)
        for (int j = 0; j < 3000; j++)
            C4SNetOut(hnd, 1, s - 1, j);
    else
        for (int j = 1999; j >= 0; j--)
            C4SNetOut(hnd, 2, 1, j);
    return hnd;
}
