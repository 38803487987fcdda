#include "C4SNet.h"
/* 32 values through the macro: a, a new field b, 29 tags, x */
void *many(void *hnd, c4snet_data_t *a, int x)
{
    int twice = 2 * x;
    C4SNetOut(hnd, 1, a, C4SNetCreate(CTYPE_int, 1, &twice),
              x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9, x + 10, x + 11, x + 12, x + 13, x + 14, x + 15, x + 16, x + 17, x + 18, x + 19, x + 20, x + 21, x + 22, x + 23, x + 24, x + 25, x + 26, x + 27, x + 28, x + 29,
              x);
    return hnd;
}
