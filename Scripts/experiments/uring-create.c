// Issue 16's io_uring question, measured outside Keepsake: does creating a restore's many small
// files through io_uring beat plain system calls? Each file is made as Keepsake's restore makes
// one in an empty target: created unnamed (O_TMPFILE) in its folder, written, its time set,
// linked under its name, closed. Modes:
//   sys          one system call per step (what RestoreFileWriter does)
//   uring        openat, write, linkat+close through io_uring, 64 files per submission
//                (io_uring has no operation for times: futimens stays a system call)
//   uring-write  only the writes through io_uring (the one step that completes inline)
// Build and run (root, for linkat with AT_EMPTY_PATH; SIZES holds one file size per line):
//   gcc -O2 -o /tmp/uring-create Scripts/experiments/uring-create.c
//   find /usr/share -type f -printf '%s\n' > /tmp/sizes.txt
//   for m in sys uring uring-write; do rm -rf /dev/shm/u; /tmp/uring-create $m /tmp/sizes.txt /dev/shm/u; done
// Raw io_uring system calls, so that nothing beyond the kernel's headers is needed.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define FILES_PER_DIR 14

static struct { int fd; unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes; struct io_uring_cqe *cqes; } ring;

static void ring_init(unsigned entries) {
    struct io_uring_params p; memset(&p, 0, sizeof p);
    ring.fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (ring.fd < 0) { perror("io_uring_setup"); exit(1); }
    size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_CQ_RING);
    ring.sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQES);
    ring.sq_head = (unsigned *)(sq + p.sq_off.head); ring.sq_tail = (unsigned *)(sq + p.sq_off.tail);
    ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask); ring.sq_array = (unsigned *)(sq + p.sq_off.array);
    ring.cq_head = (unsigned *)(cq + p.cq_off.head); ring.cq_tail = (unsigned *)(cq + p.cq_off.tail);
    ring.cq_mask = (unsigned *)(cq + p.cq_off.ring_mask); ring.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static unsigned pending;
