#include <string.h>
#include "C4SNet.h"
void *make(void *hnd, int n)
{
    unsigned char uc[2] = { 'A', 200 };
    char ch[2] = { 'x', '<' };
    unsigned short us[2] = { 7, 65535 };
    short sh[2] = { -7, 300 };
    unsigned int ui[2] = { 3000000000u, 1 };
    int in[2] = { -n, n };
    unsigned long ul[2] = { 18446744073709551615ul, 2 };
    long lo[2] = { -5000000000l, 5000000000l };
    float fl[2] = { 0.1f, 3.75f };
    double db[2] = { 0.1, -2.5e-10 };
    long double ld[2] = { 0.75L, -1024.5L };
    void *pt[1] = { 0 };
    C4SNetOut(hnd, 1,
        C4SNetCreate(CTYPE_uchar, 2, uc), C4SNetCreate(CTYPE_char, 2, ch),
        C4SNetCreate(CTYPE_ushort, 2, us), C4SNetCreate(CTYPE_short, 2, sh),
        C4SNetCreate(CTYPE_uint, 2, ui), C4SNetCreate(CTYPE_int, 2, in),
        C4SNetCreate(CTYPE_ulong, 2, ul), C4SNetCreate(CTYPE_long, 2, lo),
        C4SNetCreate(CTYPE_float, 2, fl), C4SNetCreate(CTYPE_double, 2, db),
        C4SNetCreate(CTYPE_ldouble, 2, ld), C4SNetCreate(CTYPE_pointer, 1, pt));
    return hnd;
}
