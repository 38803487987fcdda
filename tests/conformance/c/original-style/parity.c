#include <stdbool.h>
#include <bool.h>      /* after <stdbool.h>: keeps its bool */
#include <C4SNet.h>
#include <dec.h>

void *parity(void *hnd, int k)
{
    bool even = k % 2 == 0;
    if (even)
        C4SNetOut(hnd, 1, k);
    else
        C4SNetOut(hnd, 2, k);
    return hnd;
}
