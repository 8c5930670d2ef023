/*
 * tcp_levers.c - `make bench-tcp-levers`: two levers issue 5 lists for
 * large messages over TCP, measured between two bare processes on
 * loopback before anything of them went into weft
 * (bench/results/2026-11-26-pacing-outlived-bbr.md, "Levers measured
 * without the library").
 *
 *   zerocopy  the sender streams 64 MiB in `piece` sends, plain copies
 *             against MSG_ZEROCOPY (completions reaped from the error
 *             queue); prints the time, the sender's CPU time, and whether
 *             the kernel reported that it copied anyway
 *   fused     the receiver reduces a 64 MiB float32 stream into a vector:
 *             256 KiB chunks received into 16 cycling slots and then
 *             reduced, as weft's ring does, against `piece`-sized reads
 *             into one small buffer reduced at once (the reduction fused
 *             with the receive)
 *
 * Each line is the best of `rounds` passes after one untimed pass.
 *
 * usage: tcp-levers [rounds, default 5] [piece KiB, default 64]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define STREAM_BYTES ((size_t)64 << 20)
#define CHUNK ((size_t)256 << 10) /* weft's default WEFT_CHUNK_SIZE */
#define SLOTS 16                  /* the ring allreduce's scratch slots */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* A connected pair over 127.0.0.1, CUBIC from before the connection as
 * weft's streams on one machine (docs/design.md). */
static void socket_pair(int *a, int *b)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(addr);
    if (ls < 0)
        die("socket");
    setsockopt(ls, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
    if (bind(ls, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&addr, &alen) != 0)
        die("listen");
    *b = socket(AF_INET, SOCK_STREAM, 0);
    if (*b < 0)
        die("socket");
    setsockopt(*b, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
    if (connect(*b, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        die("connect");
    *a = accept(ls, NULL, NULL);
    if (*a < 0)
        die("accept");
    close(ls);
}

static void send_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("send");
        buf += n;
        len -= (size_t)n;
    }
}

static void recv_all(int fd, char *buf, size_t len)
{
    while (len) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("recv");
        buf += n;
        len -= (size_t)n;
    }
}

/* ---- zerocopy ----------------------------------------------------------- */

typedef struct {
    unsigned long done;  /* zerocopy sends the kernel has released */
    int copied;          /* it reported copying at least one */
} zc_state_t;

