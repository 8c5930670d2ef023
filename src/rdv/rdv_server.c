/*
 * rdv_server.c - the rendezvous server: listening socket, the epoll loop on
 * its own thread, per-connection framing, timers, and the public
 * weft_server_* functions.  Requests themselves are handled in rdv_jobs.c.
 *
 * The loop must keep serving every job whatever one client does, so:
 *  - every socket is non-blocking and each connection has its own input
 *    and output buffers; a partial frame just waits in the buffer;
 *  - a frame is checked (magic, version, length <= max_frame) as soon as
 *    its header is in, before any buffer grows for it; before it has
 *    authenticated, a connection may only send frames of up to
 *    PREAUTH_FRAME bytes (HELLO and AUTH are far smaller), so strangers
 *    cannot make the server hold a megabyte each;
 *  - a protocol error gets an ERROR reply, a warning naming the client and
 *    a lingering close (write side shut, input discarded for a moment so
 *    the reply is not lost to a reset);
 *  - a partial frame, a missing HELLO/AUTH or an unread reply older than
 *    srv->stall_ms (WEFT_RDV_STALL_TIMEOUT) drops the connection;
 *  - at most srv->max_conns connections: more are closed on accept, so a
 *    flood of idle sockets cannot take every descriptor;
 *  - a client that does not read its replies stops being read (back
 *    pressure) instead of growing our output buffer.
 * A connection closed while the loop is still iterating over events is
 * only marked dead and freed at the end of the iteration.  The public
 * weft_server_* functions and the listening socket are in rdv_listen.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "rdv/rdv_server.h"

#define RBUF_INIT 4096
#define MAX_EVENTS 64
#define ACCEPT_BATCH 64
#define SWEEP_MS 1000
#define ACCEPT_PAUSE_MS 100
#define PREAUTH_FRAME 4096

/* ---- addresses --------------------------------------------------------- */

void wf_rdv_format_addr(const struct sockaddr *sa, const char *wildcard,
                        char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        port = ntohs(in->sin_port);
        if (wildcard && in->sin_addr.s_addr == htonl(INADDR_ANY)) {
            snprintf(buf, size, "%s:%d", wildcard, port);
            return;
        }
        snprintf(buf, size, "%s:%d", ip, port);
        return;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        port = ntohs(in6->sin6_port);
        if (wildcard && IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) {
            snprintf(buf, size, "%s:%d", wildcard, port);
            return;
        }
    }
    snprintf(buf, size, "[%s]:%d", ip, port);
}

/* ---- connections ------------------------------------------------------- */

static void conn_set_events(struct weft_server *srv, wf_rdv_conn_t *conn,
                            uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = conn};

    if (conn->events == events || conn->state == WF_RDV_CONN_DEAD)
        return;
    if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, conn->fd, &ev) == 0)
        conn->events = events;
}

static void conn_close(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    if (conn->state == WF_RDV_CONN_DEAD)
        return;
    wf_rdv_jobs_detach(srv, conn);
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    close(conn->fd);
    conn->fd = -1;
    conn->state = WF_RDV_CONN_DEAD;
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        srv->conns = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    srv->nconns--;
    /* Freed after this loop iteration: events of this batch and the ready
     * list may still point at it (they skip dead connections). */
    conn->next = srv->dead;
    srv->dead = conn;
}

static void conn_free(wf_rdv_conn_t *conn)
{
    free(conn->rbuf);
    wf_rdv_buf_free(&conn->out);
    free(conn);
}

