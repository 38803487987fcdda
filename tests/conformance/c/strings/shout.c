#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "C4SNet.h"
void *shout(void *hnd, c4snet_data_t *s)
{
    char *str = C4SNetGetString(s);
    size_t n = strlen(str);
    for (size_t i = 0; i < n; i++)
        str[i] = toupper((unsigned char)str[i]);
    C4SNetFree(s);
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_char, n, str), (int)n);
    free(str);
    return hnd;
}
