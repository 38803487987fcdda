/* Raw MPI ping-pong: the communication benchmark's MPI baseline (thesis 5.2).
 *
 *   mpicc -O2 -o mpi_pingpong bench/programs/mpi_pingpong.c
 *   mpirun -np 2 ./mpi_pingpong [--sizes 8,1024,...]
 *
 * Rank 0 sends a message of `bytes` bytes to rank 1 with MPI_Send, rank 1
 * receives it with MPI_Recv into its buffer and sends that buffer back;
 * one round trip.  Same rules as `snet pingpong`
 * (crates/snet-cli/src/bench/pingpong.rs): sizes 8 B .. 256 MiB doubling by
 * default, reps_for(bytes) timed round trips after max(reps/10, 2) warm-up
 * round trips, the median round trip, and the busy time = CPU time of the
 * thread that calls MPI (CLOCK_THREAD_CPUTIME_ID; Open MPI progresses its
 * shared-memory and TCP transfers inside the calls, on that thread) in both
 * ranks over the timed round trips, divided by reps.  proc_busy_ns is the
 * same from getrusage(RUSAGE_SELF): the whole process, Open MPI's helper
 * threads included.  Rank 1 sends both CPU times to rank 0 at the end of
 * each size.  Rank 0 prints one JSON line per size:
 *   {"transport":"raw-mpi","notify":"-","fields":"-","bytes":..,"reps":..,
 *    "rtt_ns":..,"mean_ns":..,"busy_ns":..,"proc_busy_ns":..}
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* CPU time of the whole process (all threads), user + system. */
static uint64_t proc_cpu_ns(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000ull;
}

/* CPU time of the calling thread. */
static uint64_t thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* As reps_for in pingpong.rs. */
static long reps_for(size_t bytes) {
    if (bytes <= 65536) return 2000;
    if (bytes <= 1048576) return 300;
    if (bytes <= 16777216) return 40;
    return 8;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (rank == 0) fprintf(stderr, "error: needs exactly 2 ranks (mpirun -np 2)\n");
        MPI_Finalize();
        return 2;
    }
    size_t sizes[64];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            char *s = argv[++i];
            while (*s && nsizes < 64) {
                char *end;
                unsigned long long v = strtoull(s, &end, 10);
                if (end == s || v == 0) {
                    if (rank == 0) fprintf(stderr, "error: bad --sizes\n");
                    MPI_Finalize();
                    return 2;
                }
                sizes[nsizes++] = (size_t)v;
                s = *end == ',' ? end + 1 : end;
            }
        }
    }
    if (nsizes == 0)
        for (int k = 3; k <= 28; k++) sizes[nsizes++] = (size_t)1 << k;
    size_t max = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > max) max = sizes[i];
    if (max > 0x7fffffff) {
        if (rank == 0) fprintf(stderr, "error: sizes above 2^31-1 bytes\n");
        MPI_Finalize();
        return 2;
    }
    unsigned char *buf = malloc(max);
    uint64_t *times = malloc(sizeof(uint64_t) * 2000);
    if (!buf || !times) {
        fprintf(stderr, "error: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0, max); /* fault the pages in before any timing */

    for (int si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        int count = (int)bytes;
        long reps = reps_for(bytes), warm = reps / 10 > 2 ? reps / 10 : 2;
        if (rank == 0)
            for (size_t i = 0; i < bytes; i += 4096) buf[i] = (unsigned char)((i / 4096) ^ 0x5a);
        MPI_Barrier(MPI_COMM_WORLD);
        uint64_t cpu0 = 0, proc0 = 0;
        for (long r = 0; r < warm + reps; r++) {
            if (r == warm) {
                cpu0 = thread_cpu_ns();
                proc0 = proc_cpu_ns();
            }
            if (rank == 0) {
                uint64_t t0 = now_ns();
                MPI_Send(buf, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (r >= warm) times[r - warm] = now_ns() - t0;
            } else {
                MPI_Recv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        uint64_t used[2] = {thread_cpu_ns() - cpu0, proc_cpu_ns() - proc0};
        if (rank == 1) {
            MPI_Send(used, 2, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD);
            continue;
        }
        uint64_t theirs[2];
        MPI_Recv(theirs, 2, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < bytes; i += 4096)
            if (buf[i] != (unsigned char)((i / 4096) ^ 0x5a)) {
                fprintf(stderr, "error: a %zu-byte message came back damaged\n", bytes);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        uint64_t sum = 0;
        for (long i = 0; i < reps; i++) sum += times[i];
        qsort(times, (size_t)reps, sizeof(uint64_t), cmp_u64);
        printf("{\"transport\":\"raw-mpi\",\"notify\":\"-\",\"fields\":\"-\",\"bytes\":%zu,"
               "\"reps\":%ld,\"rtt_ns\":%llu,\"mean_ns\":%llu,\"busy_ns\":%llu,"
               "\"proc_busy_ns\":%llu}\n",
               bytes, reps, (unsigned long long)times[reps / 2],
               (unsigned long long)(sum / (uint64_t)reps),
               (unsigned long long)((used[0] + theirs[0]) / (uint64_t)reps),
               (unsigned long long)((used[1] + theirs[1]) / (uint64_t)reps));
        fflush(stdout);
    }
    free(buf);
    free(times);
    MPI_Finalize();
    return 0;
}
