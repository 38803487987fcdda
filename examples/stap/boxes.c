/* The boxes of the MTI-STAP programs (stap1.snet, stap2.snet,
 * stap4.snet); the kernels are in kernels.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "C4SNet.h"
#include "stap.h"

/* ---------------------------------------------------------------- busy time
 *
 * With STAP_BUSY set in the environment, each process prints at exit the
 * CPU time its threads spent in each kernel (generating, slicing,
 * processing, detecting) and its node number, on standard error:
 *
 *   stap: busy node 1: gen 0.000 s (0), split 0.123 s (16), stap 1.234 s (32), cfar 0.000 s (0)
 *
 * (node: SNET_SHM_NODE of a shared-memory node process, OMPI_COMM_WORLD_RANK
 * of an MPI rank, else 0). Only the kernels are timed, never C4SNetOut, so
 * the numbers are the node's own work without waiting or transfers. */
enum { K_GEN, K_SPLIT, K_STAP, K_CFAR, K_COUNT };
static const char *const kernel_name[K_COUNT] = {"gen", "split", "stap", "cfar"};
static atomic_llong busy_ns[K_COUNT];
static atomic_int busy_calls[K_COUNT];
static atomic_int busy_registered;

static long long thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void busy_report(void)
{
    const char *node = getenv("SNET_SHM_NODE");
    if (!node) node = getenv("OMPI_COMM_WORLD_RANK");
    char line[512];
    int at = snprintf(line, sizeof line, "stap: busy node %s:", node ? node : "0");
    for (int k = 0; k < K_COUNT && at < (int)sizeof line; k++)
        at += snprintf(line + at, sizeof line - (size_t)at, "%s %s %.3f s (%d)",
                       k ? "," : "", kernel_name[k], (double)atomic_load(&busy_ns[k]) / 1e9,
                       atomic_load(&busy_calls[k]));
    fprintf(stderr, "%s\n", line);
}

/* Adds the time since `start` to kernel k. */
static void busy_add(int k, long long start)
{
    atomic_fetch_add(&busy_ns[k], thread_ns() - start);
    atomic_fetch_add(&busy_calls[k], 1);
    if (getenv("STAP_BUSY") && atomic_exchange(&busy_registered, 1) == 0)
        atexit(busy_report);
}

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
        long long t0 = thread_ns();
        c4snet_data_t *c = C4SNetAlloc(CTYPE_double, stap_cube_doubles(p), (void **)&cube);
        stap_generate(p, cpi, cube);
        busy_add(K_GEN, t0);
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
        long long t0 = thread_ns();
        stap_slice_range(p, part, &lo, &s0, &s1, &hi);
        c4snet_data_t *s = C4SNetCreate(CTYPE_double, per_gate * (size_t)(hi - lo),
                                        x + per_gate * (size_t)lo);
        busy_add(K_SPLIT, t0);
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
    long long t0 = thread_ns();
    c4snet_data_t *a = C4SNetAlloc(CTYPE_double, (size_t)(s1 - s0) * stap_bins(p),
                                   (void **)&amf);
    if (stap_process(p, C4SNetGetData(slice), lo, hi, s0, s1, amf) != 0)
        fail("stap", "a covariance estimate is not positive definite");
    busy_add(K_STAP, t0);
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
    long long t0 = thread_ns();
    int n = stap_cfar(p, x, s0, s1, NULL);
    int *d;
    c4snet_data_t *dets = C4SNetAlloc(CTYPE_int, n > 0 ? 3 * (size_t)n : 1, (void **)&d);
    if (n > 0)
        stap_cfar(p, x, s0, s1, d);
    else
        d[0] = -1;
    int h = stap_hash(x, cells);
    busy_add(K_CFAR, t0);
    C4SNetFree(amf);
    C4SNetFree(par);
    C4SNetOut(hnd, 1, dets, n, h);
    return hnd;
}
