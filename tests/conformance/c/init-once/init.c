#include "C4SNet.h"
static int calls;
void *init(void *hnd)
{
    calls++;
    C4SNetOut(hnd, 1, 1000 + calls, C4SNetCreate(CTYPE_char, 2, "hi"));
    return hnd;
}
