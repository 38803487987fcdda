/* Minimal single-threaded stand-in for the C4SNet library and a sequential
 * driver that follows cholesky.snet's data flow step by step; used only to
 * check the box code (`make -C bench/programs/c/selftest`). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "C4SNet.h"

struct cdata { c4snet_type_t t; size_t n; int refs; double *d; };
c4snet_data_t *C4SNetAlloc(c4snet_type_t t, size_t n, void **data)
{ struct cdata *c = malloc(sizeof *c); c->t = t; c->n = n; c->refs = 1;
  c->d = malloc(n * sizeof(double)); *data = c->d; return c; }
c4snet_data_t *C4SNetCreate(c4snet_type_t t, size_t n, const void *data)
{ void *d; c4snet_data_t *c = C4SNetAlloc(t, n, &d); memcpy(d, data, n * sizeof(double)); return c; }
void C4SNetFree(c4snet_data_t *c) { if (--c->refs == 0) { free(c->d); free(c); } }
c4snet_data_t *C4SNetShallowCopy(c4snet_data_t *c) { c->refs++; return c; }
c4snet_data_t *C4SNetDeepCopy(c4snet_data_t *c) { return C4SNetCreate(c->t, c->n, c->d); }
void *C4SNetGetData(c4snet_data_t *c) { return c->d; }
size_t C4SNetArraySize(c4snet_data_t *c) { return c->n; }

/* outputs: variant + up to 8 values; `sig` says per variant which are fields */
typedef struct { int v; void *f[8]; int t[8]; } out_t;
static out_t outs[100000]; static int nouts; static const char *sig[3];
void (C4SNetOut)(void *hnd, int variant, ...)
{ va_list ap; va_start(ap, variant); out_t *o = &outs[nouts++]; o->v = variant;
  const char *s = sig[variant];
  for (int k = 0; s[k]; k++) { if (s[k] == 'f') o->f[k] = va_arg(ap, void *); else o->t[k] = va_arg(ap, int); }
  va_end(ap); (void)hnd; }
/* what C4SNet.h's macro C4SNetOut calls in C99 and later */
void C4SNetOutValues(void *hnd, int variant, const unsigned long long *values, int count)
{ out_t *o = &outs[nouts++]; o->v = variant;
  const char *s = sig[variant];
  if ((int)strlen(s) != count) { fprintf(stderr, "variant %d: %d values, not %d\n", variant, count, (int)strlen(s)); exit(1); }
  for (int k = 0; s[k]; k++) { if (s[k] == 'f') o->f[k] = (void *)(uintptr_t)values[k]; else o->t[k] = (int)values[k]; }
  (void)hnd; }

void *gen(void *, int, int); void *diag(void *, c4snet_data_t *, int, int, int);
void *trsm(void *, c4snet_data_t *, c4snet_data_t *, int, int);
void *put(void *, c4snet_data_t *, int, c4snet_data_t *, int, int, int, int);
void *upd(void *, c4snet_data_t *, int, int, int);
void *gemm(void *, c4snet_data_t *, c4snet_data_t *, c4snet_data_t *, int, int);
void *put2(void *, c4snet_data_t *, int, c4snet_data_t *, int, int, int, int);
void *last(void *, c4snet_data_t *, c4snet_data_t *, int, int);

int main(int argc, char **argv)
{
  int p = argc > 1 ? atoi(argv[1]) : 4, b = argc > 2 ? atoi(argv[2]) : 8;
  nouts = 0; sig[1] = "ffttt"; gen(0, p, b);
  c4snet_data_t *A = outs[0].f[0], *A0 = outs[0].f[1]; int k = outs[0].t[2];
  while (k != p - 1) {
    nouts = 0; sig[1] = "ftttt"; sig[2] = "fftt"; diag(0, A, k, p, b);
    int nt = nouts; out_t tasks[64]; int n = -1;
    for (int q = 0; q < nt; q++) { if (outs[q].v == 2) tasks[q] = outs[q]; else n = outs[q].t[1]; }
    for (int q = 0; q < nt; q++) if (outs[q].v == 2) {
      out_t t = tasks[q]; nouts = 0; sig[1] = "ft"; trsm(0, t.f[0], t.f[1], t.t[2], t.t[3]);
      out_t r = outs[0]; nouts = 0; sig[1] = "ftttt"; sig[2] = "fttt";
      put(0, A, n, r.f[0], r.t[1], k, p, b); n = outs[0].v == 1 ? outs[0].t[1] : 0; }
    nouts = 0; sig[1] = "ftttt"; sig[2] = "ffftt"; upd(0, A, k, p, b);
    static out_t ut[100000]; int nu = nouts; memcpy(ut, outs, sizeof(out_t) * nu);
    for (int q = 0; q < nu; q++) if (ut[q].v == 1) n = ut[q].t[1];
    for (int q = 0; q < nu; q++) if (ut[q].v == 2) {
      nouts = 0; sig[1] = "ft"; gemm(0, ut[q].f[0], ut[q].f[1], ut[q].f[2], ut[q].t[3], ut[q].t[4]);
      out_t r = outs[0]; nouts = 0; sig[1] = "ftttt"; sig[2] = "fttt";
      put2(0, A, n, r.f[0], r.t[1], k, p, b);
      if (outs[0].v == 1) n = outs[0].t[1]; else k = outs[0].t[1]; }
  }
  nouts = 0; sig[1] = "tt"; last(0, A, A0, p, b);
  printf("p=%d b=%d ok=%d err=%de-15\n", p, b, outs[0].t[0], outs[0].t[1]);
  return outs[0].t[0] == 1 ? 0 : 1;
}
