/* Converts the raytracer's output record stream (XML: a field `image`,
 * "(unsigned int[N])rgb,rgb,..." (0xRRGGBB), and tags `width`, `height`) to a PNG.
 *
 *   cc -O2 topng.c png.c -o topng
 *   ./topng out.xml image.png
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "render.h"

static char *slurp(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap + 1);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) b = realloc(b, (cap *= 2) + 1);
    }
    if (f != stdin) fclose(f);
    if (b) b[n] = 0;
    return b;
}

static long tag(const char *rec, const char *label)
{
    char key[64];
    snprintf(key, sizeof key, "<tag label=\"%s\">", label);
    const char *p = strstr(rec, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUT.xml|- IMAGE.png\n", argv[0]);
        return 2;
    }
    char *xml = slurp(argv[1]);
    if (!xml) { perror(argv[1]); return 1; }
    char *rec = strstr(xml, "<field label=\"image\"");
    if (!rec) { fprintf(stderr, "topng: no image field in %s\n", argv[1]); return 1; }
    char *end = strstr(rec, "</record>");
    if (end) *end = 0;
    while (rec > xml && strncmp(rec, "<record", 7) != 0) rec--;
    long w = tag(rec, "width"), h = tag(rec, "height");
    char *p = strstr(rec, "<field label=\"image\"");
    p = strchr(p, '[');
    if (w <= 0 || h <= 0 || !p) { fprintf(stderr, "topng: no width/height/array\n"); return 1; }
    long n = strtol(p + 1, &p, 10);
    if (n != w * h) { fprintf(stderr, "topng: %ld bytes for %ld x %ld\n", n, w, h); return 1; }
    p = strchr(p, ')') + 1;
    unsigned char *rgb = malloc((size_t)n * 3);
    for (long i = 0; i < n; i++) {
        unsigned long px = strtoul(p, &p, 10);
        rgb[3 * i] = (unsigned char)(px >> 16);
        rgb[3 * i + 1] = (unsigned char)(px >> 8);
        rgb[3 * i + 2] = (unsigned char)px;
        if (*p == ',') p++;
    }
    if (rt_write_png(argv[2], (int)w, (int)h, rgb) != 0) { perror(argv[2]); return 1; }
    return 0;
}
