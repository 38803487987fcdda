#include <stdio.h>
#include "C4SNet.h"

/* Written for the original toolchain: `step`, `tag` and `ratio` are not in
 * the signature; snet build warns and passes 0, NULL and 0.0. */
void *count(void *hnd, int n, int step, char *tag, double ratio)
{
    C4SNetOut(hnd, 1, n + step + (tag == NULL ? 100 : 0) + (ratio == 0.0 ? 1000 : 0));
    return hnd;
}
