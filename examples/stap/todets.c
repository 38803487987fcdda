/* Reads the output of a STAP program (snet's XML records) and prints its
 * detections in the reference's format, one line per (CPI, slice), sorted:
 *
 *   cpi C part P ndet K hash H: g,d,a g,d,a ...
 *
 *   ./todets out.xml > dets.txt
 *
 * A record without the expected labels, or whose dets field does not hold
 * 3 * ndet numbers, is an error (exit status 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
    long cpi, part, ndet, hash;
    char *dets; /* "g,d,a g,d,a ..." */
};

static int cmp(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->cpi != y->cpi) return x->cpi < y->cpi ? -1 : 1;
    if (x->part != y->part) return x->part < y->part ? -1 : 1;
    return 0;
}

/* The value of <tag label="NAME">V</tag> in [s, end); 0 if found. */
static int tag(const char *s, const char *end, const char *name, long *v)
{
    char key[64];
    snprintf(key, sizeof key, "<tag label=\"%s\">", name);
    const char *t = strstr(s, key);
    if (!t || t >= end) return -1;
    *v = strtol(t + strlen(key), NULL, 10);
    return 0;
}

static void die(const char *msg, long cpi, long part)
{
    fprintf(stderr, "todets: %s (record cpi %ld part %ld)\n", msg, cpi, part);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT.xml\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap + 1);
    while ((got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) text = realloc(text, (cap *= 2) + 1);
    }
    fclose(f);
    text[len] = 0;
    size_t n = 0, ncap = 64;
    struct rec *recs = malloc(ncap * sizeof *recs);
    int terminated = 0;
    for (char *r = strstr(text, "<record"); r; r = strstr(r + 1, "<record")) {
        char *head_end = strchr(r, '>');
        if (!head_end) break;
        if (strstr(r, "type=\"terminate\"") && strstr(r, "type=\"terminate\"") < head_end) {
            terminated = 1;
            continue;
        }
        char *end = strstr(r, "</record>");
        if (!end) die("unterminated record", -1, -1);
        struct rec x = {0};
        if (tag(r, end, "cpi", &x.cpi) || tag(r, end, "part", &x.part)
            || tag(r, end, "ndet", &x.ndet) || tag(r, end, "hash", &x.hash))
            die("a record without <cpi>, <part>, <ndet> or <hash>", x.cpi, x.part);
        char *fd = strstr(r, "<field label=\"dets\"");
        if (!fd || fd > end) die("a record without the field dets", x.cpi, x.part);
        char *v = strchr(fd, ')');
        char *vend = strstr(fd, "</field>");
        if (!v || !vend || v > vend) die("dets is not a textual int array", x.cpi, x.part);
        v++;
        /* Numbers, three to a detection. */
        x.dets = malloc((size_t)(vend - v) + 2);
        size_t k = 0, at = 0;
        char *p = v;
        while (p < vend) {
            char *q;
            long num = strtol(p, &q, 10);
            if (q == p) die("dets holds something other than numbers", x.cpi, x.part);
            if (x.ndet > 0)
                at += (size_t)sprintf(x.dets + at, "%s%ld", k == 0 ? "" : k % 3 == 0 ? " " : ",",
                                      num);
            k++;
            p = q;
            while (p < vend && (*p == ',' || *p == ' ' || *p == '\n')) p++;
        }
        x.dets[at] = 0;
        if (x.ndet > 0 ? k != 3 * (size_t)x.ndet : k != 1)
            die("dets does not hold 3 * ndet numbers", x.cpi, x.part);
        if (n == ncap) recs = realloc(recs, (ncap *= 2) * sizeof *recs);
        recs[n++] = x;
    }
    if (!terminated) {
        fprintf(stderr, "todets: no terminate record: the run did not end normally\n");
        return 1;
    }
    qsort(recs, n, sizeof *recs, cmp);
    for (size_t i = 0; i < n; i++)
        printf("cpi %ld part %ld ndet %ld hash %ld:%s%s\n", recs[i].cpi, recs[i].part,
               recs[i].ndet, recs[i].hash, recs[i].ndet > 0 ? " " : "", recs[i].dets);
    return 0;
}
