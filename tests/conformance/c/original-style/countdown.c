#include <C4SNet.h>
#include <bool.h>
#include <dec.h>

/* The original <bool.h>: bool is int when <stdbool.h> is not included. */
typedef char bool_is_int[sizeof(bool) == sizeof(int) ? 1 : -1];

int dec_step(int n) { return n - DEC_STEP; }

void *countdown(void *hnd, int n)
{
    bool done = n <= 0 ? true : false;
    if (done == true)
        C4SNetOut(hnd, 2, DONE_MARK);
    else
        C4SNetOut(hnd, 1, dec_step(n));
    return hnd;
}
