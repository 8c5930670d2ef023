/*
 * rdv_listen.c - the public weft_server_* functions: argument checks, the
 * listening socket, the server thread's start and stop.  The event loop
 * itself is in rdv_server.c, the jobs in rdv_jobs.c.
 *
 * Stopping writes to an eventfd the loop polls with the sockets, so
 * weft_server_stop returns promptly whatever the clients do; every
 * connection, job and descriptor is released after the thread has joined.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "rdv/bootstrap.h"
#include "rdv/rdv_server.h"

/* The frame limit is a u32 on the wire; keep well below it. */
#define MAX_FRAME_CAP (1u << 30)

static weft_status_t server_listen(struct weft_server *srv, const char *host,
                                   int port, const char *listen_text)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port_text[16];
    int err = 0, one = 1;

    snprintf(port_text, sizeof(port_text), "%d", port);
    int rc = getaddrinfo(*host && strcmp(host, "*") ? host : NULL, port_text,
                         &hints, &res);
    if (rc != 0) {
        WEFT_WARN(RDV, "rendezvous server: cannot resolve listen address "
                       "'%s': %s", listen_text, gai_strerror(rc));
        return WEFT_ERR_INVALID_ARG;
    }
    for (struct addrinfo *ai = res; ai && srv->lfd < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            listen(fd, SOMAXCONN) == 0) {
            srv->lfd = fd;
            break;
        }
        err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (srv->lfd < 0) {
        WEFT_WARN(RDV, "rendezvous server: cannot listen on %s: %s",
                  listen_text, wf_errno_str(err));
        return WEFT_ERR_SYSTEM;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(srv->lfd, (struct sockaddr *)&ss, &len);
    wf_rdv_format_addr((struct sockaddr *)&ss, wf_hostname(), srv->address,
                sizeof(srv->address));
    return WEFT_OK;
}

static weft_status_t server_setup(struct weft_server *srv, const char *host,
                                  int port, const char *listen_text)
{
    struct epoll_event ev = {.events = EPOLLIN};

    WEFT_CHECK(server_listen(srv, host, port, listen_text));
    srv->epfd = epoll_create1(EPOLL_CLOEXEC);
    srv->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv->epfd < 0 || srv->evfd < 0) {
        WEFT_WARN(RDV, "rendezvous server on %s: epoll/eventfd: %s",
                  srv->address, wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    ev.data.ptr = NULL;
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev) != 0)
        goto err_ctl;
    ev.data.ptr = srv;
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->evfd, &ev) != 0)
        goto err_ctl;
    srv->next_sweep = 0; /* the loop sweeps first and schedules the next */
    return WEFT_OK;
err_ctl:
    WEFT_WARN(RDV, "rendezvous server on %s: epoll_ctl: %s", srv->address,
              wf_errno_str(errno));
    return WEFT_ERR_SYSTEM;
}

/* Closes what server_setup opened and frees what the loop left. */
static void server_destroy(struct weft_server *srv)
{
    wf_rdv_server_teardown(srv);
    if (srv->lfd >= 0)
        close(srv->lfd);
    if (srv->epfd >= 0)
        close(srv->epfd);
    if (srv->evfd >= 0)
        close(srv->evfd);
    srv->magic = 0;
    memset(srv->token, 0, sizeof(srv->token));
    free(srv);
}

/* Limits and token from the configuration; `token` (not NULL) replaces
 * the configured one. */
