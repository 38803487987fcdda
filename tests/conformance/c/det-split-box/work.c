#include "C4SNet.h"
void *work(void *hnd, int k, int i)
{
    C4SNetOut(hnd, 1, k, i, i * i);
    return hnd;
}
