#include "C4SNet.h"
static int calls;
void *init(void *hnd)
{
    C4SNetOut(hnd, 1, __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST));
    return hnd;
}
