#include <limits.h>
#include "C4SNet.h"
/* <x> picks the variant (0: every variant in turn, in one call); <y> is
 * a value to pass on. */
static void one(void *hnd, int k, int y)
{
    switch (k) {
    case 1: C4SNetOut(hnd, 1, y); break;
    case 2: C4SNetOut(hnd, 2, y, -y); break;
    case 3: C4SNetOut(hnd, 3, y, INT_MIN, INT_MAX); break;
    case 4: C4SNetOut(hnd, 4, 4, 3, 2, 1 + y); break;
    case 5: C4SNetOut(hnd, 5, 5, 4, 3, 2, 1 + y); break;
    case 6: C4SNetOut(hnd, 6, C4SNetCreate(CTYPE_int, 1, &y), y); break;
    default: C4SNetOut(hnd, 7); break;
    }
}

void *fan(void *hnd, int x, int y)
{
    if (x == 0)
        for (int k = 1; k <= 7; k++)
            one(hnd, k, y + k);
    else
        one(hnd, x, y);
    return hnd;
}
