#include <string.h>
#include "C4SNet.h"
/* 16 MiB on the stack: every byte written (memset, then one byte per page
   set to the page number), then summed */
void *big(void *hnd, int seed)
{
    unsigned char buf[16 << 20];
    unsigned char *volatile vp = buf; /* keeps the compiler from folding it away */
    unsigned char *q = vp;
    unsigned long sum = 0;
    memset(q, seed & 0xff, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i += 4096)
        q[i] = (unsigned char)(i >> 12);
    for (size_t i = 0; i < sizeof buf; i++)
        sum += q[i];
    C4SNetOut(hnd, 1, seed, (int)(sum % 1000003));
    return hnd;
}
