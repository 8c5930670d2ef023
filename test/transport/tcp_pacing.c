/*
 * tcp_pacing.c - streams between ranks on one machine are not paced
 * (transport/tcp/tcp_pacing.c): a BBR socket on loopback moves to CUBIC
 * or Reno, and a real stream of the transport does so where BBR is the
 * system's default.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp.h"
#include "tgroup.h"

static void congestion(int fd, char *cc, size_t len)
{
    socklen_t l = (socklen_t)len;
    memset(cc, 0, len);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &l), 0);
}

static bool unpaced(const char *cc)
{
    return !strcmp(cc, "cubic") || !strcmp(cc, "reno");
}

/* A connected pair 127.0.0.2 -> 127.0.0.1; fds in fd[0] (dialer) and
 * fd[1] (accepted). */
static void loopback_pair(int fd[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_TRUE(lfd >= 0);
    ASSERT_EQ(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(lfd, 1), 0);
    ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7f000002);
    ASSERT_EQ(bind(fd[0], (struct sockaddr *)&src, sizeof(src)), 0);
    ASSERT_EQ(connect(fd[0], (struct sockaddr *)&a, sizeof(a)), 0);
    fd[1] = accept(lfd, NULL, NULL);
    ASSERT_TRUE(fd[1] >= 0);
    close(lfd);
}

WF_TEST(transport_tcp_unpace_loopback_pair, 10)
{
    int fd[2];
    char cc[16];

    loopback_pair(fd);
    for (int i = 0; i < 2; i++) {
        if (setsockopt(fd[i], IPPROTO_TCP, TCP_CONGESTION, "bbr", 3) != 0) {
            int err = errno;
            close(fd[0]);
            close(fd[1]);
            WF_SKIP("cannot select BBR here: %s", strerror(err));
        }
        const char *now = wf_tcp_unpace_same_host(fd[i]);
        ASSERT_TRUE(now != NULL);
        congestion(fd[i], cc, sizeof(cc));
        ASSERT_TRUE(!strcmp(cc, now) && unpaced(cc));
        /* Not BBR any more: nothing to change. */
        ASSERT_TRUE(wf_tcp_unpace_same_host(fd[i]) == NULL);
    }
    close(fd[0]);
    close(fd[1]);
}

/* Where BBR is the default, every stream of a two-rank loopback pair runs
 * an unpaced congestion control once connected. */
WF_TEST(transport_tcp_streams_not_paced, 30)
{
    char def[32] = "";
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    tg_group_t g;
    char cc[16];

    if (f) {
        if (!fgets(def, sizeof(def), f))
            def[0] = '\0';
        fclose(f);
    }
    if (strncmp(def, "bbr", 3) != 0)
        WF_SKIP("BBR is not this host's default congestion control");
    tg_tcp_streams = 2;
    tg_open_ex(&g, &wf_tcp_transport, 2, "lo", 10000);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 1 << 20);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) {
            congestion(g.ctx[r]->peers[1 - r].streams[k].fd, cc, sizeof(cc));
            if (!unpaced(cc))
                printf("rank %d stream %d: %s\n", r, k, cc);
            ASSERT_TRUE(unpaced(cc));
        }
    tg_close(&g);
    tg_tcp_streams = 1;
}
