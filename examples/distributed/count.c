/* The box of primes.snet: counts the primes in [lo, hi) by trial division. */
#include "C4SNet.h"

static int is_prime(int n)
{
    if (n < 2) return 0;
    for (int d = 2; (long)d * d <= n; d++) {
        if (n % d == 0) return 0;
    }
    return 1;
}

void *count(void *hnd, int lo, int hi)
{
    int primes = 0;
    for (int n = lo; n < hi; n++) {
        primes += is_prime(n);
    }
    C4SNetOut(hnd, 1, lo, hi, primes);
    return hnd;
}
