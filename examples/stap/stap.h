/* MTI-STAP kernels: sample-matrix-inversion space-time adaptive
 * processing of simulated radar data cubes (see README.md).
 *
 * Shared by the boxes of the S-Net programs (boxes.c) and the sequential
 * reference (reference.c); built with -ffp-contract=off everywhere so that
 * every process computes the same bits. */
#ifndef STAP_H
#define STAP_H

#include <stddef.h>
#include <stdint.h>

/* The parameters of a run, one int each (an int array field `par` in the
 * network). The first nine come from the input record; the rest are
 * derived or fixed (stap_params). */
enum {
    P_CPIS,       /* coherent processing intervals in the stream */
    P_CHANNELS,   /* N: array channels (spatial degrees of freedom) */
    P_PULSES,     /* M: pulses per CPI (temporal degrees of freedom) */
    P_GATES,      /* L: range gates per CPI */
    P_BLOCK,      /* B: range gates sharing one covariance estimate */
    P_SLICES,     /* S: slices a CPI is cut into (a multiple of the nodes) */
    P_DBINS,      /* Doppler bins of the steering bank */
    P_ABINS,      /* angle bins of the steering bank */
    P_SEED,       /* seed of the generator */
    P_TRAIN,      /* training gates on each side of a block (= N*M) */
    P_GUARD,      /* guard gates between a block and its training gates */
    P_TARGETS,    /* moving targets injected per CPI */
    P_PATCHES,    /* clutter patches in azimuth */
    P_CNR_DB,     /* clutter-to-noise ratio per element, dB */
    P_SNR_DB,     /* target-to-noise ratio per element, dB */
    P_LOAD_X100,  /* diagonal loading, in hundredths of the noise power */
    P_CFAR_WIN,   /* CA-CFAR reference cells on each side */
    P_CFAR_GUARD, /* CA-CFAR guard cells on each side */
    P_CFAR_X10,   /* CA-CFAR threshold factor, in tenths */
    P_COUNT
};

/* Fills p[P_COUNT] from the input record's values and checks them. On
 * error returns 0 with a message in err. */
int stap_params(int *p, int cpis, int channels, int pulses, int gates, int block,
                int slices, int dbins, int abins, int seed, char *err, size_t errlen);

/* Degrees of freedom (N*M), steering bins (dbins*abins). */
int stap_dof(const int *p);
int stap_bins(const int *p);

/* Doubles in one cube: gates x pulses x channels complex samples, stored
 * gate-major ([gate][pulse][channel], re/im interleaved), so that one
 * gate's space-time snapshot is contiguous. */
size_t stap_cube_doubles(const int *p);

/* Writes CPI `cpi` of the run into cube (stap_cube_doubles(p) doubles):
 * clutter, white noise and p[P_TARGETS] moving targets, from p[P_SEED]. */
void stap_generate(const int *p, int cpi, double *cube);

/* Slice `part` of a CPI: it owns gates [*s0, *s1) (whole blocks) and
 * carries gates [*lo, *hi) so that every training gate of its blocks is in
 * it. */
void stap_slice_range(const int *p, int part, int *lo, int *s0, int *s1, int *hi);

/* Adaptive processing of one slice (gates [lo, hi) of the cube, from
 * `slice`): per block, covariance from the training gates, Cholesky
 * factor, weights for every steering bin, applied to every gate of the
 * block. Writes the adaptive matched filter statistic for each gate of
 * [s0, s1) and each bin: amf[(g - s0) * bins + bin]. Returns 0 on success,
 * -1 if a covariance is not positive definite (cannot happen with loading
 * > 0). */
int stap_process(const int *p, const double *slice, int lo, int hi, int s0, int s1,
                 double *amf);

/* Cell-averaging CFAR along range, per block and bin, on the statistic of
 * gates [s0, s1). Returns the number of detections; if dets is not NULL
 * writes them as (gate, Doppler bin, angle bin) triples, in gate order. */
int stap_cfar(const int *p, const double *amf, int s0, int s1, int *dets);

/* FNV-1a over the 64-bit patterns of n doubles, folded to 30 bits (a tag value):
 * equal hashes mean (all but certainly) bitwise equal statistics. */
int stap_hash(const double *x, size_t n);

#endif
