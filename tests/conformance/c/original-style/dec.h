#ifndef DEC_H
#define DEC_H
/* A header next to the box sources, included as <dec.h>. */
#define DEC_STEP 1
#define DONE_MARK 42
int dec_step(int n);
#endif
