#include <string.h>
#include "C4SNet.h"

/* A field arrives as c4snet_data_t *, not as the characters. */
void *size(void *hnd, char *text)
{
    C4SNetOut(hnd, 1, (int)strlen(text));
    return hnd;
}
