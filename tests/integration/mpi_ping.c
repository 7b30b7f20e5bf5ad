// Two MPI ranks (one per emulated host): messages of 1 B to 1 MiB there and back, each byte
// checked after the peer changed it; one-sided MPI_Put and MPI_Get of the same sizes into and
// out of the peer's window (osc ucx: RDMA WRITE and READ), each byte checked; then an allreduce.
// Prints "mpi_ping: ok" on rank 0.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char expected(int i, int n, int round) {
    return (unsigned char)(i * 7 + n + round);
}

// Returns 1 when b[0..n) is not expected(i, n, round); says which byte.
static int differs(const unsigned char* b, int n, int round, const char* what) {
    for (int i = 0; i < n; ++i)
        if (b[i] != expected(i, n, round)) {
            fprintf(stderr, "mpi_ping: %s %d B: byte %d is %u, expected %u\n", what, n, i, b[i],
                    expected(i, n, round));
            return 1;
        }
    return 0;
}

// Rank 0 puts round 2 into rank 1's window; rank 1 checks it and writes round 3 there, which
// rank 0 gets. Fences separate the epochs.
static int one_sided(int rank, int n) {
    unsigned char* win_mem = NULL;
    MPI_Win win;
    MPI_Win_allocate(n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
    unsigned char* b = malloc((size_t)n);
    int bad = 0;
    for (int i = 0; i < n; ++i)
        b[i] = expected(i, n, 2);
    MPI_Win_fence(0, win);
    if (rank == 0) MPI_Put(b, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    if (rank == 1) {
        bad |= differs(win_mem, n, 2, "MPI_Put");
        for (int i = 0; i < n; ++i)
            win_mem[i] = expected(i, n, 3);
    }
    MPI_Win_fence(0, win);
    if (rank == 0) MPI_Get(b, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    if (rank == 0) bad |= differs(b, n, 3, "MPI_Get");
    free(b);
    MPI_Win_free(&win);
    return bad;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = size != 2;
    for (int n = 1; size == 2 && n <= (1 << 20); n *= 4) {
        unsigned char* b = malloc((size_t)n);
        if (rank == 0) {
            for (int i = 0; i < n; ++i)
                b[i] = expected(i, n, 0);
            MPI_Send(b, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= differs(b, n, 1, "send/recv");
        } else {
            MPI_Recv(b, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; ++i)
                b[i] = (unsigned char)(b[i] + 1);
            MPI_Send(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        free(b);
        bad |= one_sided(rank, n);
    }
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) bad = 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_ping: %s (1 B to 1 MiB both ways, put and get, allreduce %ld)\n",
               bad ? "FAIL" : "ok", sum);
    MPI_Finalize();
    return bad;
}
