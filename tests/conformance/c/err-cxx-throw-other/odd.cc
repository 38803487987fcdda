// An exception of a type that is not a std::exception (here an int)
// escapes a C++ box: the run ends with an error naming the box.
#include "C4SNet.h"

void *odd(void *hnd, int x)
{
    if (x == 2)
        throw x;
    C4SNetOut(hnd, 1, x);
    return hnd;
}
