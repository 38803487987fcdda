/* MTI-STAP kernels (see stap.h and README.md). Plain C99, no libraries but
 * libm (sqrt, cos, sin); complex numbers are pairs of doubles (re, im). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stap.h"

#define TWO_PI 6.283185307179586476925286766559

/* ---------------------------------------------------------------- parameters */

int stap_params(int *p, int cpis, int channels, int pulses, int gates, int block,
                int slices, int dbins, int abins, int seed, char *err, size_t errlen)
{
    memset(p, 0, sizeof(int) * P_COUNT);
    p[P_CPIS] = cpis;
    p[P_CHANNELS] = channels;
    p[P_PULSES] = pulses;
    p[P_GATES] = gates;
    p[P_BLOCK] = block;
    p[P_SLICES] = slices;
    p[P_DBINS] = dbins;
    p[P_ABINS] = abins;
    p[P_SEED] = seed;
    if (cpis < 1 || channels < 1 || pulses < 1 || block < 1 || slices < 1 || dbins < 1
        || abins < 1 || channels > 64 || pulses > 256 || channels * pulses > 1024) {
        snprintf(err, errlen,
                 "bad parameters: need cpis, channels, pulses, block, slices, dbins, "
                 "abins >= 1, channels <= 64, pulses <= 256, channels * pulses <= 1024");
        return 0;
    }
    int n = channels * pulses;
    /* Reed, Mallett and Brennan: 2 N M training snapshots keep the SMI loss
     * near 3 dB; N M on each side of the block. */
    p[P_TRAIN] = n;
    p[P_GUARD] = 2;
    p[P_TARGETS] = 4;
    p[P_PATCHES] = channels + pulses; /* > the clutter rank N + M - 1 (Brennan) */
    p[P_CNR_DB] = 30;
    p[P_SNR_DB] = 3;
    p[P_LOAD_X100] = 100;
    p[P_CFAR_WIN] = block >= 32 ? 8 : (block - 1) / 4 > 0 ? (block - 1) / 4 : 1;
    p[P_CFAR_GUARD] = block >= 32 ? 2 : 1;
    p[P_CFAR_X10] = 150;
    long need = (long)block + 2L * p[P_GUARD] + 2L * p[P_TRAIN];
    if (gates % block != 0 || gates < need) {
        snprintf(err, errlen,
                 "bad parameters: gates (%d) must be a multiple of block (%d) and at "
                 "least %ld (a block with its guard and training gates on both sides)",
                 gates, block, need);
        return 0;
    }
    if (gates / block < slices) {
        snprintf(err, errlen, "bad parameters: %d slices but only %d blocks of %d gates",
                 slices, gates / block, block);
        return 0;
    }
    if ((double)gates * n * 16.0 > 2.0e9) {
        snprintf(err, errlen, "bad parameters: a cube of %d gates x %d would exceed 2 GB",
                 gates, n);
        return 0;
    }
    return 1;
}

int stap_dof(const int *p) { return p[P_CHANNELS] * p[P_PULSES]; }
int stap_bins(const int *p) { return p[P_DBINS] * p[P_ABINS]; }

size_t stap_cube_doubles(const int *p)
{
    return (size_t)p[P_GATES] * (size_t)stap_dof(p) * 2;
}

/* ---------------------------------------------------------------- generator */

