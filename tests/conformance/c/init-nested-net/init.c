#include "C4SNet.h"
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, 4);
    return hnd;
}
