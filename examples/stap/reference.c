/* The sequential reference: every CPI through the same kernels as the
 * network, in one process, one slice after another. Prints one line per
 * (CPI, slice), the format of `todets`:
 *
 *   cpi C part P ndet K hash H: g,d,a g,d,a ...
 *
 *   ./reference CPIS CHANNELS PULSES GATES BLOCK SLICES DBINS ABINS SEED
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stap.h"

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: %s CPIS CHANNELS PULSES GATES BLOCK SLICES DBINS ABINS SEED\n",
                argv[0]);
        return 2;
    }
    int v[9];
    for (int i = 0; i < 9; i++) {
        char *end;
        long x = strtol(argv[i + 1], &end, 10);
        if (*end || end == argv[i + 1] || x < -2147483647L || x > 2147483647L) {
            fprintf(stderr, "reference: not an integer: %s\n", argv[i + 1]);
            return 2;
        }
        v[i] = (int)x;
    }
    int p[P_COUNT];
    char err[256];
    if (!stap_params(p, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], err,
                     sizeof err)) {
        fprintf(stderr, "reference: %s\n", err);
        return 2;
    }
    const size_t per_gate = 2 * (size_t)stap_dof(p);
    double *cube = malloc(sizeof(double) * stap_cube_doubles(p));
    double *amf = malloc(sizeof(double) * (size_t)p[P_GATES] * (size_t)stap_bins(p));
    int *dets = malloc(sizeof(int) * 3 * (size_t)p[P_GATES] * (size_t)stap_bins(p));
    if (!cube || !amf || !dets) {
        fprintf(stderr, "reference: out of memory\n");
        return 1;
    }
    for (int cpi = 0; cpi < p[P_CPIS]; cpi++) {
        stap_generate(p, cpi, cube);
        for (int part = 0; part < p[P_SLICES]; part++) {
            int lo, s0, s1, hi;
            stap_slice_range(p, part, &lo, &s0, &s1, &hi);
            if (stap_process(p, cube + per_gate * (size_t)lo, lo, hi, s0, s1, amf) != 0) {
                fprintf(stderr, "reference: a covariance is not positive definite\n");
                return 1;
            }
            int n = stap_cfar(p, amf, s0, s1, dets);
            printf("cpi %d part %d ndet %d hash %d:", cpi, part, n,
                   stap_hash(amf, (size_t)(s1 - s0) * stap_bins(p)));
            for (int i = 0; i < n; i++)
                printf(" %d,%d,%d", dets[3 * i], dets[3 * i + 1], dets[3 * i + 2]);
            printf("\n");
        }
    }
    free(cube);
    free(amf);
    free(dets);
    return 0;
}
