/*
 * tcp_floor.c - `make bench-tcp-floor`: what an exchange of small frames
 * over loopback TCP costs with no library at all, the floor under any
 * 8-byte allreduce on 2 ranks.  Two processes send each other one frame
 * per round (both first send, then receive, as a 2-rank allreduce does)
 * and the parent prints the time per round for four ways of waiting:
 *
 *   recv      a non-blocking recv() in a loop until the frame is in
 *   epoll     epoll_wait(timeout 0) in a loop, then one recv()
 *   epoll+2   epoll_wait, then the header and the payload in two recv()s
 *             (weft's TCP transport before its read-ahead)
 *   blocking  a blocking recv(): the receiver sleeps and is woken
 *
 * The socket is in an epoll set in every mode, as weft's are.
 * Its results: bench/results/2026-11-26-small-messages-first-pass.md.
 *
 * usage: tcp-floor [rounds, default 50000] [frame bytes, default 48]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MODE_RECV, MODE_EPOLL, MODE_EPOLL_TWO, MODE_BLOCKING, MODES };
static const char *const mode_names[MODES] = {"recv", "epoll", "epoll+2",
                                              "blocking"};
#define HEADER 40 /* weft's frame header */
#define WARMUP 1000

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* Reads exactly len bytes; the socket is non-blocking unless blocking. */
static void recv_all(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, buf + got, len - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            die("recv");
    }
}

static void wait_readable(int ep)
{
    struct epoll_event ev;
    while (epoll_wait(ep, &ev, 1, 0) == 0)
        ;
}

/* A connected pair over 127.0.0.1: *a in this process, *b for the child. */
static void socket_pair(int *a, int *b)
{
    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(addr);
    if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&addr, &alen) != 0)
        die("listen");
    *b = socket(AF_INET, SOCK_STREAM, 0);
    if (*b < 0 || connect(*b, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        die("connect");
    *a = accept(ls, NULL, NULL);
    if (*a < 0)
        die("accept");
    close(ls);
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Rounds of send-then-receive on fd; returns microseconds per round. */
static double exchange(int fd, int mode, int rounds, size_t frame)
{
    char out[65536] = {0}, in[65536];
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll");
    if (mode != MODE_BLOCKING)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    double t0 = 0;
    for (int i = 0; i < rounds + WARMUP; i++) {
        if (i == WARMUP)
            t0 = now_us();
        if (send(fd, out, frame, 0) != (ssize_t)frame)
            die("send");
        if (mode == MODE_EPOLL || mode == MODE_EPOLL_TWO)
            wait_readable(ep);
        if (mode == MODE_EPOLL_TWO && frame > HEADER) {
            recv_all(fd, in, HEADER);
            recv_all(fd, in, frame - HEADER);
        } else {
            recv_all(fd, in, frame);
        }
    }
    double us = (now_us() - t0) / rounds;
    close(ep);
    return us;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 50000;
    size_t frame = argc > 2 ? (size_t)atol(argv[2]) : HEADER + 8;
    if (rounds <= 0 || frame == 0 || frame > 65536) {
        fprintf(stderr, "usage: tcp-floor [rounds] [frame bytes <= 65536]\n");
        return 2;
    }
    printf("# %d rounds of a %zu-byte frame each way, loopback TCP\n",
           rounds, frame);
    printf("%-9s %12s\n", "# wait", "us/round");
    for (int mode = 0; mode < MODES; mode++) {
        int a, b;
        socket_pair(&a, &b);
        pid_t child = fork();
        if (child < 0)
            die("fork");
        if (child == 0) {
            close(a);
            exchange(b, mode, rounds, frame);
            _exit(0);
        }
        close(b);
        double us = exchange(a, mode, rounds, frame);
        int status;
        waitpid(child, &status, 0);
        close(a);
        printf("%-9s %12.2f\n", mode_names[mode], us);
    }
    return 0;
}