wf_rdv_verdict_t wf_rdv_conn_fail(wf_rdv_conn_t *conn, weft_status_t status,
                                  const char *fmt, ...)
{
    char msg[WF_RDV_ERRMSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    WEFT_WARN(RDV, "rendezvous server: closing connection from %s (job %s): "
                   "%s", conn->peer, conn->job ? conn->job->id : "-", msg);
    /* Best effort: without memory the client just sees the close. */
    wf_rdv_encode_error(&conn->out, status, WF_RDV_ERROR_CLOSING, msg);
    conn->state = WF_RDV_CONN_FAILED;
    return WF_RDV_CLOSE;
}

void wf_rdv_conn_wake(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    if (conn->on_ready)
        return;
    conn->on_ready = true;
    conn->ready_next = srv->ready;
    srv->ready = conn;
}

/* Writes queued replies.  False when the socket failed (caller closes). */
static bool conn_flush(wf_rdv_conn_t *conn)
{
    size_t done = 0;

    while (done < conn->out.len) {
        ssize_t n = send(conn->fd, conn->out.data + done,
                         conn->out.len - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        WEFT_DEBUG(RDV, "rendezvous server: send to %s failed: %s",
                   conn->peer, wf_errno_str(errno));
        return false;
    }
    if (done) {
        wf_rdv_buf_consume(&conn->out, done);
        if (conn->state == WF_RDV_CONN_OPEN)
            conn->since_ms = 0; /* progress; re-armed by conn_update */
    }
    return true;
}

/* Enters the lingering close after a protocol error: the ERROR reply is
 * flushed, the job is left at once, input is discarded until EOF or
 * WF_RDV_LINGER_MS. */
static void conn_linger(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    wf_rdv_jobs_detach(srv, conn);
    conn->state = WF_RDV_CONN_LINGER;
    conn->rlen = 0;
    conn->since_ms = wf_time_ms();
    if (!conn_flush(conn)) {
        conn_close(srv, conn);
        return;
    }
    if (conn->out.len == 0)
        shutdown(conn->fd, SHUT_WR);
    conn_set_events(srv, conn, EPOLLIN | (conn->out.len ? EPOLLOUT : 0));
}

/* After any activity: flush, then recompute the stall clock and the epoll
 * interest. */
static void conn_update(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    if (conn->state == WF_RDV_CONN_DEAD)
        return;
    if (conn->state == WF_RDV_CONN_FAILED)
        conn_linger(srv, conn);
    if (conn->state != WF_RDV_CONN_OPEN)
        return;
    if (!conn_flush(conn)) {
        conn_close(srv, conn);
        return;
    }
    bool waiting_on_client = !conn->job || conn->out.len > 0 ||
                             (conn->rlen > 0 && !conn->park_type);
    if (!waiting_on_client)
        conn->since_ms = 0;
    else if (!conn->since_ms)
        conn->since_ms = wf_time_ms();
    uint32_t ev = EPOLLRDHUP;
    if (conn->out.len <= srv->max_frame)
        ev |= EPOLLIN; /* else: back pressure until the client reads */
    if (conn->out.len)
        ev |= EPOLLOUT;
    conn_set_events(srv, conn, ev);
}

/* Makes room for `need` buffered bytes (need <= header + max_frame). */
static bool conn_reserve(wf_rdv_conn_t *conn, size_t need)
{
    if (need <= conn->rcap)
        return true;
    size_t cap = conn->rcap ? conn->rcap : RBUF_INIT;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(conn->rbuf, cap);
    if (!p)
        return false;
    conn->rbuf = p;
    conn->rcap = cap;
    return true;
}

/* Handles the complete frames in the input buffer, in order, stopping at a
 * parked request (its reply must come first) or under back pressure. */
static void conn_process(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    size_t pos = 0;
    wf_rdv_hdr_t hdr;
    char why[256];

    while (conn->state == WF_RDV_CONN_OPEN && !conn->park_type &&
           conn->out.len <= srv->max_frame && conn->rlen - pos >= 4) {
        uint8_t head[WF_RDV_HDR_SIZE] = {0};
        size_t have = WF_MIN(conn->rlen - pos, (size_t)WF_RDV_HDR_SIZE);
        memcpy(head, conn->rbuf + pos, have);
        wf_rdv_hdr_decode(head, &hdr);
        /* Check the magic from 4 bytes on, so garbage fails fast. */
        if (have < WF_RDV_HDR_SIZE) {
            if (hdr.magic != WF_RDV_MAGIC)
                wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                                 "bad magic 0x%08x (not a weft rendezvous "
                                 "client?)", (unsigned)hdr.magic);
            break;
        }
        if (!wf_rdv_hdr_check(&hdr, srv->max_frame, why, sizeof(why))) {
            wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG, "%s", why);
            break;
        }
        if (!conn->job && hdr.length + WF_RDV_HDR_SIZE > PREAUTH_FRAME) {
            wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                             "%s frame of %u payload bytes before "
                             "authentication (at most %d bytes until hello "
                             "and auth succeed)", wf_rdv_type_name(hdr.type),
                             (unsigned)hdr.length, PREAUTH_FRAME);
            break;
        }
        size_t need = WF_RDV_HDR_SIZE + hdr.length;
        if (conn->rlen - pos < need) {
            if (!conn_reserve(conn, need))
                wf_rdv_conn_fail(conn, WEFT_ERR_NO_MEMORY,
                                 "out of memory for a %zu-byte frame", need);
            break;
        }
        if (wf_rdv_jobs_handle(srv, conn, hdr.type,
                               conn->rbuf + pos + WF_RDV_HDR_SIZE,
                               hdr.length) == WF_RDV_CLOSE &&
            conn->state == WF_RDV_CONN_OPEN)
            conn->state = WF_RDV_CONN_FAILED; /* no memory for a reply */
        pos += need;
    }
    if (pos) {
        memmove(conn->rbuf, conn->rbuf + pos, conn->rlen - pos);
        conn->rlen -= pos;
    }
    conn_update(srv, conn);
}

