// The work both C++ peers do and how they report it (peers.cpp for oneTBB,
// ffpeers.cpp for FastFlow): the same xorshift rounds as boxes.c's `work`
// box, and the "count SUM" line the harness checks.
#pragma once

#include <cstdint>
#include <cstdio>

static std::uint64_t xorshift_rounds(std::uint64_t x, long rounds)
{
    for (long r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void report(long count, std::uint64_t sum)
{
    std::printf("%ld %llu\n", count, (unsigned long long)sum);
}
