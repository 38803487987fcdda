#include <time.h>
#include "C4SNet.h"
/* slow, and slower for some records: later records finish first */
void *slow(void *hnd, int i)
{
    struct timespec t = { 0, (i % 5 == 0 ? 20 : 1) * 1000000L };
    nanosleep(&t, 0);
    C4SNetOut(hnd, 1, i, 2 * i);
    if (i % 3 == 0)
        C4SNetOut(hnd, 1, i, -1);
    return hnd;
}
