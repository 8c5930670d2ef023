/*
 * tcp_pacing.c - no pacing between ranks on one machine.
 *
 * BBR, the default congestion control of many distributions, paces every
 * connection at its estimate of the path's bandwidth.  On loopback the
 * estimate sits near what one message achieved, so a message larger than
 * the congestion window (about 1 MiB at a 64 KiB loopback MSS) is
 * released segment by segment on a timer, and a message just over the
 * window takes far longer than one just under it
 * (bench/results/2026-11-24-1mib-64mib-and-bbr.md).  Pacing exists to keep
 * queues at a bottleneck short; between two sockets of one kernel there
 * is no bottleneck queue, so streams between ranks of one machine run
 * CUBIC, or Reno where CUBIC is not built.  Connections between machines
 * keep what the administrator chose.
 *
 * The switch must come before the connection does.  BBR turns the
 * kernel's own pacing on for its socket when the connection is
 * established, and leaving BBR afterwards does not turn it off: CUBIC is
 * then paced at its own rate (twice, later 1.2 times, cwnd per smoothed
 * RTT), and with more ranks than cores a rank that waits for a CPU
 * inflates the RTT, and the pacing rate falls with it (docs/design.md,
 * "No pacing between ranks on one machine";
 * bench/results/2026-11-26-pacing-outlived-bbr.md).
 * So every listening and dialing socket leaves BBR before listen() or
 * connect() (wf_tcp_unpace_early; an accepted socket inherits its
 * listener's choice), and once a stream is up (wf_tcp_cc_after_connect)
 * one between two machines goes back to the system's default, and one on
 * this machine that still runs BBR (the early switch was refused) leaves
 * it late, as the best that is left.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp.h"

static bool is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >>
                24) == 127;
    return a->ss_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* Whether connected socket `fd` joins two sockets of this kernel: a
 * loopback address, or the same address at both ends. */
static bool same_host(int fd)
{
    struct sockaddr_storage a, b;
    socklen_t la = sizeof(a), lb = sizeof(b);

    if (getsockname(fd, (struct sockaddr *)&a, &la) != 0 ||
        getpeername(fd, (struct sockaddr *)&b, &lb) != 0 ||
        a.ss_family != b.ss_family)
        return false;
    if (is_loopback(&a) || is_loopback(&b))
        return true;
    if (a.ss_family == AF_INET)
        return ((struct sockaddr_in *)&a)->sin_addr.s_addr ==
               ((struct sockaddr_in *)&b)->sin_addr.s_addr;
    if (a.ss_family == AF_INET6)
        return memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
                      &((struct sockaddr_in6 *)&b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return false;
}

static bool paces(const char *cc)
{
    return strncmp(cc, "bbr", 3) == 0;
}

/* The socket's congestion control, NUL-terminated, into cc[len]. */
static bool congestion_of(int fd, char *cc, size_t len)
{
    socklen_t l = (socklen_t)len - 1;
    memset(cc, 0, len);
    return getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &l) == 0;
}

static bool select_cc(int fd, const char *name)
{
    return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name,
                      (socklen_t)strlen(name)) == 0;
}

/* Selects a congestion control that does not pace; returns its name, or
 * NULL when none could be selected. */
static const char *set_unpaced(int fd)
{
    static const char *const instead[] = {"cubic", "reno"};
    for (size_t i = 0; i < WF_ARRAY_LEN(instead); i++)
        if (select_cc(fd, instead[i]))
            return instead[i];
    return NULL;
}

const char *wf_tcp_unpace_early(int fd, char *was, size_t was_len)
{
    char cc[16];
    if (!congestion_of(fd, cc, sizeof(cc)))
        return NULL;
    if (was && was_len && !was[0])
        snprintf(was, was_len, "%s", cc);
    return paces(cc) ? set_unpaced(fd) : NULL;
}

wf_tcp_cc_move_t wf_tcp_cc_after_connect(const char *now,
                                         const char *system_cc,
                                         bool same_host_pair)
{
    if (same_host_pair)
        return paces(now) ? WF_TCP_CC_UNPACE : WF_TCP_CC_KEEP;
    /* Between machines: back to the default this side left before
     * connecting, and only then. */
    return system_cc && paces(system_cc) && strcmp(now, system_cc) != 0
               ? WF_TCP_CC_RESTORE
               : WF_TCP_CC_KEEP;
}

const char *wf_tcp_pacing_settle(int fd, const char *system_cc, bool *late)
{
    char cc[16];
    *late = false;
    if (!congestion_of(fd, cc, sizeof(cc)))
        return NULL;
    switch (wf_tcp_cc_after_connect(cc, system_cc, same_host(fd))) {
    case WF_TCP_CC_UNPACE:
        *late = true;
        return set_unpaced(fd);
    case WF_TCP_CC_RESTORE:
        return select_cc(fd, system_cc) ? system_cc : NULL;
    case WF_TCP_CC_KEEP:
        break;
    }
    return NULL;
}
