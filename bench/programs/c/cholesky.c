/* Boxes of cholesky.snet: tiled Cholesky factorisation (see the .snet file).
 * Matrix layout: p*p tiles of b*b doubles, tile (i,j) at ((i*p)+j)*b*b,
 * row-major inside a tile.  Only tiles with i >= j are used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "C4SNet.h"

#define TILE(A, i, j, p, b) ((A) + ((size_t)(i) * (p) + (j)) * (size_t)(b) * (b))

/* In-place lower Cholesky of one b x b tile; zeroes the strict upper part. */
static void k_potrf(double *L, int b)
{
    for (int j = 0; j < b; j++) {
        double d = L[j * b + j];
        for (int m = 0; m < j; m++) d -= L[j * b + m] * L[j * b + m];
        d = sqrt(d);
        L[j * b + j] = d;
        for (int i = j + 1; i < b; i++) {
            double s = L[i * b + j];
            for (int m = 0; m < j; m++) s -= L[i * b + m] * L[j * b + m];
            L[i * b + j] = s / d;
        }
        for (int c = j + 1; c < b; c++) L[j * b + c] = 0.0;
    }
}

/* X := X * L^-T (solve X L^T = A row by row), L lower triangular. */
static void k_trsm(const double *L, double *X, int b)
{
    for (int r = 0; r < b; r++) {
        double *x = X + (size_t)r * b;
        for (int j = 0; j < b; j++) {
            double s = x[j];
            for (int m = 0; m < j; m++) s -= x[m] * L[j * b + m];
            x[j] = s / L[j * b + j];
        }
    }
}

/* C := C - Li * Lj^T  (syrk when Li == Lj). */
static void k_gemm(const double *Li, const double *Lj, double *C, int b)
{
    for (int r = 0; r < b; r++)
        for (int c = 0; c < b; c++) {
            double s = 0.0;
            for (int m = 0; m < b; m++) s += Li[r * b + m] * Lj[c * b + m];
            C[r * b + c] -= s;
        }
}

static c4snet_data_t *tile_copy(const double *t, int b)
{
    return C4SNetCreate(CTYPE_double, (size_t)b * b, t);
}

/* Symmetric, strictly diagonally dominant => positive definite. */
void *gen(void *hnd, int p, int b)
{
    int n = p * b;
    double *a;
    c4snet_data_t *A = C4SNetAlloc(CTYPE_double, (size_t)n * n, (void **)&a);
    for (int R = 0; R < n; R++)
        for (int C = 0; C < n; C++) {
            double v = 1.0 / (1.0 + abs(R - C)) + ((R * 7 + C * 7) % 13) * 0.01
                       * (R == C ? 0.0 : 1.0 / (1.0 + abs(R - C)));
            if (R == C) v += n;
            TILE(a, R / b, C / b, p, b)[(R % b) * b + (C % b)] = v;
        }
    /* make it exactly symmetric */
    for (int R = 0; R < n; R++)
        for (int C = 0; C < R; C++)
            TILE(a, C / b, R / b, p, b)[(C % b) * b + (R % b)] =
                TILE(a, R / b, C / b, p, b)[(R % b) * b + (C % b)];
    c4snet_data_t *A0 = C4SNetDeepCopy(A);
    C4SNetOut(hnd, 1, A, A0, 0, p, b);
    return hnd;
}

/* Fan-out 1: factorise tile (k,k), one trsm task per tile (i,k), i > k. */
void *diag(void *hnd, c4snet_data_t *A, int k, int p, int b)
{
    double *a = C4SNetGetData(A);
    k_potrf(TILE(a, k, k, p, b), b);
    for (int i = k + 1; i < p; i++)
        C4SNetOut(hnd, 2, tile_copy(TILE(a, k, k, p, b), b),
                  tile_copy(TILE(a, i, k, p, b), b), i, b);
    C4SNetOut(hnd, 1, A, p - k - 1, k, p, b);
    return hnd;
}

void *trsm(void *hnd, c4snet_data_t *D, c4snet_data_t *T, int i, int b)
{
    k_trsm(C4SNetGetData(D), C4SNetGetData(T), b);
    C4SNetFree(D);
    C4SNetOut(hnd, 1, T, i);
    return hnd;
}

