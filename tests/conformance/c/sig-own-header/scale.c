#include "ops.h"

void *scale(void *h, c4snet_data_t *field, const int by)
{
    int x = *(int *)C4SNetGetData(field) * by;
    C4SNetFree(field);
    C4SNetOut(h, 1, C4SNetCreate(CTYPE_int, 1, &x));
    return h;
}