/* A socket error, not a close: keepalive found the client's host gone
 * (ETIMEDOUT), or the client reset the connection.  For a job's client
 * that is worth a warning: the job may end with it. */
static void conn_lost(const wf_rdv_conn_t *conn, int err)
{
    if (conn->job && conn->state == WF_RDV_CONN_OPEN)
        WEFT_WARN(RDV, "rendezvous server: event=conn_lost peer=%s job=%s "
                       "reason=\"%s\"", conn->peer, conn->job->id,
                  wf_errno_str(err));
    else
        WEFT_DEBUG(RDV, "rendezvous server: client %s closed: %s",
                   conn->peer, wf_errno_str(err));
}

/* Reads what is there (one recv per event: level-triggered epoll calls us
 * again while more is pending). */
static void conn_read(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    if (conn->rlen == conn->rcap &&
        !conn_reserve(conn, conn->rcap ? conn->rcap * 2 : RBUF_INIT)) {
        wf_rdv_conn_fail(conn, WEFT_ERR_NO_MEMORY, "out of memory");
        conn_update(srv, conn);
        return;
    }
    ssize_t n = recv(conn->fd, conn->rbuf + conn->rlen,
                     conn->rcap - conn->rlen, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        if (conn->state == WF_RDV_CONN_OPEN && conn->rlen > 0 &&
            !conn->park_type)
            WEFT_WARN(RDV, "rendezvous server: client %s (job %s) went away "
                           "in the middle of a frame (%zu bytes of it "
                           "received)", conn->peer,
                      conn->job ? conn->job->id : "-", conn->rlen);
        else if (n < 0)
            conn_lost(conn, errno);
        else
            WEFT_DEBUG(RDV, "rendezvous server: client %s closed: eof",
                       conn->peer);
        conn_close(srv, conn);
        return;
    }
    if (conn->state != WF_RDV_CONN_OPEN)
        return; /* lingering: discarded */
    conn->rlen += (size_t)n;
    /* While parked, the client should be waiting, not sending. */
    if (conn->park_type && conn->rlen > WF_RDV_HDR_SIZE + srv->max_frame) {
        wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_USAGE,
                         "%zu bytes sent while a %s was pending",
                         conn->rlen, wf_rdv_type_name(conn->park_type));
        conn_update(srv, conn);
        return;
    }
    conn_process(srv, conn);
}

