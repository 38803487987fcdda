/* The reference: the whole image rendered in one process, written as a
 * PNG. The S-Net program's image (topng) must equal it byte for byte.
 *
 *   cc -O2 -ffp-contract=off reference.c render.c png.c -lm -o reference
 *   ./reference WIDTH HEIGHT reference.png
 */
#include <stdio.h>
#include <stdlib.h>
#include "render.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s WIDTH HEIGHT OUT.png\n", argv[0]);
        return 2;
    }
    int w = atoi(argv[1]), h = atoi(argv[2]);
    if (w <= 0 || h <= 0) {
        fprintf(stderr, "reference: bad size %s x %s\n", argv[1], argv[2]);
        return 2;
    }
    unsigned char *rgb = malloc((size_t)w * h * 3);
    if (!rgb) return 1;
    rt_render_rows(w, h, 0, h, rgb);
    if (rt_write_png(argv[3], w, h, rgb) != 0) {
        perror(argv[3]);
        return 1;
    }
    free(rgb);
    return 0;
}
