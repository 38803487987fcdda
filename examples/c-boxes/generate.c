#include "C4SNet.h"

/* {<n>} -> {v}: the int vector 1, 2, ..., n */
void *generate(void *hnd, int n)
{
    int *data;
    c4snet_data_t *v = C4SNetAlloc(CTYPE_int, n > 0 ? n : 0, (void **)&data);
    for (int i = 0; i < n; i++)
        data[i] = i + 1;
    C4SNetOut(hnd, 1, v);          /* ownership of v passes to the runtime */
    return hnd;
}
