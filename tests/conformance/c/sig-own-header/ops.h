#ifndef OPS_H
#define OPS_H
#include <C4SNet.h>
void *scale(void *handle, c4snet_data_t *value, int factor);
void *negate(void *, struct cdata *);
#endif
