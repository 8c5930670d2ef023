/*
 * tcp_init.c - TCP context creation and release: the listening sockets
 * (on the addresses tcp_addr.c chose), the address blob and query().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "config.h"
#include "tcp.h"
#include "topo/topo.h"

/* A dial over a topology-chosen address that has not connected after
 * this long (at most a quarter of the connect timeout) falls back. */
#define WF_TCP_PROBE_MS 2000
/* Striped messages are cut in pieces of at least this many bytes. */
#define WF_TCP_STRIPE_DEFAULT (64u << 10)

#define WF_TCP_SCRATCH_LEN (64 * 1024)

void wf_tcp_format_addr(const struct sockaddr *sa, char *out, size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, size, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, size, "(family %d)", sa->sa_family);
    }
}

static void set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* A listening socket for local address i on `port` (0: ephemeral), or -1
 * with errno set. */
static int listen_on(wf_tctx_t *ctx, int i, int port, int backlog)
{
    int one = 1;
    int fd = socket(ctx->local[i].ss_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Lets a restarted job reuse a port still in TIME_WAIT. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* Accepted streams inherit it (tcp_pacing.c). */
    wf_tcp_unpace_early(fd, ctx->cc_default, sizeof(ctx->cc_default));
    set_port(&ctx->local[i], port);
    if (bind(fd, (struct sockaddr *)&ctx->local[i], ctx->local_len[i]) != 0 ||
        listen(fd, backlog) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Listens on the first free port of the configured range, or on an
 * ephemeral port.  bind and listen are tried together: with SO_REUSEADDR
 * two processes may both bind a port before either listens, and then the
 * second listen() fails with EADDRINUSE - that port is taken too. */
static weft_status_t open_listen(wf_tctx_t *ctx, int i)
{
    int backlog = WF_MAX(128, ctx->cfg.size);
    int lo = ctx->cfg.port_min, hi = ctx->cfg.port_max;
    int fd = -1, err = 0;
    char where[80];

    for (int port = lo; port <= hi && fd < 0; port++) {
        fd = listen_on(ctx, i, port, backlog);
        err = fd < 0 ? errno : 0;
        if (fd < 0 && err != EADDRINUSE && err != EACCES)
            break;
    }
    if (fd < 0) {
        set_port(&ctx->local[i], 0);
        wf_tcp_format_addr((struct sockaddr *)&ctx->local[i], where,
                           sizeof(where));
        if (lo == hi)
            WEFT_WARN(NET, "tcp: cannot listen on %s: %s", where,
                      wf_errno_str(err));
        else
            WEFT_WARN(NET, "tcp: cannot listen on %s with a port in %d-%d: "
                      "%s", where, lo, hi, wf_errno_str(err));
        return WEFT_ERR_SYSTEM;
    }
    if (getsockname(fd, (struct sockaddr *)&ctx->local[i],
                    &ctx->local_len[i])) {
        WEFT_WARN(NET, "tcp: getsockname failed: %s", wf_errno_str(errno));
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    ctx->listen[i].fd = fd;
    if (i == 0)
        wf_tcp_format_addr((struct sockaddr *)&ctx->local[0], ctx->local_str,
                           sizeof(ctx->local_str));
    return WEFT_OK;
}

static void entry_encode(uint8_t *e, const struct sockaddr_storage *ss)
{
    uint16_t port;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        e[0] = 4;
        port = in->sin_port;
        memcpy(e + 4, &in->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        e[0] = 6;
        port = in6->sin6_port;
        memcpy(e + 4, &in6->sin6_addr, 16);
    }
    memcpy(e + 2, &port, 2); /* already network order */
}

static void blob_encode(wf_tctx_t *ctx)
{
    uint8_t *b = ctx->blob;
    int n = ctx->nlocal + (ctx->fallback >= 0);

    ctx->blob_len = WF_TCP_ADDR_LEN(n);
    memset(b, 0, ctx->blob_len);
    b[0] = (uint8_t)WF_TCP_VERSION;
    b[1] = (uint8_t)n;
    for (int i = 0; i < ctx->nlocal; i++)
        entry_encode(b + WF_TCP_ADDR_LEN(i), &ctx->local[i]);
    if (ctx->fallback >= 0) {
        uint8_t *e = b + WF_TCP_ADDR_LEN(ctx->nlocal);
        entry_encode(e, &ctx->local[ctx->fallback]);
        e[1] = WF_TCP_ADDR_FALLBACK;
    }
}

static bool entry_decode(const uint8_t *e, struct sockaddr_storage *ss,
                         socklen_t *ss_len)
{
    uint16_t port;

    memcpy(&port, e + 2, 2);
    memset(ss, 0, sizeof(*ss));
    if (e[0] == 4) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = port;
        memcpy(&in->sin_addr, e + 4, 4);
        *ss_len = sizeof(*in);
    } else if (e[0] == 6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = port;
        memcpy(&in6->sin6_addr, e + 4, 16);
        *ss_len = sizeof(*in6);
    } else {
        return false;
    }
    return port != 0;
}

bool wf_tcp_blob_decode(const void *blob, size_t len,
                        struct sockaddr_storage *ss, socklen_t *ss_len,
                        int *count, bool *fallback)
{
    const uint8_t *b = blob;

    if (!blob || len < WF_TCP_ADDR_LEN(1) || b[0] != WF_TCP_VERSION ||
        b[1] < 1 || b[1] > WF_TCP_IF_MAX + 1 || len != WF_TCP_ADDR_LEN(b[1]))
        return false;
    /* Only the last entry may be the fallback, and not the only one. */
    *fallback = b[1] > 1 &&
                (b[WF_TCP_ADDR_LEN(b[1] - 1) + 1] & WF_TCP_ADDR_FALLBACK);
    if (b[1] - *fallback > WF_TCP_IF_MAX)
        return false;
    for (int i = 0; i < b[1]; i++)
        if (!entry_decode(b + WF_TCP_ADDR_LEN(i), &ss[i], &ss_len[i]))
            return false;
    *count = b[1] - *fallback;
    return true;
}

/* The TCP knobs (tcp_params.def) from the snapshot; 0 without one. */
typedef struct tcp_knobs {
    int64_t streams;
    uint64_t stripe_min, sndbuf, cma_min;
} tcp_knobs_t;

static tcp_knobs_t knobs_read(const wf_config_t *k)
{
    if (!k)
        return (tcp_knobs_t){0};
    return (tcp_knobs_t){.streams = k->tcp_streams,
                         .stripe_min = k->tcp_stripe_min,
                         .sndbuf = k->tcp_sndbuf,
                         .cma_min = k->tcp_cma_min};
}

static weft_status_t check_config(const wf_tconfig_t *cfg,
                                  const tcp_knobs_t *k)
{
    if (k->streams < 0 || k->streams > WF_TCP_STREAMS_MAX) {
        WEFT_WARN(NET, "tcp: WEFT_TCP_STREAMS=%lld is not in 1-%d",
                  (long long)k->streams, WF_TCP_STREAMS_MAX);
        return WEFT_ERR_INVALID_ARG;
    }
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size) {
        WEFT_WARN(NET, "tcp: invalid rank %d for size %d", cfg->rank,
                  cfg->size);
        return WEFT_ERR_INVALID_ARG;
    }
    /* 0-0 means any port; otherwise a real range (port 0 inside a range
     * would silently mean "any"). */
    if (!(cfg->port_min == 0 && cfg->port_max == 0) &&
        (cfg->port_min < 1 || cfg->port_max < cfg->port_min ||
         cfg->port_max > 65535)) {
        WEFT_WARN(NET, "tcp: invalid port range %d-%d", cfg->port_min,
                  cfg->port_max);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

static weft_status_t epoll_add(wf_tctx_t *ctx, int fd, wf_tcp_ev_t *ev)
{
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = ev};

    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        WEFT_WARN(NET, "tcp: epoll_ctl failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

/* Creates the fds and the peer table of a zeroed context. */
static weft_status_t open_context(wf_tctx_t *ctx)
{
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    ctx->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ctx->epfd < 0 || ctx->timer_fd < 0) {
        WEFT_WARN(NET, "tcp: cannot create epoll/timer fd: %s",
                  wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    size_t n = (size_t)ctx->cfg.size;
    /* The interfaces first: without WEFT_TCP_STREAMS they set how many
     * streams a pair may use. */
    WEFT_CHECK(wf_tcp_choose_addr(ctx));
    if (!ctx->streams_fixed)
        ctx->max_streams = WF_MAX(1, ctx->nlocal);
    ctx->peers = calloc(n, sizeof(*ctx->peers));
    wf_tcp_stream_t *streams = calloc(n * (size_t)ctx->max_streams,
                                      sizeof(*streams));
    ctx->scratch_len = WF_TCP_SCRATCH_LEN;
    /* The context's only long-lived buffer: on the rank's NUMA node, like
     * the engine's scratch (per-message buffers stay with malloc). */
    ctx->scratch = wf_topo_mem_alloc(ctx->scratch_len, ctx->cfg.topo_numa);
    if (!ctx->peers || !streams || !ctx->scratch) {
        free(streams);
        free(ctx->peers);
        ctx->peers = NULL;
        WEFT_WARN(NET, "tcp: out of memory for %d peers", ctx->cfg.size);
        return WEFT_ERR_NO_MEMORY;
    }
    WF_MATCH_PEERS(&ctx->m, ctx->peers, m);
    for (int i = 0; i < ctx->cfg.size; i++) {
        wf_tcp_peer_t *p = &ctx->peers[i];
        p->rank = i;
        p->m.desc = p->desc;
        p->streams = streams + (size_t)i * (size_t)ctx->max_streams;
        p->nstreams = ctx->streams_fixed ? ctx->max_streams : 0;
        snprintf(p->desc, sizeof(p->desc), "peer %d", i);
        for (int k = 0; k < ctx->max_streams; k++) {
            wf_tcp_stream_t *s = &p->streams[k];
            s->ev.kind = WF_TCP_EV_STREAM;
            s->peer = p;
            s->idx = k;
            s->fd = -1;
        }
    }
    for (int i = 0; i < ctx->nlisten; i++) {
        WEFT_CHECK(open_listen(ctx, i));
        ctx->listen[i].ev.kind = WF_TCP_EV_LISTEN;
        WEFT_CHECK(epoll_add(ctx, ctx->listen[i].fd, &ctx->listen[i].ev));
    }
    blob_encode(ctx);
    ctx->timer_ev.kind = WF_TCP_EV_TIMER;
    WEFT_CHECK(epoll_add(ctx, ctx->timer_fd, &ctx->timer_ev));
    return WEFT_OK;
}

weft_status_t wf_tcp_init(const wf_tconfig_t *cfg, wf_tctx_t **out)
{
    weft_status_t st;
    wf_tctx_t *ctx;

    if (!cfg || !out)
        return WEFT_ERR_INVALID_ARG;
    tcp_knobs_t k = knobs_read(cfg->knobs);
    WEFT_CHECK(check_config(cfg, &k));
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        WEFT_WARN(NET, "tcp: out of memory for a context");
        return WEFT_ERR_NO_MEMORY;
    }
    wf_match_init(&ctx->m, "tcp", cfg->rank, cfg->size,
                  sizeof(wf_tcp_umsg_t));
    ctx->m.release = wf_tcp_req_release;
    ctx->m.claim_remote = wf_tcp_cma_claim;
    ctx->cfg = *cfg;
    ctx->cfg.knobs = NULL; /* valid during init only */
    ctx->cfg.ifname[sizeof(ctx->cfg.ifname) - 1] = '\0';
    ctx->cfg.bind_hint[sizeof(ctx->cfg.bind_hint) - 1] = '\0';
    ctx->epfd = ctx->timer_fd = -1;
    for (int i = 0; i <= WF_TCP_IF_MAX; i++)
        ctx->listen[i].fd = -1;
    ctx->fallback = -1;
    ctx->probe_ms = cfg->timeout_ms > 0
                        ? (int)WF_MIN(WF_TCP_PROBE_MS, cfg->timeout_ms / 4)
                        : WF_TCP_PROBE_MS;
    ctx->streams_fixed = k.streams > 0;
    ctx->max_streams = ctx->streams_fixed ? (int)k.streams : 1;
    ctx->stripe_min = k.stripe_min ? (size_t)k.stripe_min
                                   : WF_TCP_STRIPE_DEFAULT;
    ctx->cma_min = (size_t)k.cma_min;
    ctx->sndbuf = (size_t)k.sndbuf;
    WEFT_CHECK_GOTO(wf_tcp_cma_init(ctx), st, err_fini);
    WEFT_CHECK_GOTO(open_context(ctx), st, err_fini);
    /* Info, not debug: which interface carries the data is the first
     * thing to check on a multi-homed host. */
    WEFT_INFO(NET, "tcp: rank %d listening on %s (%s)", cfg->rank,
               ctx->local_str, ctx->ifname[0] ? ctx->ifname : "?");
    for (int i = 1; i < ctx->nlisten; i++) {
        char where[80];
        wf_tcp_format_addr((struct sockaddr *)&ctx->local[i], where,
                           sizeof(where));
        WEFT_INFO(NET, "tcp: rank %d also listening on %s%s", cfg->rank,
                  where, i == ctx->fallback ? " (fallback)" : "");
    }
    if (ctx->max_streams > 1)
        WEFT_INFO(NET, "tcp: %s%d streams per peer, messages of %zu bytes "
                  "or more striped", ctx->streams_fixed ? "" : "up to ",
                  ctx->max_streams, ctx->stripe_min);
    *out = ctx;
    return WEFT_OK;
err_fini:
    wf_tcp_fini(ctx);
    return st;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void wf_tcp_fini(wf_tctx_t *ctx)
{
    if (!ctx)
        return;
    while (ctx->pending)
        wf_tcp_pending_close(ctx, ctx->pending);
    if (ctx->peers)
        wf_tcp_stream_log(ctx);
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        for (int k = 0; k < ctx->max_streams; k++) {
            wf_tcp_stream_t *s = &ctx->peers[i].streams[k];
            /* The FIN tells the peer we left on purpose; close() never
             * waits because no linger is set. */
            if (s->fd >= 0 && s->state == WF_TCP_UP)
                shutdown(s->fd, SHUT_WR);
            close_fd(&s->fd);
            free(s->ahead);
        }
    }
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_tcp_send_free(&ctx->peers[i], ctx->max_streams);
        wf_tcp_recv_free(ctx, &ctx->peers[i]);
    }
    wf_match_fini(&ctx->m);
    for (int i = 0; i <= WF_TCP_IF_MAX; i++)
        close_fd(&ctx->listen[i].fd);
    close_fd(&ctx->timer_fd);
    close_fd(&ctx->epfd);
    if (ctx->peers)
        free(ctx->peers[0].streams);
    free(ctx->peers);
    wf_topo_mem_free(ctx->scratch, ctx->scratch_len);
    free(ctx);
}

static uint64_t link_speed(const char *ifname)
{
    char path[128];
    long long mbps = 0;
    FILE *f;

    if (!ifname[0] || strchr(ifname, '/'))
        return 0;
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%lld", &mbps) != 1 || mbps < 0)
        mbps = 0;
    fclose(f);
    return (uint64_t)mbps;
}

weft_status_t wf_tcp_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr)
{
    if (!ctx || !attr)
        return WEFT_ERR_INVALID_ARG;
    memset(attr, 0, sizeof(*attr));
    wf_strlcpy(attr->name, ctx->ifname[0] ? ctx->ifname : "tcp",
               sizeof(attr->name));
    wf_strlcpy(attr->address, ctx->local_str, sizeof(attr->address));
    attr->caps = WF_TCAP_HOST_MEM;
    attr->speed_mbps = link_speed(ctx->ifname);
    attr->single_copy_min = ctx->cma_min;
    return WEFT_OK;
}

weft_status_t wf_tcp_get_address(wf_tctx_t *ctx, void *addr, size_t *len)
{
    if (!ctx || !addr || !len)
        return WEFT_ERR_INVALID_ARG;
    if (*len < ctx->blob_len) {
        WEFT_WARN(NET, "tcp: address buffer of %zu bytes, need %zu", *len,
                  ctx->blob_len);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, ctx->blob, ctx->blob_len);
    *len = ctx->blob_len;
    return WEFT_OK;
}
