#include "C4SNet.h"
/* Collatz: iterate until n == 1 */
void *step(void *hnd, int n, int steps)
{
    if (n == 1)
        C4SNetOut(hnd, 2, 1, steps);
    else
        C4SNetOut(hnd, 1, n % 2 ? 3 * n + 1 : n / 2, steps + 1);
    return hnd;
}
