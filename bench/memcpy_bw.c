/* memcpy_bw: single-thread memcpy bandwidth, the ceiling for any software data path that copies
 * each byte once. Copies CHUNK-byte blocks through a SPAN-byte source and destination (SPAN
 * bigger than the last-level cache, so the copy goes to memory as the emulator's would) for
 * about SECONDS seconds and prints "memcpy_bw CHUNK MiB/s".
 *
 * usage: memcpy_bw CHUNK [SECONDS] [SPAN]     (defaults: 1 s, 64 MiB)
 * Built by bench/run.sh with `cc -O2` into its temp dir. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CHUNK [SECONDS] [SPAN]\n", argv[0]);
        return 2;
    }
    size_t chunk = strtoull(argv[1], NULL, 0);
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    size_t span = argc > 3 ? strtoull(argv[3], NULL, 0) : (size_t)64 << 20;
    if (chunk == 0 || span < chunk || seconds <= 0) {
        fprintf(stderr, "memcpy_bw: bad arguments\n");
        return 2;
    }
    span -= span % chunk;
    char* src = malloc(span);
    char* dst = malloc(span);
    if (!src || !dst) {
        fprintf(stderr, "memcpy_bw: out of memory\n");
        return 1;
    }
    memset(src, 0x5a, span); /* fault every page in before timing */
    memset(dst, 0xa5, span);

    size_t off = 0, copied = 0;
    double start = now_s(), elapsed = 0;
    do {
        /* Time is read every 1 MiB or so, not on every small copy. */
        for (size_t n = 0; n < ((size_t)1 << 20); n += chunk) {
            memcpy(dst + off, src + off, chunk);
            copied += chunk;
            off += chunk;
            if (off == span) off = 0;
        }
        elapsed = now_s() - start;
    } while (elapsed < seconds);

    /* Read the destination so the copies cannot be optimised away. */
    unsigned sum = 0;
    for (size_t i = 0; i < span; i += 4096)
        sum += (unsigned char)dst[i];
    printf("memcpy_bw %zu %.1f\n", chunk, (double)copied / elapsed / (1 << 20));
    fprintf(stderr, "memcpy_bw: %zu bytes in %.3f s, span %zu, checksum %u\n", copied, elapsed,
            span, sum);
    free(src);
    free(dst);
    return 0;
}
