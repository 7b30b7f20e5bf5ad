// Two MPI ranks (one per emulated host): messages of 1 B to 1 MiB there and back, each byte
// checked after the peer changed it, then an allreduce. Prints "mpi_ping: ok" on rank 0.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char expected(int i, int n, int round) {
    return (unsigned char)(i * 7 + n + round);
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
            for (int i = 0; i < n; ++i)
                if (b[i] != expected(i, n, 1)) {
                    fprintf(stderr, "mpi_ping: %d B: byte %d is %u, expected %u\n", n, i, b[i],
                            expected(i, n, 1));
                    bad = 1;
                    break;
                }
        } else {
            MPI_Recv(b, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; ++i)
                b[i] = (unsigned char)(b[i] + 1);
            MPI_Send(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        free(b);
    }
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) bad = 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_ping: %s (1 B to 1 MiB both ways, allreduce %ld)\n", bad ? "FAIL" : "ok", sum);
    MPI_Finalize();
    return bad;
}