static void conn_event(struct weft_server *srv, wf_rdv_conn_t *conn,
                       uint32_t events)
{
    if (conn->state == WF_RDV_CONN_DEAD)
        return;
    if (events & EPOLLERR) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        conn_lost(conn, err);
        conn_close(srv, conn);
        return;
    }
    if (events & EPOLLHUP) {
        WEFT_DEBUG(RDV, "rendezvous server: connection from %s hung up",
                   conn->peer);
        conn_close(srv, conn);
        return;
    }
    if (events & EPOLLOUT) {
        if (!conn_flush(conn)) {
            conn_close(srv, conn);
            return;
        }
        if (conn->state == WF_RDV_CONN_LINGER && conn->out.len == 0) {
            shutdown(conn->fd, SHUT_WR);
            conn_set_events(srv, conn, EPOLLIN);
        } else if (conn->state == WF_RDV_CONN_OPEN) {
            conn_process(srv, conn); /* back pressure may have lifted */
        }
    }
    if ((events & (EPOLLIN | EPOLLRDHUP)) && conn->state != WF_RDV_CONN_DEAD)
        conn_read(srv, conn);
}

/* ---- the loop ---------------------------------------------------------- */

/* Over the connection limit: close at once.  One warning a second at most,
 * so a flood does not flood the log too. */
static void server_refuse(struct weft_server *srv, int fd,
                          const struct sockaddr *sa)
{
    char peer[64];
    uint64_t now = wf_time_ms();

    close(fd);
    if (now - srv->refuse_warned < 1000)
        return;
    srv->refuse_warned = now;
    wf_rdv_format_addr(sa, NULL, peer, sizeof(peer));
    WEFT_WARN(RDV, "rendezvous server on %s: refused connection from %s: "
                   "%zu connections open, the limit (WEFT_RDV_MAX_CONNS)",
              srv->address, peer, srv->nconns);
}

/* A rank's connection is idle for the whole life of its job, so when the
 * rank's host vanishes (power, kernel panic, a cut link) nothing would
 * ever fail on it and the job's state would linger.  Keepalive probes
 * after keepalive_ms of silence, 3 of them keepalive_ms/3 apart, and the
 * same bound on unacknowledged data (TCP_USER_TIMEOUT) end such a
 * connection in about twice keepalive_ms; conn_read logs it. */
static void set_keepalive(const struct weft_server *srv, int fd)
{
    int on = srv->keepalive_ms > 0;
    int idle = (int)WF_MAX(srv->keepalive_ms / 1000, (uint64_t)1);
    int intvl = WF_MAX(idle / 3, 1), cnt = 3;
    unsigned user = (unsigned)WF_MIN(2 * srv->keepalive_ms,
                                     (uint64_t)UINT32_MAX);

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    if (!on)
        return;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

static void server_accept_one(struct weft_server *srv, int fd,
                              const struct sockaddr *sa)
{
    wf_rdv_conn_t *conn;
    int one = 1;

    if (srv->nconns >= srv->max_conns) {
        server_refuse(srv, fd, sa);
        return;
    }
    conn = calloc(1, sizeof(*conn));

    if (!conn) {
        WEFT_WARN(RDV, "rendezvous server: out of memory accepting a client");
        close(fd);
        return;
    }
    conn->fd = fd;
    wf_rdv_format_addr(sa, NULL, conn->peer, sizeof(conn->peer));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    set_keepalive(srv, fd);
    conn->events = EPOLLIN | EPOLLRDHUP;
    struct epoll_event ev = {.events = conn->events, .data.ptr = conn};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        WEFT_WARN(RDV, "rendezvous server: epoll_ctl for %s failed: %s",
                  conn->peer, wf_errno_str(errno));
        close(fd);
        free(conn);
        return;
    }
    conn->since_ms = wf_time_ms(); /* HELLO is due */
    conn->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = conn;
    srv->conns = conn;
    srv->nconns++;
    WEFT_DEBUG(RDV, "rendezvous server: connection from %s", conn->peer);
}

