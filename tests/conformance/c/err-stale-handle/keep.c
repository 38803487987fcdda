#include "C4SNet.h"
static void *saved;
void *keep(void *hnd, int x)
{
    if (saved)
        C4SNetOut(saved, 1, x);   /* the handle of an earlier call */
    else
        C4SNetOut(hnd, 1, x);
    saved = hnd;
    return hnd;
}
