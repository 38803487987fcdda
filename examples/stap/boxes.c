/* The boxes of the MTI-STAP programs (stap1.snet, stap2.snet,
 * stap4.snet); the kernels are in kernels.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "C4SNet.h"
#include "stap.h"

/* A box that cannot go on says why on standard error and aborts: the
 * runtime then ends the run naming the box (exit status 1). */
static void fail(const char *box, const char *msg)
{
    fprintf(stderr, "stap: %s: %s\n", box, msg);
    fflush(stderr);
    abort();
}

static const int *params(c4snet_data_t *par, const char *box)
{
    if (C4SNetGetType(par) != CTYPE_int || C4SNetArraySize(par) != P_COUNT)
        fail(box, "the field `par` is not the parameter array of this program");
    return C4SNetGetData(par);
}

/* The radar front end: one record per CPI, {cube, par, <cpi>}. */
void *gen(void *hnd, int cpis, int channels, int pulses, int gates, int block, int slices,
          int dbins, int abins, int seed)
{
    int p[P_COUNT];
    char err[256];
    if (!stap_params(p, cpis, channels, pulses, gates, block, slices, dbins, abins, seed,
                     err, sizeof err))
        fail("gen", err);
    for (int cpi = 0; cpi < cpis; cpi++) {
        double *cube;
        c4snet_data_t *c = C4SNetAlloc(CTYPE_double, stap_cube_doubles(p), (void **)&cube);
        stap_generate(p, cpi, cube);
        C4SNetOut(hnd, 1, c, C4SNetCreate(CTYPE_int, P_COUNT, p), cpi);
    }
    return hnd;
}

/* The corner turn: a CPI cut into <slices> slices of whole blocks, each
 * with the training gates around it, {slice, par, <part>, <lo>, <s0>,
 * <s1>}. */
void *split(void *hnd, c4snet_data_t *cube, c4snet_data_t *par)
{
    const int *p = params(par, "split");
    if (C4SNetArraySize(cube) != stap_cube_doubles(p))
        fail("split", "the cube has the wrong size");
    const double *x = C4SNetGetData(cube);
    const size_t per_gate = 2 * (size_t)stap_dof(p);
    for (int part = 0; part < p[P_SLICES]; part++) {
        int lo, s0, s1, hi;
        stap_slice_range(p, part, &lo, &s0, &s1, &hi);
        c4snet_data_t *s = C4SNetCreate(CTYPE_double, per_gate * (size_t)(hi - lo),
                                        x + per_gate * (size_t)lo);
        C4SNetOut(hnd, 1, s, C4SNetShallowCopy(par), part, lo, s0, s1);
    }
    C4SNetFree(cube);
    C4SNetFree(par);
    return hnd;
}

/* Adaptive processing of one slice: the AMF statistic of every gate it
 * owns and every steering bin, {amf, par, <s0>, <s1>}. */
void *stap(void *hnd, c4snet_data_t *slice, c4snet_data_t *par, int lo, int s0, int s1)
{
    const int *p = params(par, "stap");
    const int hi = lo + (int)(C4SNetArraySize(slice) / (2 * (size_t)stap_dof(p)));
    if (lo < 0 || s0 < lo || s1 <= s0 || s1 > hi || hi > p[P_GATES]
        || (s1 - s0) % p[P_BLOCK] != 0)
        fail("stap", "the slice does not match its range tags");
    double *amf;
    c4snet_data_t *a = C4SNetAlloc(CTYPE_double, (size_t)(s1 - s0) * stap_bins(p),
                                   (void **)&amf);
    if (stap_process(p, C4SNetGetData(slice), lo, hi, s0, s1, amf) != 0)
        fail("stap", "a covariance estimate is not positive definite");
    C4SNetFree(slice);
    C4SNetOut(hnd, 1, a, par, s0, s1);
    return hnd;
}

/* Detection: CA-CFAR on the statistic, {dets, <ndet>, <hash>}; dets holds
 * (gate, Doppler bin, angle bin) triples ((int[1])-1 when there are
 * none), hash the bits of the whole statistic. */
void *cfar(void *hnd, c4snet_data_t *amf, c4snet_data_t *par, int s0, int s1)
{
    const int *p = params(par, "cfar");
    const double *x = C4SNetGetData(amf);
    size_t cells = (size_t)(s1 - s0) * stap_bins(p);
    if (C4SNetArraySize(amf) != cells)
        fail("cfar", "the statistic has the wrong size");
    int n = stap_cfar(p, x, s0, s1, NULL);
    int *d;
    c4snet_data_t *dets = C4SNetAlloc(CTYPE_int, n > 0 ? 3 * (size_t)n : 1, (void **)&d);
    if (n > 0)
        stap_cfar(p, x, s0, s1, d);
    else
        d[0] = -1;
    int h = stap_hash(x, cells);
    C4SNetFree(amf);
    C4SNetFree(par);
    C4SNetOut(hnd, 1, dets, n, h);
    return hnd;
}
