#include "C4SNet.h"
/* 18 values through the function itself */
void *paren(void *hnd, c4snet_data_t *a, int x)
{
    (C4SNetOut)(hnd, 1, a, x, x * 1, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7, x * 8, x * 9, x * 10, x * 11, x * 12, x * 13, x * 14, x * 15, x * 16);
    return hnd;
}
