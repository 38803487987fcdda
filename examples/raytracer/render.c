/* The ray tracer: see render.h. */
#include <math.h>
#include <stddef.h>
#include "render.h"

typedef struct { double x, y, z; } vec;

static vec v(double x, double y, double z) { vec r = { x, y, z }; return r; }
static vec add(vec a, vec b) { return v(a.x + b.x, a.y + b.y, a.z + b.z); }
static vec sub(vec a, vec b) { return v(a.x - b.x, a.y - b.y, a.z - b.z); }
static vec mul(vec a, double s) { return v(a.x * s, a.y * s, a.z * s); }
static vec hadamard(vec a, vec b) { return v(a.x * b.x, a.y * b.y, a.z * b.z); }
static double dot(vec a, vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static vec norm(vec a) { return mul(a, 1.0 / sqrt(dot(a, a))); }

typedef struct {
    vec centre;
    double radius;
    vec colour;
    double reflect;   /* 0: matt, 1: perfect mirror */
    double shine;     /* specular weight */
} sphere;

static const sphere spheres[] = {
    { { 0.0, 1.0, 5.0 }, 1.0, { 0.9, 0.2, 0.2 }, 0.3, 0.6 },
    { { -2.2, 0.7, 6.5 }, 0.7, { 0.2, 0.8, 0.3 }, 0.1, 0.4 },
    { { 2.1, 0.8, 6.0 }, 0.8, { 0.3, 0.4, 0.95 }, 0.5, 0.8 },
    { { 0.9, 0.35, 3.4 }, 0.35, { 0.95, 0.85, 0.2 }, 0.0, 0.3 },
    { { -0.8, 2.6, 8.0 }, 1.2, { 0.85, 0.85, 0.85 }, 0.8, 0.9 },
};
#define NSPHERES ((int)(sizeof spheres / sizeof spheres[0]))

/* The floor: the plane y = 0, checkered, slightly reflective. */
static const double floor_reflect = 0.25;

typedef struct { vec pos; vec colour; } light;

static const light lights[] = {
    { { -5.0, 8.0, -2.0 }, { 0.8, 0.8, 0.75 } },
    { { 6.0, 5.0, 1.0 }, { 0.35, 0.35, 0.45 } },
};
#define NLIGHTS ((int)(sizeof lights / sizeof lights[0]))

static const vec ambient = { 0.08, 0.08, 0.1 };
static const vec sky_top = { 0.35, 0.55, 0.9 };
static const vec sky_low = { 0.85, 0.9, 1.0 };

#define EPS 1e-7
#define MAX_DEPTH 4

/* The nearest hit along o + t d (d unit) with t > EPS: its t, or -1. The
 * object hit: 0..NSPHERES-1 a sphere, NSPHERES the floor. */
static double intersect(vec o, vec d, int *what)
{
    double best = -1.0;
    for (int i = 0; i < NSPHERES; i++) {
        vec oc = sub(o, spheres[i].centre);
        double b = dot(oc, d);
        double c = dot(oc, oc) - spheres[i].radius * spheres[i].radius;
        double disc = b * b - c;
        if (disc < 0.0) continue;
        double s = sqrt(disc);
        double t = -b - s;
        if (t <= 1e-6) t = -b + s;
        if (t > 1e-6 && (best < 0.0 || t < best)) {
            best = t;
            *what = i;
        }
    }
    if (d.y < -EPS) {
        double t = -o.y / d.y;
        if (t > 1e-6 && (best < 0.0 || t < best)) {
            best = t;
            *what = NSPHERES;
        }
    }
    return best;
}

static vec trace(vec o, vec d, int depth)
{
    int what = -1;
    double t = intersect(o, d, &what);
    if (t < 0.0) {
        double k = d.y > 0.0 ? d.y : 0.0;
        return add(mul(sky_low, 1.0 - k), mul(sky_top, k));
    }
    vec p = add(o, mul(d, t));
    vec n, base;
    double reflect, shine;
    if (what == NSPHERES) {
        n = v(0.0, 1.0, 0.0);
        int cx = (int)floor(p.x), cz = (int)floor(p.z);
        base = ((cx + cz) & 1) ? v(0.9, 0.9, 0.9) : v(0.15, 0.15, 0.18);
        reflect = floor_reflect;
        shine = 0.2;
    } else {
        n = norm(sub(p, spheres[what].centre));
        base = spheres[what].colour;
        reflect = spheres[what].reflect;
        shine = spheres[what].shine;
    }
    vec colour = hadamard(base, ambient);
    vec lifted = add(p, mul(n, 1e-6));
    for (int l = 0; l < NLIGHTS; l++) {
        vec to = sub(lights[l].pos, p);
        double dist = sqrt(dot(to, to));
        vec ldir = mul(to, 1.0 / dist);
        double lambert = dot(n, ldir);
        if (lambert <= 0.0) continue;
        int blocker;
        double ts = intersect(lifted, ldir, &blocker);
        if (ts > 0.0 && ts < dist) continue;       /* in shadow */
        colour = add(colour, mul(hadamard(base, lights[l].colour), lambert));
        /* Blinn-Phong highlight, exponent 64 by repeated squaring. */
        vec h = norm(sub(ldir, d));
        double s = dot(n, h);
        if (s > 0.0) {
            for (int k = 0; k < 6; k++) s = s * s;
            colour = add(colour, mul(lights[l].colour, shine * s));
        }
    }
    if (reflect > 0.0 && depth < MAX_DEPTH) {
        vec r = sub(d, mul(n, 2.0 * dot(d, n)));
        vec rc = trace(lifted, r, depth + 1);
        colour = add(mul(colour, 1.0 - reflect), mul(rc, reflect));
    }
    return colour;
}

static unsigned char byte(double c)
{
    if (!(c > 0.0)) return 0;
    if (c >= 1.0) return 255;
    return (unsigned char)(c * 255.0 + 0.5);
}

void rt_render_rows(int width, int height, int y0, int y1, unsigned char *out)
{
    const vec eye = { 0.0, 1.6, -1.5 };
    const double aspect = (double)width / (double)height;
    const double fov = 0.9;   /* half-height of the image plane at z = 1 */
    for (int y = y0; y < y1; y++) {
        for (int x = 0; x < width; x++) {
            double px = ((x + 0.5) / width * 2.0 - 1.0) * fov * aspect;
            double py = (1.0 - (y + 0.5) / height * 2.0) * fov;
            vec d = norm(v(px, py - 0.25, 1.0));
            vec c = trace(eye, d, 0);
            unsigned char *o = out + ((size_t)(y - y0) * width + x) * 3;
            o[0] = byte(c.x);
            o[1] = byte(c.y);
            o[2] = byte(c.z);
        }
    }
}
