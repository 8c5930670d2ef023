/*
 * tcp_sndbuf.c - WEFT_TCP_SNDBUF: every data connection's send buffer is
 * the configured size, at both ends and on every stream (Linux caps what
 * is asked for at net.core.wmem_max, 208 KiB on a stock kernel, and
 * reports twice that, its bookkeeping included); 0 leaves the kernel's
 * autotuning, which grows the buffer with the congestion window
 * (bench/results/2026-12-01-root-copy-and-bounded-send-buffers.md,
 * "Bounded send buffers").
 */
#include <stdio.h>
#include <sys/socket.h>

#include "tcp/tcp.h"
#include "tgroup.h"

static void set_sndbuf(wf_tconfig_t *cfg, int rank, void *arg)
{
    (void)rank;
    tg_knobs(cfg)->tcp_sndbuf = *(const size_t *)arg;
}

static int sndbuf_of(int fd)
{
    int v = 0;
    socklen_t len = sizeof(v);
    ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len), 0);
    return v;
}

/* The send buffers of both ranks' streams after 4 MiB went each way. */
static void pair_sndbufs(size_t asked, int streams, int *bufs)
{
    tg_group_t g;
    tg_tcp_streams = streams;
    tg_open_tcp_with(&g, 2, 10000, set_sndbuf, &asked);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 4 << 20);
    tg_xfer(&g, 1, 0, 2, 4 << 20);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < streams; k++)
            bufs[r * streams + k] =
                sndbuf_of(g.ctx[r]->peers[1 - r].streams[k].fd);
    tg_close(&g);
    tg_tcp_streams = 1;
}

/* What the kernel makes of a request for `asked` bytes. */
static int granted(int asked)
{
    int most = 0;
    FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
    ASSERT_TRUE(f != NULL && fscanf(f, "%d", &most) == 1);
    fclose(f);
    return 2 * (asked < most ? asked : most);
}

WF_TEST(transport_tcp_sndbuf_bounds_every_stream, 30)
{
    int bufs[2 * 3];
    pair_sndbufs(256 << 10, 3, bufs);
    for (int i = 0; i < 2 * 3; i++)
        ASSERT_EQ(bufs[i], granted(256 << 10));
    pair_sndbufs(96 << 10, 1, bufs);
    ASSERT_EQ(bufs[0], granted(96 << 10));
    ASSERT_EQ(bufs[1], granted(96 << 10));
}

/* 0: nothing set, so autotuning moves the buffer off the kernel's
 * starting size (net.ipv4.tcp_wmem's middle value) as 4 MiB go out. */
WF_TEST(transport_tcp_sndbuf_zero_autotunes, 30)
{
    int bufs[2], start = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (!f || fscanf(f, "%*d %d", &start) != 1)
        WF_SKIP("cannot read net.ipv4.tcp_wmem");
    fclose(f);
    pair_sndbufs(0, 1, bufs);
    ASSERT_TRUE(bufs[0] > start);
    ASSERT_TRUE(bufs[0] != granted(256 << 10));
}
