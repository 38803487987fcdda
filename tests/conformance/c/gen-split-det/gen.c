#include "C4SNet.h"
/* n records, <i> counting down from n-1 to 0 */
void *gen(void *hnd, int k, int n)
{
    for (int i = n - 1; i >= 0; i--)
        C4SNetOut(hnd, 1, k, i);
    return hnd;
}
