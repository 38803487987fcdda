#include "C4SNet.h"

/* A box function returns void *. */
void done(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x);
}
