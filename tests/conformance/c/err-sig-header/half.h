#ifndef HALF_H
#define HALF_H
#include "C4SNet.h"
void *half(void *hnd, double x);   /* a tag is an int */
#endif