static struct io_uring_sqe *next_sqe(void) {
    unsigned tail = *ring.sq_tail + pending, idx = tail & *ring.sq_mask;
    ring.sq_array[idx] = idx; pending++;
    struct io_uring_sqe *s = &ring.sqes[idx]; memset(s, 0, sizeof *s); return s;
}
// Submits what is queued and waits for every completion; results by user_data.
static void submit_and_wait(long *results) {
    unsigned n = pending;
    __atomic_store_n(ring.sq_tail, *ring.sq_tail + n, __ATOMIC_RELEASE); pending = 0;
    if (syscall(__NR_io_uring_enter, ring.fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0) < 0) { perror("enter"); exit(1); }
    unsigned got = 0;
    while (got < n) {
        unsigned head = *ring.cq_head, tail = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++, got++) { struct io_uring_cqe *c = &ring.cqes[head & *ring.cq_mask]; results[c->user_data] = c->res; }
        __atomic_store_n(ring.cq_head, head, __ATOMIC_RELEASE);
        if (got < n) syscall(__NR_io_uring_enter, ring.fd, 0, n - got, IORING_ENTER_GETEVENTS, NULL, 0);
    }
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: uring-create sys|uring|uring-write SIZES TARGET\n"); return 2; }
    int uring = strcmp(argv[1], "uring") == 0, uringWrite = strcmp(argv[1], "uring-write") == 0;
    if (!uring && !uringWrite && strcmp(argv[1], "sys") != 0) { fprintf(stderr, "unknown mode %s\n", argv[1]); return 2; }
    FILE *f = fopen(argv[2], "r");
    if (!f) { perror(argv[2]); return 1; }
    size_t cap = 1 << 16, n = 0; long *sizes = malloc(cap * sizeof *sizes);
    while (fscanf(f, "%ld", &sizes[n]) == 1) if (++n == cap) sizes = realloc(sizes, (cap *= 2) * sizeof *sizes);
    size_t maxsize = 0; for (size_t i = 0; i < n; i++) if ((size_t)sizes[i] > maxsize) maxsize = sizes[i];
    char *content = malloc(maxsize + 1); memset(content, 'x', maxsize + 1);
    mkdir(argv[3], 0755); int root = open(argv[3], O_RDONLY | O_DIRECTORY);
    if (root < 0) { perror(argv[3]); return 1; }
    size_t dirs = (n + FILES_PER_DIR - 1) / FILES_PER_DIR; int *dirfd = malloc(dirs * sizeof *dirfd); char name[64];
    double start = now();
    for (size_t d = 0; d < dirs; d++) { snprintf(name, sizeof name, "d%zu", d); mkdirat(root, name, 0755); dirfd[d] = openat(root, name, O_RDONLY | O_DIRECTORY); }
    struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    if (uringWrite) {
        ring_init(2 * BATCH); long res[BATCH]; int fds[BATCH];
        for (size_t b = 0; b < n; b += BATCH) {
            size_t m = n - b < BATCH ? n - b : BATCH;
            for (size_t k = 0; k < m; k++) {
                fds[k] = openat(dirfd[(b + k) / FILES_PER_DIR], ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
                if (fds[k] < 0) { perror("openat"); return 1; }
                if (sizes[b + k] > 0) { struct io_uring_sqe *s = next_sqe(); s->opcode = IORING_OP_WRITE; s->fd = fds[k];
                    s->addr = (uintptr_t)content; s->len = (unsigned)sizes[b + k]; s->off = 0; s->user_data = k; }
            }
            if (pending) submit_and_wait(res);
            for (size_t k = 0; k < m; k++) if (sizes[b + k] > 0 && res[k] != sizes[b + k]) { fprintf(stderr, "write %ld\n", res[k]); return 1; }
            for (size_t k = 0; k < m; k++) {
                int dfd = dirfd[(b + k) / FILES_PER_DIR];
                futimens(fds[k], times);
                snprintf(name, sizeof name, "f%zu", b + k);
                if (linkat(fds[k], "", dfd, name, AT_EMPTY_PATH) != 0) { perror("linkat"); return 1; }
                close(fds[k]);
            }
        }
    } else if (!uring) {
        for (size_t i = 0; i < n; i++) {
            int dfd = dirfd[i / FILES_PER_DIR];
            int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
            for (long off = 0; off < sizes[i];) { ssize_t w = write(fd, content + off, sizes[i] - off); if (w <= 0) { perror("write"); return 1; } off += w; }
            futimens(fd, times);
            snprintf(name, sizeof name, "f%zu", i);
            if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) != 0) { perror("linkat"); return 1; }
            close(fd);
        }
    } else {
        ring_init(4 * BATCH); long res[2 * BATCH]; char names[BATCH][64];
        for (size_t b = 0; b < n; b += BATCH) {
            size_t m = n - b < BATCH ? n - b : BATCH;
            for (size_t k = 0; k < m; k++) { struct io_uring_sqe *s = next_sqe(); s->opcode = IORING_OP_OPENAT; s->fd = dirfd[(b + k) / FILES_PER_DIR];
                s->addr = (uintptr_t)"."; s->open_flags = O_TMPFILE | O_WRONLY | O_CLOEXEC; s->len = 0644; s->user_data = k; }
            submit_and_wait(res);
            int fds[BATCH]; for (size_t k = 0; k < m; k++) { fds[k] = (int)res[k]; if (fds[k] < 0) { fprintf(stderr, "openat %ld\n", res[k]); return 1; } }
            for (size_t k = 0; k < m; k++) if (sizes[b + k] > 0) { struct io_uring_sqe *s = next_sqe(); s->opcode = IORING_OP_WRITE; s->fd = fds[k];
                s->addr = (uintptr_t)content; s->len = (unsigned)sizes[b + k]; s->off = 0; s->user_data = k; }
            if (pending) submit_and_wait(res);
            for (size_t k = 0; k < m; k++) if (sizes[b + k] > 0 && res[k] != sizes[b + k]) { fprintf(stderr, "write %ld\n", res[k]); return 1; }
            for (size_t k = 0; k < m; k++) futimens(fds[k], times);
            for (size_t k = 0; k < m; k++) { snprintf(names[k], 64, "f%zu", b + k);
                struct io_uring_sqe *s = next_sqe(); s->opcode = IORING_OP_LINKAT; s->fd = fds[k]; s->addr = (uintptr_t)"";
                s->len = dirfd[(b + k) / FILES_PER_DIR]; s->addr2 = (uintptr_t)names[k]; s->hardlink_flags = AT_EMPTY_PATH; s->flags = IOSQE_IO_LINK; s->user_data = 2 * k;
                s = next_sqe(); s->opcode = IORING_OP_CLOSE; s->fd = fds[k]; s->user_data = 2 * k + 1; }
            submit_and_wait(res);
            for (size_t k = 0; k < m; k++) if (res[2 * k] != 0) { fprintf(stderr, "linkat %ld\n", res[2 * k]); return 1; }
        }
    }
    printf("%s: %zu files in %.3f s\n", argv[1], n, now() - start);
    return 0;
}
