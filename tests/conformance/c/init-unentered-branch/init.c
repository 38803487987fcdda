#include "C4SNet.h"
void *init(void *hnd)
{
    for (int i = 0; i < 5; i++)
        C4SNetOut(hnd, 1, i);
    return hnd;
}
