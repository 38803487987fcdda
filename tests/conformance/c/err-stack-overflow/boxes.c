#include "C4SNet.h"
void *pass(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x);
    return hnd;
}
/* recursion gcc -O2 cannot turn into a loop: a volatile 1 KiB frame, and
   the result is used after the call */
static int down(int d)
{
    volatile char pad[1024];
    pad[0] = (char)d;
    pad[1023] = (char)(d >> 8);
    if (d == -7)
        return 0;
    return down(d + 1) + pad[0] + pad[1023];
}
void *deep(void *hnd, int x)
{
    C4SNetOut(hnd, 1, down(x));
    return hnd;
}