/* Reads zerocopy completions; with `wait`, until at least one came. */
static void zc_reap(int fd, zc_state_t *z, int wait)
{
    for (;;) {
        char control[256];
        struct msghdr m = {.msg_control = control,
                           .msg_controllen = sizeof(control)};
        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            if (errno != EAGAIN && errno != EINTR)
                die("recvmsg(MSG_ERRQUEUE)");
            if (!wait)
                return;
            struct pollfd p = {.fd = fd, .events = 0};
            poll(&p, 1, 10); /* POLLERR is always reported */
            continue;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            struct sock_extended_err e;
            memcpy(&e, CMSG_DATA(c), sizeof(e));
            if (e.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            z->done = e.ee_data + 1; /* the range ends at ee_data */
            if (e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                z->copied = 1;
        }
        wait = 0;
    }
}

/* One pass of the stream; returns its time, adds the sender's CPU time. */
static double zc_pass(int fd, const char *buf, size_t piece, int zerocopy,
                      zc_state_t *z, unsigned long *sends, double *cpu)
{
    double t0 = now_s(), c0 = cpu_s();
    for (size_t off = 0; off < STREAM_BYTES;) {
        size_t len = STREAM_BYTES - off < piece ? STREAM_BYTES - off : piece;
        ssize_t n = send(fd, buf + off, len, zerocopy ? MSG_ZEROCOPY : 0);
        if (n < 0 && errno == ENOBUFS) { /* too many pages pinned */
            zc_reap(fd, z, 1);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("send");
        off += (size_t)n;
        if (zerocopy) {
            (*sends)++;
            zc_reap(fd, z, 0);
        }
    }
    while (zerocopy && z->done < *sends) /* the buffer is ours again */
        zc_reap(fd, z, 1);
    *cpu += cpu_s() - c0;
    return now_s() - t0;
}

static void zerocopy_run(int rounds, size_t piece)
{
    for (int zerocopy = 0; zerocopy < 2; zerocopy++) {
        int a, b, one = 1;
        socket_pair(&a, &b);
        if (zerocopy &&
            setsockopt(a, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
            printf("zerocopy  MSG_ZEROCOPY: not available (%s)\n",
                   strerror(errno));
            close(a);
            close(b);
            continue;
        }
        pid_t child = fork();
        if (child < 0)
            die("fork");
        if (child == 0) {
            char *in = malloc(STREAM_BYTES);
            if (!in)
                die("malloc");
            close(a);
            for (int r = 0; r <= rounds; r++)
                recv_all(b, in, STREAM_BYTES);
            _exit(0);
        }
        close(b);
        char *out = malloc(STREAM_BYTES);
        if (!out)
            die("malloc");
        memset(out, 1, STREAM_BYTES);
        zc_state_t z = {0};
        unsigned long sends = 0;
        double best = 1e30, cpu = 0, cpu_best = 0;
        for (int r = 0; r <= rounds; r++) {
            double before = cpu;
            double t = zc_pass(a, out, piece, zerocopy, &z, &sends, &cpu);
            if (r > 0 && t < best) {
                best = t;
                cpu_best = cpu - before;
            }
        }
        int status;
        waitpid(child, &status, 0);
        printf("zerocopy  %-12s %4zu KiB sends: %6.2f ms per 64 MiB "
               "(%.2f GB/s), sender CPU %6.2f ms%s\n",
               zerocopy ? "MSG_ZEROCOPY" : "copy", piece >> 10, best * 1e3,
               (double)STREAM_BYTES / best / 1e9, cpu_best * 1e3,
               z.copied ? " (the kernel reports it copied)" : "");
        free(out);
        close(a);
    }
}

/* ---- fused -------------------------------------------------------------- */

static void reduce_sum(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

/* One pass: receive the stream and reduce it into `out`; `piece` 0 means
 * chunks into slots.  Returns its time and adds the receiver's CPU time. */
static double fused_pass(int fd, float *out, const float *mine, char *slots,
                         size_t piece, double *cpu)
{
    double t0 = now_s(), c0 = cpu_s();
    for (size_t off = 0, c = 0; off < STREAM_BYTES; off += CHUNK, c++) {
        size_t at = off / sizeof(float);
        if (!piece) {
            char *slot = slots + (c % SLOTS) * CHUNK;
            recv_all(fd, slot, CHUNK);
            reduce_sum(out + at, mine + at, (const float *)slot,
                       CHUNK / sizeof(float));
            continue;
        }
        for (size_t p = 0; p < CHUNK; p += piece) {
            recv_all(fd, slots, piece);
            reduce_sum(out + at + p / sizeof(float),
                       mine + at + p / sizeof(float), (const float *)slots,
                       piece / sizeof(float));
        }
    }
    *cpu += cpu_s() - c0;
    return now_s() - t0;
}

static void fused_run(int rounds, size_t piece)
{
    for (int fused = 0; fused < 2; fused++) {
        int a, b;
        socket_pair(&a, &b);
        pid_t child = fork();
        if (child < 0)
            die("fork");
        if (child == 0) {
            char *buf = malloc(STREAM_BYTES);
            if (!buf)
                die("malloc");
            memset(buf, 0, STREAM_BYTES);
            close(b);
            for (int r = 0; r <= rounds; r++)
                send_all(a, buf, STREAM_BYTES);
            _exit(0);
        }
        close(a);
        float *out = malloc(STREAM_BYTES), *mine = malloc(STREAM_BYTES);
        char *slots = malloc(SLOTS * CHUNK);
        if (!out || !mine || !slots)
            die("malloc");
        memset(out, 0, STREAM_BYTES);
        memset(mine, 0, STREAM_BYTES);
        memset(slots, 0, SLOTS * CHUNK);
        double best = 1e30, cpu = 0, cpu_best = 0;
        for (int r = 0; r <= rounds; r++) {
            double before = cpu;
            double t = fused_pass(b, out, mine, slots, fused ? piece : 0, &cpu);
            if (r > 0 && t < best) {
                best = t;
                cpu_best = cpu - before;
            }
        }
        int status;
        waitpid(child, &status, 0);
        if (fused)
            printf("fused     %4zu KiB reads reduced at once:   ", piece >> 10);
        else
            printf("fused     256 KiB chunks into 16 slots:   ");
        printf("%6.2f ms per 64 MiB, receiver CPU %6.2f ms\n", best * 1e3,
               cpu_best * 1e3);
        free(out);
        free(mine);
        free(slots);
        close(b);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    long piece_kib = argc > 2 ? atol(argv[2]) : 64;
    if (rounds <= 0 || piece_kib <= 0 || piece_kib > 256 ||
        ((size_t)piece_kib << 10) % sizeof(float) != 0 ||
        CHUNK % ((size_t)piece_kib << 10) != 0) {
        fprintf(stderr, "usage: tcp-levers [rounds] [piece KiB dividing "
                        "256]\n");
        return 2;
    }
    size_t piece = (size_t)piece_kib << 10;
    printf("# loopback TCP, 64 MiB streams, best of %d passes\n", rounds);
    zerocopy_run(rounds, piece);
    zerocopy_run(rounds, CHUNK * 4);
    fused_run(rounds, piece);
    return 0;
}
