/* The ray tracer shared by the S-Net boxes (boxes.c) and the one-process
 * reference (reference.c): a fixed scene of spheres over a checkered
 * plane, two point lights, hard shadows and mirror reflections. Plain
 * double arithmetic only (+ - * / and sqrt, no libm transcendental
 * functions), so a row renders to the same bytes wherever it is rendered;
 * build with -ffp-contract=off so no compiler fuses a multiply-add. */
#ifndef RT_RENDER_H
#define RT_RENDER_H

/* Renders rows [y0, y1) of a width x height image into out (RGB, 3 bytes a
 * pixel, row-major, (y1 - y0) * width * 3 bytes). */
void rt_render_rows(int width, int height, int y0, int y1, unsigned char *out);

/* Writes a width x height RGB image (rows top to bottom) as a PNG file
 * (stored deflate blocks, no compression); 0 on success. */
int rt_write_png(const char *path, int width, int height, const unsigned char *rgb);

#endif
