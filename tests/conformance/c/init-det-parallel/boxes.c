#include <time.h>
#include "C4SNet.h"
void *init(void *hnd)
{
    /* slow, so that input records would overtake it without the ordering rule */
    struct timespec t = { 0, 10 * 1000000L };
    nanosleep(&t, 0);
    for (int s = 1; s <= 3; s++)
        C4SNetOut(hnd, 1, s);
    return hnd;
}
void *twice(void *hnd, int x)
{
    C4SNetOut(hnd, 1, 2 * x);
    return hnd;
}
