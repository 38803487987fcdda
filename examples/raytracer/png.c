/* A minimal PNG writer: 8-bit RGB, no interlace, the image data in stored
 * (uncompressed) deflate blocks; CRC-32 and Adler-32 by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "render.h"

static unsigned long crc_table[256];

static void crc_init(void)
{
    for (unsigned long n = 0; n < 256; n++) {
        unsigned long c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xedb88320ul ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static unsigned long crc(unsigned long c, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ b[i]) & 0xff] ^ (c >> 8);
    return c;
}

static void be32(unsigned char *p, unsigned long x)
{
    p[0] = (unsigned char)(x >> 24);
    p[1] = (unsigned char)(x >> 16);
    p[2] = (unsigned char)(x >> 8);
    p[3] = (unsigned char)x;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char hdr[8];
    be32(hdr, (unsigned long)n);
    memcpy(hdr + 4, type, 4);
    unsigned long c = crc(0xfffffffful, hdr + 4, 4);
    c = crc(c, data, n) ^ 0xfffffffful;
    unsigned char tail[4];
    be32(tail, c);
    return fwrite(hdr, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n)
        && fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

int rt_write_png(const char *path, int width, int height, const unsigned char *rgb)
{
    crc_init();
    size_t row = (size_t)width * 3 + 1;           /* filter byte + pixels */
    size_t raw = row * (size_t)height;
    size_t blocks = raw / 65535 + 1;
    size_t n = 2 + raw + blocks * 5 + 4;
    unsigned char *z = malloc(n);
    if (!z) return -1;
    /* The raw scanlines, each with filter type 0 (none). */
    unsigned char *lines = malloc(raw ? raw : 1);
    if (!lines) { free(z); return -1; }
    for (int y = 0; y < height; y++) {
        lines[y * row] = 0;
        memcpy(lines + y * row + 1, rgb + (size_t)y * width * 3, (size_t)width * 3);
    }
    size_t o = 0;
    z[o++] = 0x78;                                 /* deflate, 32K window */
    z[o++] = 0x01;                                 /* (0x7801 % 31 == 0) */
    size_t left = raw, at = 0;
    do {
        size_t len = left > 65535 ? 65535 : left;
        z[o++] = left == len ? 1 : 0;              /* BFINAL, BTYPE = 00 */
        z[o++] = (unsigned char)len;
        z[o++] = (unsigned char)(len >> 8);
        z[o++] = (unsigned char)~len;
        z[o++] = (unsigned char)(~len >> 8);
        memcpy(z + o, lines + at, len);
        o += len;
        at += len;
        left -= len;
    } while (left > 0);
    unsigned long a = 1, b = 0;                    /* Adler-32 */
    for (size_t i = 0; i < raw; i++) {
        a = (a + lines[i]) % 65521;
        b = (b + a) % 65521;
    }
    be32(z + o, (b << 16) | a);
    o += 4;
    free(lines);

    FILE *f = fopen(path, "wb");
    if (!f) { free(z); return -1; }
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    unsigned char ihdr[13];
    be32(ihdr, (unsigned long)width);
    be32(ihdr + 4, (unsigned long)height);
    ihdr[8] = 8;    /* bit depth */
    ihdr[9] = 2;    /* colour type: RGB */
    ihdr[10] = 0;   /* deflate */
    ihdr[11] = 0;   /* adaptive filtering */
    ihdr[12] = 0;   /* no interlace */
    int err = fwrite(sig, 1, 8, f) != 8
        || chunk(f, "IHDR", ihdr, 13)
        || chunk(f, "IDAT", z, o)
        || chunk(f, "IEND", NULL, 0);
    free(z);
    if (fclose(f) != 0) err = 1;
    return err ? -1 : 0;
}
