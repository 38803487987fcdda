#include "C4SNet.h"

/* One parameter too many: it would hold garbage. */
void *count(void *hnd, int n, int step)
{
    C4SNetOut(hnd, 1, n + step);
    return hnd;
}
