// The issue-23 peer workloads written against FastFlow (issue 41): the
// same work as peers.cpp (oneTBB) and the snet programs beside this file,
// for `bench/peers/run` and `bench/scale`.
//
//   ffpeers pipe10 N WORKERS
//       a generator node emitting x = 1..N, ten nodes x += 1 in series, a
//       sink node (an ff_Pipe: one thread per node)
//   ffpeers farm N WORKERS ROUNDS
//       an emitter of x = 1..N, WORKERS replicas of ROUNDS xorshift rounds
//       per record, a collector that counts and sums (an ff_Farm)
//
// WORKERS bounds the processors: the process restricts itself to the first
// WORKERS processors it is allowed before any thread starts (FastFlow's
// threads inherit the mask), as snet's `-w` bounds its worker threads.
// Build with -DBLOCKING_MODE -DNO_DEFAULT_MAPPING when the machine has
// fewer cores than threads (no spinning, no pinning of its own).
//
// Prints "count SUM" (the sink's record count and the sum of its values)
// so that the harness checks every run's output.
#include <ff/ff.hpp>

#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "peer_work.hpp"

using namespace ff;

/// Keep the first `workers` processors of the allowed set.
static void limit_cpus(int workers)
{
    cpu_set_t allowed, keep;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    CPU_ZERO(&keep);
    int kept = 0;
    for (int c = 0; c < CPU_SETSIZE && kept < workers; c++)
        if (CPU_ISSET(c, &allowed)) {
            CPU_SET(c, &keep);
            kept++;
        }
    if (kept > 0 && sched_setaffinity(0, sizeof keep, &keep) != 0)
        std::perror("ffpeers: sched_setaffinity");
}

// pipe10: records are the values themselves, carried in the task pointer
// (x >= 1, far below FastFlow's reserved pointer values), so no stage
// allocates.
struct Gen : ff_node_t<long> {
    explicit Gen(long n) : n(n) {}
    long *svc(long *) override
    {
        for (long x = 1; x <= n; x++)
            ff_send_out(reinterpret_cast<long *>(x));
        return EOS;
    }
    long n;
};

struct Inc : ff_node_t<long> {
    long *svc(long *t) override { return reinterpret_cast<long *>(reinterpret_cast<long>(t) + 1); }
};

struct Sink : ff_node_t<long> {
    long *svc(long *t) override
    {
        count++;
        sum += (std::uint64_t)reinterpret_cast<long>(t);
        return GO_ON;
    }
    long count = 0;
    std::uint64_t sum = 0;
};

static int pipe10(long n)
{
    Gen gen(n);
    Inc s[10];
    Sink sink;
    ff_Pipe<> pipe(gen, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], sink);
    if (pipe.run_and_wait_end() < 0) {
        std::fprintf(stderr, "ffpeers: pipe10 failed\n");
        return 1;
    }
    report(sink.count, sink.sum);
    return 0;
}

// farm: a record is a pointer to its own slot of a table made before the
// run; the replica overwrites the slot with its result (no allocation per
// record on either side).
struct Emitter : ff_node_t<std::uint64_t> {
    Emitter(std::uint64_t *slots, long n) : slots(slots), n(n) {}
    std::uint64_t *svc(std::uint64_t *) override
    {
        for (long x = 1; x <= n; x++) {
            slots[x - 1] = (std::uint64_t)x;
            ff_send_out(&slots[x - 1]);
        }
        return EOS;
    }
    std::uint64_t *slots;
    long n;
};

struct Work : ff_node_t<std::uint64_t> {
    explicit Work(long rounds) : rounds(rounds) {}
    std::uint64_t *svc(std::uint64_t *t) override
    {
        *t = xorshift_rounds(*t, rounds);
        return t;
    }
    long rounds;
};

struct Collector : ff_node_t<std::uint64_t> {
    std::uint64_t *svc(std::uint64_t *t) override
    {
        count++;
        sum += *t;
        return GO_ON;
    }
    long count = 0;
    std::uint64_t sum = 0;
};

static int farm(long n, int workers, long rounds)
{
    std::vector<std::uint64_t> slots((size_t)n);
    Emitter emitter(slots.data(), n);
    Collector collector;
    std::vector<std::unique_ptr<ff_node>> w;
    for (int i = 0; i < workers; i++)
        w.push_back(std::unique_ptr<ff_node>(new Work(rounds)));
    ff_Farm<std::uint64_t> f(std::move(w), emitter, collector);
    if (f.run_and_wait_end() < 0) {
        std::fprintf(stderr, "ffpeers: farm failed\n");
        return 1;
    }
    report(collector.count, collector.sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: ffpeers pipe10 N WORKERS | ffpeers farm N WORKERS ROUNDS\n");
        return 2;
    }
    long n = std::atol(argv[2]);
    int workers = std::atoi(argv[3]);
    if (n < 1 || workers < 1) {
        std::fprintf(stderr, "ffpeers: N and WORKERS must be at least 1\n");
        return 2;
    }
    limit_cpus(workers);
    if (!std::strcmp(argv[1], "pipe10"))
        return pipe10(n);
    if (!std::strcmp(argv[1], "farm") && argc > 4)
        return farm(n, workers, std::atol(argv[4]));
    std::fprintf(stderr, "ffpeers: unknown workload\n");
    return 2;
}