static void server_accept(struct weft_server *srv)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(srv->lfd, (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            server_accept_one(srv, fd, (struct sockaddr *)&ss);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        /* Out of descriptors or memory: the listening socket stays
         * readable, so stop polling it for a while instead of spinning. */
        WEFT_WARN(RDV, "rendezvous server on %s: accept failed: %s (%zu "
                       "connections open); pausing accepts for %d ms",
                  srv->address, wf_errno_str(errno), srv->nconns,
                  ACCEPT_PAUSE_MS);
        struct epoll_event ev = {.events = 0, .data.ptr = NULL};
        epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->lfd, &ev);
        srv->accept_resume = wf_time_ms() + ACCEPT_PAUSE_MS;
        if (srv->accept_resume < srv->next_sweep)
            srv->next_sweep = srv->accept_resume;
        return;
    }
}

/* Timers: parked deadlines, stalled and lingering connections, paused
 * accepts.  Runs at least every SWEEP_MS. */
static void server_sweep(struct weft_server *srv, uint64_t now)
{
    uint64_t next = now + SWEEP_MS;
    uint64_t parked = wf_rdv_jobs_expire(srv, now);

    if (parked && parked < next)
        next = parked;
    for (wf_rdv_conn_t *c = srv->conns, *n; c; c = n) {
        n = c->next;
        if (!c->since_ms)
            continue;
        if (c->state == WF_RDV_CONN_LINGER) {
            if (now - c->since_ms >= WF_RDV_LINGER_MS)
                conn_close(srv, c);
        } else if (now - c->since_ms >= srv->stall_ms) {
            WEFT_WARN(RDV, "rendezvous server: dropping client %s (job %s): "
                           "%s for %llu ms (WEFT_RDV_STALL_TIMEOUT)",
                      c->peer, c->job ? c->job->id : "-",
                      !c->job          ? "not authenticated"
                      : c->out.len > 0 ? "replies not read"
                                       : "incomplete frame",
                      (unsigned long long)srv->stall_ms);
            conn_close(srv, c);
        }
    }
    if (srv->accept_resume && now >= srv->accept_resume) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->lfd, &ev);
        srv->accept_resume = 0;
    }
    if (srv->accept_resume && srv->accept_resume < next)
        next = srv->accept_resume;
    srv->next_sweep = next;
}

/* Connections woken by other clients' requests: flush their replies and go
 * on with frames they sent meanwhile. */
static void server_run_ready(struct weft_server *srv)
{
    while (srv->ready) {
        wf_rdv_conn_t *c = srv->ready;
        srv->ready = c->ready_next;
        c->on_ready = false;
        if (c->state == WF_RDV_CONN_OPEN)
            conn_process(srv, c);
        else
            conn_update(srv, c);
    }
}

static void server_free_dead(struct weft_server *srv)
{
    while (srv->dead) {
        wf_rdv_conn_t *c = srv->dead;
        srv->dead = c->next;
        conn_free(c);
    }
}

void *wf_rdv_server_main(void *arg)
{
    struct weft_server *srv = arg;
    struct epoll_event evs[MAX_EVENTS];

    for (;;) {
        uint64_t now = wf_time_ms();
        int timeout = srv->next_sweep > now
                          ? (int)WF_MIN(srv->next_sweep - now, SWEEP_MS)
                          : 0;
        int n = epoll_wait(srv->epfd, evs, MAX_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            WEFT_ERROR(RDV, "rendezvous server on %s: epoll_wait failed: %s; "
                            "server stopped", srv->address,
                       wf_errno_str(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == srv)
                return NULL; /* weft_server_stop */
            if (evs[i].data.ptr == NULL)
                server_accept(srv);
            else
                conn_event(srv, evs[i].data.ptr, evs[i].events);
        }
        now = wf_time_ms();
        if (now >= srv->next_sweep)
            server_sweep(srv, now);
        server_run_ready(srv); /* after the sweep: it wakes timed-out ones */
        server_free_dead(srv);
    }
    return NULL;
}

void wf_rdv_server_teardown(struct weft_server *srv)
{
    while (srv->conns)
        conn_close(srv, srv->conns);
    server_free_dead(srv);
    wf_rdv_jobs_free_all(srv);
}
