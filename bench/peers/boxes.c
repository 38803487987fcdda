/* The issue-23 peer workloads' C boxes (see peers.cpp for the oneTBB side).
 *
 * gen: emits x = 1..n (and a split key k = x mod 16) from one record;
 * inc: x += 1; work: `rounds` xorshift rounds; sink: counts and sums what
 * reaches it and emits nothing. The sink's totals are kept in atomics and
 * printed to standard error at exit as "count SUM", so the harness checks
 * every run without the cost of writing N output records. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "C4SNet.h"

static atomic_long sink_count;
static atomic_ullong sink_sum;

static void report(void)
{
    fprintf(stderr, "%ld %llu\n", atomic_load(&sink_count),
            (unsigned long long)atomic_load(&sink_sum));
}

__attribute__((constructor)) static void at_start(void)
{
    atexit(report);
}

void *gen(void *hnd, int n)
{
    for (int x = 1; x <= n; x++)
        C4SNetOut(hnd, 1, x, x % 16);
    return hnd;
}

void *inc(void *hnd, int x)
{
    C4SNetOut(hnd, 1, x + 1);
    return hnd;
}

void *work(void *hnd, int x, int rounds)
{
    uint64_t v = (uint64_t)x;
    for (int r = 0; r < rounds; r++) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
    }
    /* Tags are C ints: the result travels as two 32-bit halves. */
    C4SNetOut(hnd, 1, (int)(uint32_t)(v >> 32), (int)(uint32_t)v);
    return hnd;
}

void *sink(void *hnd, int x)
{
    atomic_fetch_add(&sink_count, 1);
    atomic_fetch_add(&sink_sum, (unsigned long long)(unsigned)x);
    return hnd;
}

void *sink2(void *hnd, int hi, int lo)
{
    atomic_fetch_add(&sink_count, 1);
    atomic_fetch_add(&sink_sum, ((unsigned long long)(uint32_t)hi << 32) | (uint32_t)lo);
    return hnd;
}