/* Fan-in 1: write L(i,k) back; the last result leaves the loop. */
void *put(void *hnd, c4snet_data_t *A, int n, c4snet_data_t *T, int i,
          int k, int p, int b)
{
    memcpy(TILE((double *)C4SNetGetData(A), i, k, p, b), C4SNetGetData(T),
           sizeof(double) * b * b);
    C4SNetFree(T);
    if (n > 1) C4SNetOut(hnd, 1, A, n - 1, k, p, b);
    else       C4SNetOut(hnd, 2, A, k, p, b);
    return hnd;
}

/* Fan-out 2: one update task per tile (i,j), k < j <= i. */
void *upd(void *hnd, c4snet_data_t *A, int k, int p, int b)
{
    double *a = C4SNetGetData(A);
    int n = 0;
    for (int i = k + 1; i < p; i++)
        for (int j = k + 1; j <= i; j++) {
            C4SNetOut(hnd, 2, tile_copy(TILE(a, i, k, p, b), b),
                      tile_copy(TILE(a, j, k, p, b), b),
                      tile_copy(TILE(a, i, j, p, b), b), i * p + j, b);
            n++;
        }
    C4SNetOut(hnd, 1, A, n, k, p, b);
    return hnd;
}

void *gemm(void *hnd, c4snet_data_t *Li, c4snet_data_t *Lj, c4snet_data_t *T,
           int t, int b)
{
    k_gemm(C4SNetGetData(Li), C4SNetGetData(Lj), C4SNetGetData(T), b);
    C4SNetFree(Li);
    C4SNetFree(Lj);
    C4SNetOut(hnd, 1, T, t);
    return hnd;
}

/* Fan-in 2: write the updated tile back; the last one advances k. */
void *put2(void *hnd, c4snet_data_t *A, int n, c4snet_data_t *T, int t,
           int k, int p, int b)
{
    memcpy(TILE((double *)C4SNetGetData(A), t / p, t % p, p, b),
           C4SNetGetData(T), sizeof(double) * b * b);
    C4SNetFree(T);
    if (n > 1) C4SNetOut(hnd, 1, A, n - 1, k, p, b);
    else       C4SNetOut(hnd, 2, A, k + 1, p, b);
    return hnd;
}

/* Last tile, then check L * (L^T x) against A0 x for a fixed vector x
 * (O(n^2), so the check does not dilute the speedup of the O(n^3) work):
 * relative max error < 1e-10 gives <ok>=1. */
void *last(void *hnd, c4snet_data_t *A, c4snet_data_t *A0, int p, int b)
{
    double *a = C4SNetGetData(A), *a0 = C4SNetGetData(A0);
    int n = p * b;
    k_potrf(TILE(a, p - 1, p - 1, p, b), b);
#define AT(M, R, C) TILE(M, (R) / b, (C) / b, p, b)[((R) % b) * b + ((C) % b)]
    double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n),
           *z = malloc(sizeof(double) * n);
    for (int R = 0; R < n; R++) x[R] = 1.0 + (R % 17) * 0.125;
    for (int R = 0; R < n; R++) {            /* y = L^T x */
        double s = 0.0;
        for (int C = R; C < n; C++) s += AT(a, C, R) * x[C];
        y[R] = s;
    }
    double emax = 0.0, vmax = 0.0;
    for (int R = 0; R < n; R++) {            /* z = L y, compare with A0 x */
        double s = 0.0, v = 0.0;
        for (int C = 0; C <= R; C++) s += AT(a, R, C) * y[C];
        for (int C = 0; C < n; C++) v += (C <= R ? AT(a0, R, C) : AT(a0, C, R)) * x[C];
        z[R] = s;
        if (fabs(v) > vmax) vmax = fabs(v);
        if (fabs(s - v) > emax) emax = fabs(s - v);
    }
#undef AT
    free(x); free(y); free(z);
    C4SNetFree(A);
    C4SNetFree(A0);
    double rel = emax / vmax;
    /* <err>: relative error in units of 1e-15 (tags are ints) */
    C4SNetOut(hnd, 1, rel < 1e-10 ? 1 : 0, (int)(rel * 1e15 < 2e9 ? rel * 1e15 : 2e9));
    return hnd;
}
