#include "C4SNet.h"
void *twice(void *hnd, int x) { C4SNetOut(hnd, 1, x + x); return hnd; }