static weft_status_t server_configure(struct weft_server *srv,
                                      const char *token)
{
    wf_config_t cfg;

    WEFT_CHECK(wf_config_load(&cfg, NULL));
    uint64_t max = WF_MAX(cfg.rdv_max_frame, (uint64_t)WF_RDV_MIN_FRAME);
    /* a SET of the largest value must fit */
    srv->max_frame = (size_t)WF_MIN(max, (uint64_t)MAX_FRAME_CAP);
    srv->max_conns = (size_t)WF_MAX(cfg.rdv_max_conns, (int64_t)1);
    srv->max_jobs = (size_t)WF_MAX(cfg.rdv_max_jobs, (int64_t)1);
    srv->max_job_bytes = (size_t)cfg.rdv_max_job_bytes;
    srv->stall_ms = (uint64_t)WF_MAX(cfg.rdv_stall_timeout, (int64_t)100);
    srv->keepalive_ms = (uint64_t)WF_MAX(cfg.rdv_keepalive, (int64_t)0);
    wf_strlcpy(srv->token, token ? token : cfg.token, sizeof(srv->token));
    memset(cfg.token, 0, sizeof(cfg.token));
    return WEFT_OK;
}

WEFT_API weft_status_t weft_server_start(const char *listen,
                                         weft_server_t *server)
{
    return wf_rdv_server_start(listen, NULL, server);
}

weft_status_t wf_rdv_server_start(const char *listen, const char *token,
                                  weft_server_t *server)
{
    char host[256];
    int port = -1;
    weft_status_t st;

    if (!server) {
        WEFT_WARN(RDV, "weft_server_start: server is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (!listen || !wf_parse_hostport(listen, host, sizeof(host), &port) ||
        port < 0 || port > 65535) {
        WEFT_WARN(RDV, "weft_server_start: invalid listen address '%s' "
                       "(expected HOST:PORT or [IPV6]:PORT, port 0 for any)",
                  listen ? listen : "(null)");
        return WEFT_ERR_INVALID_ARG;
    }
    struct weft_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        WEFT_WARN(RDV, "weft_server_start: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    srv->magic = WF_RDV_SERVER_MAGIC;
    srv->lfd = srv->epfd = srv->evfd = -1;
    WEFT_CHECK_GOTO(server_configure(srv, token), st, err_destroy);
    WEFT_CHECK_GOTO(server_setup(srv, host, port, listen), st, err_destroy);
    int rc = pthread_create(&srv->thread, NULL, wf_rdv_server_main, srv);
    if (rc != 0) {
        WEFT_WARN(RDV, "rendezvous server on %s: cannot start its thread: %s",
                  srv->address, wf_errno_str(rc));
        st = WEFT_ERR_SYSTEM;
        goto err_destroy;
    }
    srv->thread_started = true;
    WEFT_INFO(RDV, "rendezvous server: event=listening address=%s auth=%s "
                   "max_jobs=%zu keepalive_ms=%llu", srv->address,
              *srv->token ? "server_token" : "per_job",
              srv->max_jobs, (unsigned long long)srv->keepalive_ms);
    *server = srv;
    return WEFT_OK;
err_destroy:
    server_destroy(srv);
    return st;
}

WEFT_API const char *weft_server_address(weft_server_t server)
{
    if (!server || server->magic != WF_RDV_SERVER_MAGIC)
        return NULL;
    return server->address;
}

WEFT_API weft_status_t weft_server_stop(weft_server_t server)
{
    uint64_t one = 1;

    if (!server)
        return WEFT_OK;
    if (server->magic != WF_RDV_SERVER_MAGIC) {
        WEFT_WARN(RDV, "weft_server_stop: not a server handle (already "
                       "stopped?)");
        return WEFT_ERR_INVALID_ARG;
    }
    if (server->thread_started) {
        /* An eventfd write cannot block or fail short of a bug. */
        if (write(server->evfd, &one, sizeof(one)) != sizeof(one))
            WEFT_WARN(RDV, "weft_server_stop: eventfd write failed: %s",
                      wf_errno_str(errno));
        pthread_join(server->thread, NULL);
    }
    WEFT_INFO(RDV, "rendezvous server: event=stopped address=%s jobs=%zu "
                   "conns=%zu", server->address, server->njobs,
              server->nconns);
    server_destroy(server);
    return WEFT_OK;
}
