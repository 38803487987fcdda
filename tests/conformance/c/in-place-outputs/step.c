#include "C4SNet.h"
/* <x> mod 4 picks what the call emits. Two outputs of one call each
 * start from the input, which the first must leave as it was. */
void *step(void *hnd, int x, int k)
{
    switch (x % 4) {
    case 0:
        C4SNetOut(hnd, 1, k + 1, x + 1);
        break;
    case 1:
        C4SNetOut(hnd, 1, k, x * 10);
        C4SNetOut(hnd, 1, -k, x);
        break;
    case 2:
        C4SNetOut(hnd, 2, x + 2);
        C4SNetOut(hnd, 1, k, x);
        break;
    default:
        C4SNetOut(hnd, 3, x, k, x + k);
        break;
    }
    return hnd;
}
