#include "C4SNet.h"

/* Passes the field on. */
void *s(void *hnd, c4snet_data_t *x)
{
    C4SNetOut(hnd, 1, x);
    return hnd;
}

/* go == 0: the record leaves as {output}; otherwise it would go round
   again as {collect}. */
void *m(void *hnd, c4snet_data_t *x, int go)
{
    if (go == 0)
        C4SNetOut(hnd, 1, x);
    else
        C4SNetOut(hnd, 2, x);
    return hnd;
}
