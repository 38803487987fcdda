#include "C4SNet.h"
void *inc(void *hnd, int x) { C4SNetOut(hnd, 1, x + 1); return hnd; }
void *mi_malloc(void *hnd, int x) { C4SNetOut(hnd, 1, x); return hnd; }
