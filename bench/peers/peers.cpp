// The issue-23 peer workloads written against oneTBB: the same work as the
// snet programs beside this file, for `bench/peers/run`.
//
//   peers pipe10 pipeline|flowgraph N WORKERS
//       a generator of x = 1..N, ten stages x += 1 in series, a sink
//   peers farm pipeline N WORKERS ROUNDS
//       a generator of x = 1..N, a parallel stage of ROUNDS xorshift
//       rounds per record, a sink
//
// Prints "count SUM" (the sink's record count and the sum of its values)
// so that the harness checks every run's output.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "peer_work.hpp"

/// The pipelines' first stage: x = 1..n, in order (`next` is its counter).
static tbb::filter<void, long> generator(long &next, long n)
{
    return tbb::make_filter<void, long>(tbb::filter_mode::serial_in_order,
                                        [&next, n](tbb::flow_control &fc) -> long {
                                            if (next > n) {
                                                fc.stop();
                                                return 0;
                                            }
                                            return next++;
                                        });
}

static void pipe10_pipeline(long n, int workers)
{
    long next = 1, count = 0;
    std::uint64_t sum = 0;
    // serial_in_order: each stage handles one record at a time, in order,
    // as an S-Net box entity does (TBB may still run different stages at
    // once on different records).
    auto stage = tbb::make_filter<long, long>(tbb::filter_mode::serial_in_order,
                                              [](long x) { return x + 1; });
    tbb::parallel_pipeline(
        4 * workers,
        generator(next, n) &
            stage & stage & stage & stage & stage & stage & stage & stage & stage & stage &
            tbb::make_filter<long, void>(tbb::filter_mode::serial_out_of_order, [&](long x) {
                count++;
                sum += (std::uint64_t)x;
            }));
    report(count, sum);
}

static void pipe10_flowgraph(long n)
{
    using namespace tbb::flow;
    graph g;
    long next = 1, count = 0;
    std::uint64_t sum = 0;
    input_node<long> gen(g, [&](tbb::flow_control &fc) -> long {
        if (next > n) {
            fc.stop();
            return 0;
        }
        return next++;
    });
    // The first stage rejects while busy, so the generator is pulled, not
    // pushed (memory stays bounded); each stage runs one record at a time,
    // as an S-Net box entity does.
    function_node<long, long, rejecting> first(g, 1, [](long x) { return x + 1; });
    function_node<long, long> *stages[9];
    for (auto &s : stages)
        s = new function_node<long, long>(g, 1, [](long x) { return x + 1; });
    function_node<long> sink(g, 1, [&](long x) {
        count++;
        sum += (std::uint64_t)x;
    });
    make_edge(gen, first);
    make_edge(first, *stages[0]);
    for (int i = 0; i + 1 < 9; i++)
        make_edge(*stages[i], *stages[i + 1]);
    make_edge(*stages[8], sink);
    gen.activate();
    g.wait_for_all();
    for (auto s : stages)
        delete s;
    report(count, sum);
}

static void farm_pipeline(long n, int workers, long rounds)
{
    long next = 1, count = 0;
    std::uint64_t sum = 0;
    tbb::parallel_pipeline(
        4 * workers,
        generator(next, n) &
            tbb::make_filter<long, std::uint64_t>(
                tbb::filter_mode::parallel,
                [rounds](long x) { return xorshift_rounds((std::uint64_t)x, rounds); }) &
            tbb::make_filter<std::uint64_t, void>(tbb::filter_mode::serial_out_of_order,
                                                  [&](std::uint64_t y) {
                                                      count++;
                                                      sum += y;
                                                  }));
    report(count, sum);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: peers pipe10 pipeline|flowgraph N WORKERS | peers farm pipeline N WORKERS ROUNDS\n");
        return 2;
    }
    long n = std::atol(argv[3]);
    int workers = std::atoi(argv[4]);
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, workers);
    if (!std::strcmp(argv[1], "pipe10") && !std::strcmp(argv[2], "pipeline"))
        pipe10_pipeline(n, workers);
    else if (!std::strcmp(argv[1], "pipe10") && !std::strcmp(argv[2], "flowgraph"))
        pipe10_flowgraph(n);
    else if (!std::strcmp(argv[1], "farm") && argc > 5)
        farm_pipeline(n, workers, std::atol(argv[5]));
    else {
        std::fprintf(stderr, "peers: unknown workload\n");
        return 2;
    }
    return 0;
}