/* splitmix64 (Steele, Lea, Flood 2014): a small, well-mixed generator. */
static uint64_t next64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static double uniform(uint64_t *s)
{
    return (double)(next64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Approximately standard normal, cheaply and exactly reproducible: the
 * sum of two uniforms (the two halves of one 64-bit draw), centred and
 * scaled to unit variance (a triangular distribution; only + and *). */
static double normal(uint64_t *s)
{
    uint64_t z = next64(s);
    double u = (double)(z >> 32) + (double)(z & 0xffffffffu);
    return (u * (1.0 / 4294967296.0) - 1.0) * 2.4494897427831780981972840747059;
}

/* Space-time steering vector for normalised Doppler fd and spatial
 * frequency th (cycles per pulse / per element spacing, in [-0.5, 0.5)):
 * v[m N + c] = exp(j 2 pi (m fd + c th)), the Kronecker product of the
 * temporal and spatial steering vectors (Ward 1994). */
static void steering(int channels, int pulses, double fd, double th, double *v)
{
    for (int m = 0; m < pulses; m++)
        for (int c = 0; c < channels; c++) {
            double ph = TWO_PI * ((double)m * fd + (double)c * th);
            v[2 * (m * channels + c)] = cos(ph);
            v[2 * (m * channels + c) + 1] = sin(ph);
        }
}

static double db_to_power(int db)
{
    /* 10^(db/10) by repeated multiplication: exact to reproduce. */
    double x = 1.0, f = db >= 0 ? 1.2589254117941673 : 1.0 / 1.2589254117941673;
    for (int i = 0; i < (db >= 0 ? db : -db); i++)
        x *= f;
    return x;
}

void stap_generate(const int *p, int cpi, double *cube)
{
    const int N = p[P_CHANNELS], M = p[P_PULSES], L = p[P_GATES], n = N * M;
    const int np = p[P_PATCHES], nt = p[P_TARGETS];
    uint64_t s = (uint64_t)(uint32_t)p[P_SEED] * 0x100000001b3ull + (uint64_t)cpi * 0x9e3779b9ull + 1;
    /* Clutter: np patches spread over azimuth; a patch at spatial
     * frequency th has Doppler beta * th (the clutter ridge, beta = 1:
     * platform moving half an element spacing per pulse). */
    double *pv = malloc(sizeof(double) * 2 * (size_t)n * (size_t)np);
    for (int i = 0; i < np; i++) {
        double th = -0.5 + ((double)i + 0.5) / (double)np;
        steering(N, M, th, th, pv + (size_t)2 * n * i);
    }
    double camp = sqrt(db_to_power(p[P_CNR_DB]) / (double)np) * 0.70710678118654752440;
    const double namp = 0.70710678118654752440; /* unit noise power per element */
    /* Targets: gate, spatial frequency, Doppler off the clutter ridge. */
    int tg[64];
    double *tv = malloc(sizeof(double) * 2 * (size_t)n * (size_t)(nt > 0 ? nt : 1));
    double tamp = sqrt(db_to_power(p[P_SNR_DB]));
    for (int t = 0; t < nt && t < 64; t++) {
        tg[t] = (int)(next64(&s) % (uint64_t)L);
        double th = uniform(&s) - 0.5;
        double fd = th + 0.2 + 0.6 * uniform(&s);
        if (fd >= 0.5) fd -= 1.0;
        steering(N, M, fd, th, tv + (size_t)2 * n * t);
    }
    for (int g = 0; g < L; g++) {
        double *x = cube + (size_t)2 * n * g;
        for (int k = 0; k < n; k++) {
            x[2 * k] = namp * normal(&s);
            x[2 * k + 1] = namp * normal(&s);
        }
        for (int i = 0; i < np; i++) {
            double ar = camp * normal(&s), ai = camp * normal(&s);
            const double *v = pv + (size_t)2 * n * i;
            for (int k = 0; k < n; k++) {
                x[2 * k] += ar * v[2 * k] - ai * v[2 * k + 1];
                x[2 * k + 1] += ar * v[2 * k + 1] + ai * v[2 * k];
            }
        }
        for (int t = 0; t < nt && t < 64; t++) {
            if (tg[t] != g) continue;
            const double *v = tv + (size_t)2 * n * t;
            for (int k = 0; k < n; k++) {
                x[2 * k] += tamp * v[2 * k];
                x[2 * k + 1] += tamp * v[2 * k + 1];
            }
        }
    }
    free(pv);
    free(tv);
}

/* ---------------------------------------------------------------- slices */

void stap_slice_range(const int *p, int part, int *lo, int *s0, int *s1, int *hi)
{
    const int L = p[P_GATES], B = p[P_BLOCK], S = p[P_SLICES];
    const int blocks = L / B;
    const int margin = 2 * p[P_GUARD] + 2 * p[P_TRAIN];
    *s0 = (int)((long)blocks * part / S) * B;
    *s1 = (int)((long)blocks * (part + 1) / S) * B;
    *lo = *s0 - margin < 0 ? 0 : *s0 - margin;
    *hi = *s1 + margin > L ? L : *s1 + margin;
}

/* Training gates of the block [b0, b1): T on each side beyond G guard
 * gates; at an end of the CPI the window shifts inwards so that the count
 * stays the same. Returns the two ranges [a0, a1) and [c0, c1). */
static void training(const int *p, int b0, int b1, int *a0, int *a1, int *c0, int *c1)
{
    const int L = p[P_GATES], T = p[P_TRAIN], G = p[P_GUARD];
    int start = b0 - G - T, end = b1 + G + T;
    if (start < 0) {
        end += -start;
        start = 0;
    }
    if (end > L) {
        start -= end - L;
        end = L;
    }
    if (start < 0) start = 0;
    *a0 = start;
    *a1 = b0 - G > start ? b0 - G : start;
    *c0 = b1 + G < end ? b1 + G : end;
    *c1 = end;
}

/* ---------------------------------------------------------------- processing */

/* R[i][j] += x_i conj(x_j) for j <= i (lower triangle, row-major n x n). */
static void accumulate(int n, const double *x, double *R)
{
    for (int i = 0; i < n; i++) {
        const double xr = x[2 * i], xi = x[2 * i + 1];
        double *r = R + (size_t)2 * n * i;
        for (int j = 0; j <= i; j++) {
            const double yr = x[2 * j], yi = x[2 * j + 1];
            r[2 * j] += xr * yr + xi * yi;
            r[2 * j + 1] += xi * yr - xr * yi;
        }
    }
}

/* In place: the lower triangle of R becomes L with R = L L^H (row-wise
 * Cholesky-Banachiewicz; both rows read contiguously). Returns -1 if R is
 * not positive definite. */
static int cholesky(int n, double *R)
{
    for (int i = 0; i < n; i++) {
        double *ri = R + (size_t)2 * n * i;
        for (int j = 0; j <= i; j++) {
            const double *rj = R + (size_t)2 * n * j;
            double sr = ri[2 * j], si = ri[2 * j + 1];
            for (int k = 0; k < j; k++) {
                /* s -= L[i][k] conj(L[j][k]) */
                sr -= ri[2 * k] * rj[2 * k] + ri[2 * k + 1] * rj[2 * k + 1];
                si -= ri[2 * k + 1] * rj[2 * k] - ri[2 * k] * rj[2 * k + 1];
            }
            if (i == j) {
                if (!(sr > 0.0)) return -1;
                ri[2 * i] = sqrt(sr);
                ri[2 * i + 1] = 0.0;
            } else {
                const double d = rj[2 * j];
                ri[2 * j] = sr / d;
                ri[2 * j + 1] = si / d;
            }
        }
    }
    return 0;
}

/* u = L^{-1} v (forward substitution). */
static void forward(int n, const double *Lm, const double *v, double *u)
{
    for (int i = 0; i < n; i++) {
        const double *li = Lm + (size_t)2 * n * i;
        double sr = v[2 * i], si = v[2 * i + 1];
        for (int k = 0; k < i; k++) {
            sr -= li[2 * k] * u[2 * k] - li[2 * k + 1] * u[2 * k + 1];
            si -= li[2 * k] * u[2 * k + 1] + li[2 * k + 1] * u[2 * k];
        }
        u[2 * i] = sr / li[2 * i];
        u[2 * i + 1] = si / li[2 * i];
    }
}

/* w = L^{-H} u (back substitution with the conjugate transpose). */
static void backward(int n, const double *Lm, const double *u, double *w)
{
    for (int i = n - 1; i >= 0; i--) {
        double sr = u[2 * i], si = u[2 * i + 1];
        for (int k = i + 1; k < n; k++) {
            const double *lk = Lm + (size_t)2 * n * k;
            /* s -= conj(L[k][i]) w_k */
            sr -= lk[2 * i] * w[2 * k] + lk[2 * i + 1] * w[2 * k + 1];
            si -= lk[2 * i] * w[2 * k + 1] - lk[2 * i + 1] * w[2 * k];
        }
        const double d = Lm[(size_t)2 * n * i + 2 * i];
        w[2 * i] = sr / d;
        w[2 * i + 1] = si / d;
    }
}

int stap_process(const int *p, const double *slice, int lo, int hi, int s0, int s1,
                 double *amf)
{
    const int N = p[P_CHANNELS], M = p[P_PULSES], n = N * M, B = p[P_BLOCK];
    const int D = p[P_DBINS], A = p[P_ABINS], bins = D * A;
    const double load = (double)p[P_LOAD_X100] / 100.0;
    (void)hi;
    double *R = malloc(sizeof(double) * 2 * (size_t)n * (size_t)n);
    double *sv = malloc(sizeof(double) * 2 * (size_t)n * (size_t)bins);
    double *W = malloc(sizeof(double) * 2 * (size_t)n * (size_t)bins);
    double *u = malloc(sizeof(double) * 2 * (size_t)n);
    double *norm = malloc(sizeof(double) * (size_t)bins);
    int rc = 0;
    /* The steering bank: Doppler bin d, angle bin a. */
    for (int d = 0; d < D; d++)
        for (int a = 0; a < A; a++)
            steering(N, M, -0.5 + ((double)d + 0.5) / (double)D,
                     -0.5 + ((double)a + 0.5) / (double)A, sv + (size_t)2 * n * (d * A + a));
    for (int b0 = s0; b0 < s1; b0 += B) {
        const int b1 = b0 + B;
        int a0, a1, c0, c1;
        training(p, b0, b1, &a0, &a1, &c0, &c1);
        /* Sample covariance of the training snapshots, loaded. */
        memset(R, 0, sizeof(double) * 2 * (size_t)n * (size_t)n);
        for (int g = a0; g < a1; g++)
            accumulate(n, slice + (size_t)2 * n * (g - lo), R);
        for (int g = c0; g < c1; g++)
            accumulate(n, slice + (size_t)2 * n * (g - lo), R);
        const double k = (double)((a1 - a0) + (c1 - c0));
        for (int i = 0; i < n; i++) {
            double *r = R + (size_t)2 * n * i;
            for (int j = 0; j <= i; j++) {
                r[2 * j] /= k;
                r[2 * j + 1] /= k;
            }
            r[2 * i] += load;
        }
        if (cholesky(n, R) != 0) {
            rc = -1;
            break;
        }
        /* Weights w = R^{-1} v for every bin, and v^H R^{-1} v = |L^{-1} v|^2. */
        for (int s = 0; s < bins; s++) {
            forward(n, R, sv + (size_t)2 * n * s, u);
            double e = 0.0;
            for (int i = 0; i < n; i++)
                e += u[2 * i] * u[2 * i] + u[2 * i + 1] * u[2 * i + 1];
            norm[s] = e;
            backward(n, R, u, W + (size_t)2 * n * s);
        }
        /* Apply: AMF(g, s) = |w_s^H x_g|^2 / (v_s^H R^{-1} v_s). */
        for (int g = b0; g < b1; g++) {
            const double *x = slice + (size_t)2 * n * (g - lo);
            double *out = amf + (size_t)bins * (g - s0);
            for (int s = 0; s < bins; s++) {
                const double *w = W + (size_t)2 * n * s;
                double yr = 0.0, yi = 0.0;
                for (int i = 0; i < n; i++) {
                    yr += w[2 * i] * x[2 * i] + w[2 * i + 1] * x[2 * i + 1];
                    yi += w[2 * i] * x[2 * i + 1] - w[2 * i + 1] * x[2 * i];
                }
                out[s] = (yr * yr + yi * yi) / norm[s];
            }
        }
    }
    free(R);
    free(sv);
    free(W);
    free(u);
    free(norm);
    return rc;
}

/* ---------------------------------------------------------------- detection */

int stap_cfar(const int *p, const double *amf, int s0, int s1, int *dets)
{
    const int B = p[P_BLOCK], A = p[P_ABINS], bins = stap_bins(p);
    const int win = p[P_CFAR_WIN], guard = p[P_CFAR_GUARD];
    const double alpha = (double)p[P_CFAR_X10] / 10.0;
    /* Running sums along range within the block: sum[r * bins + s] is the
     * statistic of bin s summed over the block's first r gates. */
    double *sum = malloc(sizeof(double) * (size_t)(B + 1) * (size_t)bins);
    int count = 0;
    for (int b0 = s0; b0 < s1; b0 += B) {
        const double *blk = amf + (size_t)bins * (b0 - s0);
        for (int s = 0; s < bins; s++)
            sum[s] = 0.0;
        for (int r = 0; r < B; r++)
            for (int s = 0; s < bins; s++)
                sum[(size_t)(r + 1) * bins + s] = sum[(size_t)r * bins + s] + blk[(size_t)r * bins + s];
        for (int i = 0; i < B; i++) {
            /* Reference cells: [i - guard - win, i - guard) and
             * (i + guard, i + guard + win], clipped to the block. */
            int l0 = i - guard - win, l1 = i - guard, r0 = i + guard + 1, r1 = i + guard + win + 1;
            if (l0 < 0) l0 = 0;
            if (l1 < 0) l1 = 0;
            if (r0 > B) r0 = B;
            if (r1 > B) r1 = B;
            const int cells = (l1 - l0) + (r1 - r0);
            if (cells == 0) continue;
            const double *cut = blk + (size_t)bins * i;
            for (int s = 0; s < bins; s++) {
                const double ref = (sum[(size_t)l1 * bins + s] - sum[(size_t)l0 * bins + s])
                                 + (sum[(size_t)r1 * bins + s] - sum[(size_t)r0 * bins + s]);
                if (!(cut[s] > alpha * (ref / (double)cells))) continue;
                if (dets) {
                    dets[3 * count] = b0 + i;
                    dets[3 * count + 1] = s / A;
                    dets[3 * count + 2] = s % A;
                }
                count++;
            }
        }
    }
    free(sum);
    return count;
}

int stap_hash(const double *x, size_t n)
{
    /* FNV-1a over 64-bit words (the bits of each double), not bytes: one
     * multiply per value. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, &x[i], sizeof w);
        h = (h ^ w) * 1099511628211ull;
    }
    return (int)((h ^ (h >> 30) ^ (h >> 60)) & 0x3fffffff);
}
