/*
 * tcp_pacing.c - no pacing between ranks on one machine.
 *
 * BBR, the default congestion control of many distributions, paces every
 * connection at its estimate of the path's bandwidth.  On loopback the
 * estimate sits near what one message achieved, so a message larger than
 * the congestion window (about 1 MiB at a 64 KiB loopback MSS) is
 * released segment by segment on a timer: a 1 MiB ping-pong took three
 * times as long as 512 KiB (docs/performance.md).  Pacing exists to keep
 * queues at a bottleneck short; between two sockets of one kernel there
 * is no bottleneck queue, so a stream on a loopback address, or whose two
 * ends share an address (a host talking to its own IP), leaves BBR for CUBIC, or
 * Reno where CUBIC is not built.  Connections between machines keep what
 * the administrator chose.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

const char *wf_tcp_unpace_same_host(int fd)
{
    static const char *const instead[] = {"cubic", "reno"};
    char cc[16] = "";
    socklen_t len = sizeof(cc);

    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len) != 0 ||
        strncmp(cc, "bbr", 3) != 0 || !same_host(fd))
        return NULL;
    for (size_t i = 0; i < WF_ARRAY_LEN(instead); i++)
        if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, instead[i],
                       (socklen_t)strlen(instead[i])) == 0)
            return instead[i];
    return NULL;
}
