#include "C4SNet.h"
/* The arguments in signature order (c, a, b), not label order: a run
 * reads them at their planned positions; a mix-up emits variant 2,
 * which the box does not declare (an error of its own). */
void *chk(void *hnd, int c, int a, int b)
{
    C4SNetOut(hnd, (a == c + 1 && b == c + 2) ? 1 : 2, c);
    return hnd;
}
