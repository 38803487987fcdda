/* The boxes of raytracer.snet. */
#include <string.h>
#include "C4SNet.h"
#include "render.h"

/* One record per horizontal section (rows [y0, y1), sent to node
 * sec % nodes), and first the empty canvas the merge fills. */
void *split(void *hnd, int width, int height, int sections, int nodes)
{
    if (sections < 1) sections = 1;
    if (sections > height) sections = height;
    if (nodes < 1) nodes = 1;
    unsigned char *d;
    c4snet_data_t *canvas = C4SNetAlloc(CTYPE_uchar, (size_t)width * height * 3, (void **)&d);
    memset(d, 0, (size_t)width * height * 3);
    C4SNetOut(hnd, 2, canvas, width, height, sections, 0);
    for (int s = 0; s < sections; s++) {
        int y0 = (int)((long)height * s / sections);
        int y1 = (int)((long)height * (s + 1) / sections);
        C4SNetOut(hnd, 1, width, height, sections, s, y0, y1, s % nodes);
    }
    return hnd;
}

/* Renders its section into a new field: rows y0..y1, RGB. */
void *solve(void *hnd, int width, int height, int y0, int y1)
{
    unsigned char *d;
    c4snet_data_t *chunk = C4SNetAlloc(CTYPE_uchar, (size_t)(y1 - y0) * width * 3, (void **)&d);
    rt_render_rows(width, height, y0, y1, d);
    C4SNetOut(hnd, 1, chunk, y0, y1);
    return hnd;
}

/* Copies a rendered section into (a copy of) the canvas. */
void *paste(void *hnd, c4snet_data_t *canvas, int done, c4snet_data_t *chunk,
            int y0, int y1, int width)
{
    size_t n = C4SNetArraySize(canvas);
    unsigned char *out;
    c4snet_data_t *next = C4SNetAlloc(CTYPE_uchar, n, (void **)&out);
    memcpy(out, C4SNetGetData(canvas), n);
    size_t at = (size_t)y0 * width * 3, len = (size_t)(y1 - y0) * width * 3;
    if (at + len <= n && C4SNetArraySize(chunk) == len)
        memcpy(out + at, C4SNetGetData(chunk), len);
    C4SNetFree(canvas);
    C4SNetFree(chunk);
    C4SNetOut(hnd, 1, next, done + 1, width);
    return hnd;
}

/* The finished image for the output: one unsigned int 0xRRGGBB a pixel
 * (an unsigned char array would be written as raw characters). */
void *pixels(void *hnd, c4snet_data_t *canvas)
{
    size_t n = C4SNetArraySize(canvas) / 3;
    const unsigned char *rgb = C4SNetGetData(canvas);
    unsigned int *px;
    c4snet_data_t *image = C4SNetAlloc(CTYPE_uint, n, (void **)&px);
    for (size_t i = 0; i < n; i++)
        px[i] = (unsigned int)rgb[3 * i] << 16 | (unsigned int)rgb[3 * i + 1] << 8 | rgb[3 * i + 2];
    C4SNetFree(canvas);
    C4SNetOut(hnd, 1, image);
    return hnd;
}
