/* The boxes of balance.snet (thesis Fig. 7.5). */
#include <unistd.h>
#include "C4SNet.h"

/* `size` bytes of a pattern of `seed` (a linear congruential generator). */
static c4snet_data_t *make_data(int size, int seed)
{
    unsigned char *d;
    c4snet_data_t *f = C4SNetAlloc(CTYPE_uchar, (size_t)size, (void **)&d);
    unsigned x = (unsigned)seed;
    for (int i = 0; i < size; i++) {
        x = x * 1103515245u + 12345u;
        d[i] = (unsigned char)(x >> 16);
    }
    return f;
}

/* One task record for each task (task t: data of seed t + 1), one node
 * assignment for each slot (`per_node` slots on each of the `nodes` nodes:
 * that many tasks run on a node at once), and first the empty accumulator
 * of the merge. */
void *split(void *hnd, int nodes, int tasks, int size, int sleep, int per_node)
{
    C4SNetOut(hnd, 3, 0, 0, tasks);
    for (int t = 0; t < tasks; t++)
        C4SNetOut(hnd, 1, tasks, t, sleep, make_data(size, t + 1));
    for (int s = 0; s < per_node; s++)
        for (int k = 0; k < nodes; k++)
            C4SNetOut(hnd, 2, k);
    return hnd;
}

/* Waits `sleep` microseconds, then makes new data of the same size from
 * its input: out[i] = 3 * in[i] + 1. */
void *work(void *hnd, int sleep, c4snet_data_t *data)
{
    if (sleep > 0) usleep((useconds_t)sleep);
    size_t n = C4SNetArraySize(data);
    const unsigned char *in = C4SNetGetData(data);
    unsigned char *out;
    c4snet_data_t *res = C4SNetAlloc(CTYPE_uchar, n, (void **)&out);
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(3 * in[i] + 1);
    C4SNetFree(data);
    C4SNetOut(hnd, 1, res);
    return hnd;
}

/* Adds a piece of data to the checksum: (sum + FNV-1a(data)) mod 2^30,
 * which every byte of it reaches (so all data comes back to this node). */
void *add(void *hnd, c4snet_data_t *data, int sum, int done)
{
    const unsigned char *d = C4SNetGetData(data);
    size_t n = C4SNetArraySize(data);
    unsigned long h = 1469598103934665603ul;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 1099511628211ul;
    C4SNetFree(data);
    C4SNetOut(hnd, 1, (int)(((unsigned long)sum + (h & 0x3fffffff)) & 0x3fffffff), done + 1);
    return hnd;
}
