#include "C4SNet.h"
void *halve(void *hnd, int n, int c)
{
    C4SNetOut(hnd, 1, n / 2, c + 1);
    return hnd;
}
