#include "C4SNet.h"

/* Box functions named like the identifiers snet build's generated code
 * used (hnd, a, e, snet_arg_t, snet_call_a, argc, ...) and like the
 * generated ones without their __snet_ prefix: none may collide. */

void *hnd(void *hnd, c4snet_data_t *f, int x)
{
    C4SNetOut(hnd, 1, f, x + 1);
    return hnd;
}

void *a(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *e(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *h(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *argc(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *argv(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *call(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *name(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *field(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *tag(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *cdata(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_arg_t(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_box_entry(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_call_a(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_boxes(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_program(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_program_name(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *arg_t(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *box_entry(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *call_a(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *boxes(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *program(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *program_name(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_h(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_a(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *snet_e(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}
