#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 0, 1);
    return hnd;
}
