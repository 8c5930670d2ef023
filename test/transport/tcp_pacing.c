/*
 * tcp_pacing.c - streams between ranks on one machine are not paced
 * (transport/tcp/tcp_pacing.c): sockets leave BBR before they connect or
 * listen, since BBR turns the kernel's pacing on at connection time and
 * leaving it later does not turn that off; a stream between machines goes
 * back to the system's default once up.
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

/* Selects BBR on fd; false (errno set) where this kernel refuses it. */
static bool select_bbr(int fd)
{
    return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "bbr", 3) == 0;
}

/* A connected pair 127.0.0.2 -> 127.0.0.1; fds in fd[0] (dialer) and
 * fd[1] (accepted).  With `bbr`, both the listener and the dialer select
 * BBR first (the system's default where it is one), and with `early`
 * they then leave it as the transport does before listen and connect.
 * False (errno set) where BBR cannot be selected. */
static bool loopback_pair(int fd[2], bool bbr, bool early)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    char was[16] = "";

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_TRUE(lfd >= 0);
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd[0] >= 0);
    if (bbr && (!select_bbr(lfd) || !select_bbr(fd[0]))) {
        int err = errno;
        close(lfd);
        close(fd[0]);
        errno = err;
        return false;
    }
    if (early) {
        ASSERT_TRUE(wf_tcp_unpace_early(lfd, was, sizeof(was)) != NULL);
        ASSERT_TRUE(!strcmp(was, "bbr"));
        ASSERT_TRUE(wf_tcp_unpace_early(fd[0], NULL, 0) != NULL);
    }
    ASSERT_EQ(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(lfd, 1), 0);
    ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7f000002);
    ASSERT_EQ(bind(fd[0], (struct sockaddr *)&src, sizeof(src)), 0);
    ASSERT_EQ(connect(fd[0], (struct sockaddr *)&a, sizeof(a)), 0);
    fd[1] = accept(lfd, NULL, NULL);
    ASSERT_TRUE(fd[1] >= 0);
    close(lfd);
    return true;
}

/* Sockets that leave BBR before listen and connect come up unpaced at
 * both ends (the accepted one inherits its listener's choice), and
 * nothing is left to change once connected. */
WF_TEST(transport_tcp_unpaced_before_connecting, 10)
{
    int fd[2];
    char cc[16];
    bool late;

    if (!loopback_pair(fd, true, true))
        WF_SKIP("cannot select BBR here: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        congestion(fd[i], cc, sizeof(cc));
        ASSERT_TRUE(unpaced(cc));
        ASSERT_TRUE(wf_tcp_pacing_settle(fd[i], "bbr", &late) == NULL);
        ASSERT_TRUE(!late);
    }
    close(fd[0]);
    close(fd[1]);
}

/* A loopback pair that connected under BBR still leaves it once up (the
 * best that is left where the early switch was refused), and says it was
 * late. */
WF_TEST(transport_tcp_unpace_late_loopback_pair, 10)
{
    int fd[2];
    char cc[16];
    bool late;

    if (!loopback_pair(fd, true, false))
        WF_SKIP("cannot select BBR here: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        const char *now = wf_tcp_pacing_settle(fd[i], "bbr", &late);
        ASSERT_TRUE(now != NULL && late);
        congestion(fd[i], cc, sizeof(cc));
        ASSERT_TRUE(!strcmp(cc, now) && unpaced(cc));
        /* Not BBR any more: nothing to change. */
        ASSERT_TRUE(wf_tcp_pacing_settle(fd[i], "bbr", &late) == NULL);
    }
    close(fd[0]);
    close(fd[1]);
}

/* What a stream's congestion control becomes once connected, for every
 * case the loopback cannot show (streams between machines). */
WF_TEST(transport_tcp_cc_after_connect_cases, 5)
{
    /* One machine: never paced, whatever the default. */
    ASSERT_EQ(wf_tcp_cc_after_connect("bbr", "bbr", true), WF_TCP_CC_UNPACE);
    ASSERT_EQ(wf_tcp_cc_after_connect("bbr2", "cubic", true),
              WF_TCP_CC_UNPACE);
    ASSERT_EQ(wf_tcp_cc_after_connect("cubic", "bbr", true), WF_TCP_CC_KEEP);
    /* Between machines: the default this side left comes back... */
    ASSERT_EQ(wf_tcp_cc_after_connect("cubic", "bbr", false),
              WF_TCP_CC_RESTORE);
    ASSERT_EQ(wf_tcp_cc_after_connect("reno", "bbr", false),
              WF_TCP_CC_RESTORE);
    /* ...and nothing else changes. */
    ASSERT_EQ(wf_tcp_cc_after_connect("bbr", "bbr", false), WF_TCP_CC_KEEP);
    ASSERT_EQ(wf_tcp_cc_after_connect("cubic", "cubic", false),
              WF_TCP_CC_KEEP);
    ASSERT_EQ(wf_tcp_cc_after_connect("reno", "cubic", false),
              WF_TCP_CC_KEEP);
    ASSERT_EQ(wf_tcp_cc_after_connect("cubic", "", false), WF_TCP_CC_KEEP);
    ASSERT_EQ(wf_tcp_cc_after_connect("cubic", NULL, false), WF_TCP_CC_KEEP);
}

/* Where BBR is the default, every stream of a two-rank loopback pair runs
 * an unpaced congestion control, chosen before it connected: the
 * transport's listeners already run one, and no stream had to leave BBR
 * once up (each did before this was fixed, and stayed paced). */
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
    for (int r = 0; r < 2; r++) {
        ASSERT_TRUE(!strcmp(g.ctx[r]->cc_default, "bbr"));
        ASSERT_EQ(g.ctx[r]->cc_late, 0);
        for (int l = 0; l < g.ctx[r]->nlisten; l++) {
            congestion(g.ctx[r]->listen[l].fd, cc, sizeof(cc));
            ASSERT_TRUE(unpaced(cc));
        }
    }
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
