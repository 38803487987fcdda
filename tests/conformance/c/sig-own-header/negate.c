#include <ops.h>

void *negate(void *hnd, struct cdata *v)
{
    int x = -*(int *)C4SNetGetData(v);
    C4SNetFree(v);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return hnd;
}
