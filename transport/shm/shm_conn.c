/*
 * shm_conn.c - setting a pair up, and taking it down when a peer fails.
 *
 * The lower rank dials the higher rank's abstract Unix socket
 * (SOCK_SEQPACKET: each packet arrives whole, so the handshake never
 * sees half a message) and the two prove the job secret as tcp does:
 *
 *   HELLO  dialer -> acceptor  keys, ranks, a nonce, a cma cookie offer
 *   CHALL  acceptor -> dialer  its nonce and MAC over HELLO and that nonce,
 *                              its own cookie offer, "I can read you"
 *   PROOF  dialer -> acceptor  the dialer's MAC; the pair's memfd and the
 *                              dialer's eventfd ride along (SCM_RIGHTS)
 *   READY  acceptor -> dialer  the acceptor's eventfd, or a refusal
 *
 * The acceptor also checks the connecting process's uid (SO_PEERCRED).
 * The segment is a memfd sealed against resizing, so it never has a
 * name another process could open and nothing is left behind by a crash.
 * Afterwards the socket carries no data: it stays open so that a peer's
 * death (SIGKILL included: the kernel closes its end) reaches us as a
 * hang-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "cma.h"
#include "shm.h"


static const char *const verdict_text[WF_SHM_REJ_COUNT] = {
    [WF_SHM_OK] = "accepted",
    [WF_SHM_REJ_VERSION] = "protocol version mismatch",
    [WF_SHM_REJ_JOB_KEY] = "job key mismatch (a different job id)",
    [WF_SHM_REJ_COMM_KEY] = "communicator key mismatch",
    [WF_SHM_REJ_RANKS] = "ranks out of range or addressed to another rank",
    [WF_SHM_REJ_DUPLICATE] = "that rank is already connected or failed",
    [WF_SHM_REJ_AUTH] = ("authentication failed: the proof of the job "
                         "secret does not match (a different WEFT_TOKEN?)"),
    [WF_SHM_REJ_SEGMENT] = "the shared segment could not be mapped",
};

static const char *verdict_str(uint32_t v)
{
    return v < WF_SHM_REJ_COUNT ? verdict_text[v] : "unknown reason";
}

/* ---- packets ------------------------------------------------------------ */

static int send_pkt(int fd, const wf_shm_pkt_t *pkt, const int *fds, int nfds)
{
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {(void *)pkt, sizeof(*pkt)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

    if (nfds) {
        memset(&u, 0, sizeof(u));
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == (ssize_t)sizeof(*pkt))
        return 0;
    return n < 0 ? errno : EPROTO;
}

/* 1: a packet (and up to 2 fds, -1 where none came); 0: none yet;
 * -1: the connection closed or failed (errno, 0 for a close). */
static int recv_pkt(int fd, wf_shm_pkt_t *pkt, int fds[2])
{
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {pkt, sizeof(*pkt)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};

    fds[0] = fds[1] = -1;
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        if (n == 0)
            errno = 0;
        return -1;
    }
    int got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (got < 2)
                fds[got++] = f;
            else
                close(f); /* more than any packet carries */
        }
    }
    if (n != (ssize_t)sizeof(*pkt) || pkt->version != WF_SHM_VERSION) {
        errno = EPROTO;
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return -1;
    }
    return 1;
}

static weft_status_t hs_mac(const wf_tctx_t *ctx, const char *role,
                            const wf_shm_pkt_t *hello,
                            const uint8_t nonce[WF_SHM_NONCE_LEN],
                            uint8_t mac[WF_SHM_MAC_LEN])
{
    wf_auth_part_t parts[] = {{role, strlen(role) + 1},
                              {hello, sizeof(*hello)},
                              {nonce, WF_SHM_NONCE_LEN}};
    return wf_auth_mac(ctx->secret, WF_AUTH_KEY_LEN, parts,
                       WF_ARRAY_LEN(parts), mac);
}

static void offer_fill(const wf_tctx_t *ctx, wf_shm_pkt_t *pkt)
{
    pkt->pid = (uint32_t)getpid();
    pkt->cookie_addr = (uint64_t)(uintptr_t)&ctx->cookie;
    pkt->cookie = ctx->cookie;
}

/* Whether this process can read the memory of the packet's sender. */
static bool offer_readable(const wf_tctx_t *ctx, const wf_shm_pkt_t *pkt)
{
    if (!ctx->cma_min)
        return false;
    int err = wf_cma_probe((pid_t)pkt->pid, pkt->cookie_addr, pkt->cookie);
    if (err)
        WEFT_INFO(NET, "shm: rank %d cannot read pid %u's memory (%s): "
                  "large messages from it go through the rings, copied twice",
                  ctx->rank, pkt->pid, strerror(err));
    return err == 0;
}

/* ---- the peer's life ---------------------------------------------------- */

static void up_add(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    ctx->up[ctx->nup++] = p->idx;
}

static void up_remove(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    for (int i = 0; i < ctx->nup; i++)
        if (ctx->up[i] == p->idx) {
            ctx->up[i] = ctx->up[--ctx->nup];
            return;
        }
}

static bool in_handshake(int state)
{
    return state == WF_SHM_DIALING || state == WF_SHM_PROVING ||
           state == WF_SHM_ACCEPTING;
}

void wf_shm_peer_close(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    (void)ctx;
    if (p->fd >= 0)
        close(p->fd);
    if (p->efd >= 0)
        close(p->efd);
    p->fd = p->efd = -1;
    if (p->seg)
        munmap(p->seg, p->seg_len);
    p->seg = NULL;
}

void wf_shm_peer_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
{
    va_list ap;

    if (p->state == WF_SHM_FAILED)
        return;
    va_start(ap, fmt);
    wf_match_fail_note(&ctx->m, &p->m, st, fmt, ap);
    va_end(ap);
    if (in_handshake(p->state))
        ctx->handshakes--;
    if (p->state == WF_SHM_UP)
        up_remove(ctx, p);
    if (p->fd >= 0)
        close(p->fd); /* leaves the epoll set with it */
    p->fd = -1;
    p->state = WF_SHM_FAILED;
    wf_shm_send_fail(ctx, p, st);
    wf_shm_recv_fail(ctx, p, st);
}

/* Points the rings at the segment: the dialer sends on ring 0. */
static void rings_attach(wf_shm_peer_t *p)
{
    wf_shm_seg_hdr_t *h = (wf_shm_seg_hdr_t *)(void *)p->seg;
    char *rings = p->seg + WF_SHM_HDR_BYTES;
    size_t ring_bytes = (size_t)p->slots * WF_SHM_SLOT_BYTES;
    int t = p->dialer ? 0 : 1;

    p->tx = (wf_shm_ring_t){.ctl = &h->ctl[t], .slots = rings + t * ring_bytes};
    p->rx = (wf_shm_ring_t){.ctl = &h->ctl[1 - t],
                            .slots = rings + (1 - t) * ring_bytes};
}

static void went_up(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    p->state = WF_SHM_UP;
    ctx->handshakes--;
    up_add(ctx, p);
    snprintf(p->desc, sizeof(p->desc), "peer %d (pid %u, shm)", p->idx,
             (unsigned)p->pid);
    WEFT_DEBUG(NET, "shm: rank %d <-> %s up (%u slots; single copy: "
               "we read it %s, it reads us %s)", ctx->rank, p->desc, p->slots,
               p->i_read ? "yes" : "no", p->pull_ok ? "yes" : "no");
    wf_shm_tx_pump(ctx, p);
}

/* ---- dialer ------------------------------------------------------------- */

static weft_status_t dial(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT, "socket: %s",
                         strerror(errno));
        return p->m.fail_status;
    }
    socklen_t sl = wf_shm_sockaddr(p->addr.sock, &sa);
    if (connect(fd, (struct sockaddr *)&sa, sl) != 0) {
        int err = errno;
        close(fd);
        if (err == EAGAIN)
            return WEFT_INPROGRESS; /* its backlog is full: retried */
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "connect to @%s: %s", p->addr.sock, strerror(err));
        return p->m.fail_status;
    }
    wf_shm_pkt_t *h = &p->hello;
    memset(h, 0, sizeof(*h));
    h->type = WF_SHM_HELLO;
    h->version = WF_SHM_VERSION;
    h->job_key = ctx->job_key;
    h->comm_key = ctx->comm_key;
    h->src = ctx->rank;
    h->dst = p->idx;
    h->slots = ctx->slots;
    offer_fill(ctx, h);
    WEFT_CHECK(wf_auth_random(h->nonce, sizeof(h->nonce)));
    int err = send_pkt(fd, h, NULL, 0);
    struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP,
                            .data.u64 = WF_SHM_KEY_PEER | (uint64_t)p->idx};
    if (err || epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        close(fd);
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "sending the handshake: %s",
                         strerror(err ? err : errno));
        return p->m.fail_status;
    }
    p->fd = fd;
    p->dialer = true;
    p->state = WF_SHM_DIALING;
    ctx->handshakes++;
    return WEFT_INPROGRESS;
}

static int make_segment(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    size_t len = wf_shm_seg_bytes(ctx->slots);
    int fd = memfd_create("weft-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)len) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        goto fail;
    p->seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p->seg == MAP_FAILED) {
        p->seg = NULL;
        goto fail;
    }
    p->seg_len = len;
    p->slots = ctx->slots;
    wf_shm_seg_hdr_t *h = (wf_shm_seg_hdr_t *)(void *)p->seg;
    h->magic = WF_SHM_SEG_MAGIC;
    h->version = WF_SHM_VERSION;
    h->slots = p->slots;
    h->slot_bytes = WF_SHM_SLOT_BYTES;
    rings_attach(p);
    return fd;
fail:;
    int err = errno;
    close(fd);
    errno = err;
    return -1;
}

static void on_chall(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_pkt_t *c)
{
    uint8_t mac[WF_SHM_MAC_LEN];

    if (c->type != WF_SHM_CHALL || c->verdict != WF_SHM_OK) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "the peer refused the connection: %s",
                         c->type == WF_SHM_CHALL ? verdict_str(c->verdict)
                                                 : "unexpected packet");
        return;
    }
    if (hs_mac(ctx, "weft-shm-acceptor", &p->hello, c->nonce, mac) !=
            WEFT_OK ||
        !wf_auth_equal(mac, c->mac, sizeof(mac))) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE, "%s",
                         verdict_str(WF_SHM_REJ_AUTH));
        return;
    }
    p->i_read = offer_readable(ctx, c);
    p->pull_ok = c->reads != 0;
    int seg_fd = make_segment(ctx, p);
    if (seg_fd < 0) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "making the shared segment: %s",
                         strerror(errno));
        return;
    }
    wf_shm_pkt_t proof = {.type = WF_SHM_PROOF, .version = WF_SHM_VERSION,
                          .reads = p->i_read, .slots = p->slots};
    if (hs_mac(ctx, "weft-shm-dialer", &p->hello, c->nonce, proof.mac) !=
        WEFT_OK) {
        close(seg_fd);
        wf_shm_peer_fail(ctx, p, WEFT_ERR_INTERNAL, "computing the handshake MAC failed");
        return;
    }
    int fds[2] = {seg_fd, ctx->efd};
    int err = send_pkt(p->fd, &proof, fds, 2);
    close(seg_fd); /* the mapping keeps it */
    if (err) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "sending the handshake: %s",
                         strerror(err));
        return;
    }
    p->state = WF_SHM_PROVING;
}

static void on_ready(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_pkt_t *r,
                     int efd)
{
    if (r->type != WF_SHM_READY || r->verdict != WF_SHM_OK || efd < 0) {
        if (efd >= 0)
            close(efd);
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "the peer refused the connection: %s",
                         r->type == WF_SHM_READY ? verdict_str(r->verdict)
                                                 : "unexpected packet");
        return;
    }
    p->efd = efd;
    went_up(ctx, p);
}

weft_status_t wf_shm_connect(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len)
{
    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_match_peer_check(&ctx->m, peer));
    wf_shm_peer_t *p = &ctx->peers[peer];
    if (p->state == WF_SHM_UP)
        return WEFT_OK;
    /* A peer that left after it sent: what it sent is still receivable
     * (transport.h). */
    if (p->state == WF_SHM_FAILED)
        return p->m.unexp ? WEFT_OK : wf_match_peer_failed(&ctx->m, &p->m);
    if (!p->addr_known) {
        wf_shm_addr_t a;
        if (!addr || len != sizeof(a)) {
            WEFT_WARN(NET, "shm: address of peer %d has %zu bytes, not %zu",
                      peer, len, sizeof(a));
            return WEFT_ERR_INVALID_ARG;
        }
        memcpy(&a, addr, sizeof(a));
        if (a.magic != WF_SHM_ADDR_MAGIC) {
            WEFT_WARN(NET, "shm: address of peer %d is not a shm address",
                      peer);
            return WEFT_ERR_INVALID_ARG;
        }
        if (a.node != ctx->addr.node) {
            WEFT_WARN(NET, "shm: peer %d is on another machine or network "
                      "namespace; shared memory reaches ranks of this one "
                      "only (WEFT_TRANSPORT=auto picks a network transport "
                      "for it)", peer);
            return WEFT_ERR_UNSUPPORTED;
        }
        a.sock[WF_SHM_SOCK_NAME - 1] = '\0';
        p->addr = a;
        p->pid = (pid_t)a.pid;
        p->addr_known = true;
        snprintf(p->desc, sizeof(p->desc), "peer %d (pid %u, shm)", peer,
                 a.pid);
        p->deadline_ms = wf_deadline_after(ctx->timeout_ms);
    }
    if (peer > ctx->rank && p->state == WF_SHM_NONE)
        return dial(ctx, p);
    return WEFT_INPROGRESS;
}

/* ---- acceptor ----------------------------------------------------------- */

static void pending_drop(wf_tctx_t *ctx, int slot, bool keep_fd)
{
    if (!keep_fd)
        close(ctx->pend[slot].fd);
    ctx->pend[slot].fd = -1;
    ctx->handshakes--;
    while (ctx->npend && ctx->pend[ctx->npend - 1].fd < 0)
        ctx->npend--;
}

void wf_shm_accept(wf_tctx_t *ctx)
{
    for (;;) {
        int fd = accept4(ctx->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
            cr.uid != geteuid()) {
            WEFT_WARN(NET, "shm: rank %d refused a connection from pid %d "
                      "of uid %d (not this job's user)", ctx->rank,
                      (int)cr.pid, (int)cr.uid);
            close(fd);
            continue;
        }
        int slot = 0;
        while (slot < ctx->npend && ctx->pend[slot].fd >= 0)
            slot++;
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP,
                                .data.u64 = WF_SHM_KEY_PENDING | (uint64_t)slot};
        if (slot >= WF_SHM_MAX_PENDING ||
            epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
            WEFT_WARN(NET, "shm: rank %d has too many connections in their "
                      "handshake; closing one", ctx->rank);
            close(fd);
            continue;
        }
        ctx->pend[slot].fd = fd;
        ctx->pend[slot].deadline_ms =
            wf_deadline_after(ctx->timeout_ms > 0 ? ctx->timeout_ms : 30000);
        if (slot == ctx->npend)
            ctx->npend++;
        ctx->handshakes++;
    }
}

static uint32_t hello_verdict(const wf_tctx_t *ctx, const wf_shm_pkt_t *h)
{
    if (h->type != WF_SHM_HELLO)
        return WF_SHM_REJ_VERSION;
    if (h->job_key != ctx->job_key)
        return WF_SHM_REJ_JOB_KEY;
    if (h->comm_key != ctx->comm_key)
        return WF_SHM_REJ_COMM_KEY;
    if (h->dst != ctx->rank || h->src < 0 || h->src >= ctx->rank)
        return WF_SHM_REJ_RANKS;
    int s = ctx->peers[h->src].state;
    if (s != WF_SHM_NONE)
        return WF_SHM_REJ_DUPLICATE;
    return WF_SHM_OK;
}

static void refuse(int fd, uint32_t type, uint32_t verdict)
{
    wf_shm_pkt_t r = {.type = type, .version = WF_SHM_VERSION,
                      .verdict = verdict};
    (void)send_pkt(fd, &r, NULL, 0);
}

/* A HELLO on a pending connection: it becomes the peer's, or goes. */
void wf_shm_pending_event(wf_tctx_t *ctx, int slot)
{
    wf_shm_pkt_t h;
    int fds[2];
    int fd = ctx->pend[slot].fd;
    int got = recv_pkt(fd, &h, fds);

    if (got == 0)
        return;
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (got < 0) {
        pending_drop(ctx, slot, false);
        return;
    }
    uint32_t v = hello_verdict(ctx, &h);
    if (v != WF_SHM_OK) {
        WEFT_WARN(NET, "shm: rank %d refused a connection claiming rank %d "
                  "(pid %u): %s", ctx->rank, h.src, h.pid, verdict_str(v));
        refuse(fd, WF_SHM_CHALL, v);
        pending_drop(ctx, slot, false);
        return;
    }
    wf_shm_peer_t *p = &ctx->peers[h.src];
    wf_shm_pkt_t c = {.type = WF_SHM_CHALL, .version = WF_SHM_VERSION};
    p->hello = h;
    p->pid = (pid_t)h.pid;
    p->i_read = offer_readable(ctx, &h);
    c.reads = p->i_read;
    offer_fill(ctx, &c);
    struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP,
                            .data.u64 = WF_SHM_KEY_PEER | (uint64_t)p->idx};
    if (wf_auth_random(c.nonce, sizeof(c.nonce)) != WEFT_OK ||
        hs_mac(ctx, "weft-shm-acceptor", &h, c.nonce, c.mac) != WEFT_OK ||
        send_pkt(fd, &c, NULL, 0) != 0 ||
        epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, fd, &e) != 0) {
        pending_drop(ctx, slot, false);
        return;
    }
    memcpy(p->nonce, c.nonce, sizeof(p->nonce));
    pending_drop(ctx, slot, true);
    ctx->handshakes++; /* now the peer's */
    p->fd = fd;
    p->dialer = false;
    p->state = WF_SHM_ACCEPTING;
    if (!p->deadline_ms)
        p->deadline_ms = wf_deadline_after(ctx->timeout_ms);
}

/* Maps the dialer's segment after checking what it claims to be. */
static bool segment_map(wf_shm_peer_t *p, int seg_fd, uint32_t slots)
{
    struct stat st;
    size_t len = wf_shm_seg_bytes(slots);
    int seals = fcntl(seg_fd, F_GET_SEALS);

    if (slots < 8 || slots > 4096 || (slots & (slots - 1)) ||
        fstat(seg_fd, &st) != 0 || (size_t)st.st_size != len || seals < 0 ||
        !(seals & F_SEAL_SHRINK))
        return false;
    void *seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
    if (seg == MAP_FAILED)
        return false;
    const wf_shm_seg_hdr_t *h = seg;
    if (h->magic != WF_SHM_SEG_MAGIC || h->version != WF_SHM_VERSION ||
        h->slots != slots || h->slot_bytes != WF_SHM_SLOT_BYTES) {
        munmap(seg, len);
        return false;
    }
    p->seg = seg;
    p->seg_len = len;
    p->slots = slots;
    rings_attach(p);
    return true;
}

/* The acceptor resets a peer whose dialer failed to prove itself: the
 * connection was a stray, and the real peer may still come. */
static void accept_reset(wf_tctx_t *ctx, wf_shm_peer_t *p, uint32_t verdict)
{
    WEFT_WARN(NET, "shm: rank %d refused a connection claiming rank %d "
              "(pid %u): %s", ctx->rank, p->idx, p->hello.pid,
              verdict_str(verdict));
    refuse(p->fd, WF_SHM_READY, verdict);
    close(p->fd);
    p->fd = -1;
    if (p->seg)
        munmap(p->seg, p->seg_len);
    p->seg = NULL;
    p->state = WF_SHM_NONE;
    ctx->handshakes--;
}

static void on_proof(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_pkt_t *f,
                     int fds[2])
{
    uint8_t mac[WF_SHM_MAC_LEN];

    if (f->type != WF_SHM_PROOF ||
        hs_mac(ctx, "weft-shm-dialer", &p->hello, p->nonce, mac) != WEFT_OK ||
        !wf_auth_equal(mac, f->mac, sizeof(mac))) {
        accept_reset(ctx, p, WF_SHM_REJ_AUTH);
        return;
    }
    if (fds[0] < 0 || fds[1] < 0 || !segment_map(p, fds[0], f->slots)) {
        accept_reset(ctx, p, WF_SHM_REJ_SEGMENT);
        return;
    }
    close(fds[0]);
    fds[0] = -1;
    p->efd = fds[1];
    fds[1] = -1;
    p->pull_ok = f->reads != 0;
    wf_shm_pkt_t r = {.type = WF_SHM_READY, .version = WF_SHM_VERSION};
    int err = send_pkt(p->fd, &r, &ctx->efd, 1);
    if (err) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "sending the handshake: %s",
                         strerror(err));
        return;
    }
    went_up(ctx, p);
}

/* ---- events on a pair's socket ------------------------------------------ */

/* Nothing in flight with the peer: a close now is a normal goodbye. */
static bool peer_quiet(const wf_shm_peer_t *p)
{
    return !p->m.posted && !p->sq && !p->rts && !p->in.active && !p->nfins;
}

void wf_shm_sock_event(wf_tctx_t *ctx, wf_shm_peer_t *p, uint32_t events)
{
    wf_shm_pkt_t pkt;
    int fds[2];

    if (p->state == WF_SHM_UP) {
        if (!(events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR | EPOLLIN)))
            return;
        /* What the peer published before it left is still receivable. */
        wf_shm_rx_drain(ctx, p);
        if (p->state != WF_SHM_UP)
            return;
        p->m.fail_unreported = peer_quiet(p);
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "connection closed by the peer (the process exited "
                         "or was killed)");
        return;
    }
    while (p->fd >= 0 && in_handshake(p->state)) {
        int got = recv_pkt(p->fd, &pkt, fds);
        if (got == 0)
            return;
        if (got < 0) {
            int err = errno;
            if (p->state == WF_SHM_ACCEPTING) {
                close(p->fd);
                p->fd = -1;
                p->state = WF_SHM_NONE;
                ctx->handshakes--;
                return;
            }
            wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                             "the peer closed the connection during the "
                             "handshake%s%s", err ? ": " : "",
                             err ? strerror(err) : "");
            return;
        }
        if (p->state == WF_SHM_DIALING) {
            on_chall(ctx, p, &pkt);
        } else if (p->state == WF_SHM_PROVING) {
            on_ready(ctx, p, &pkt, fds[0]);
            fds[0] = -1;
        } else {
            on_proof(ctx, p, &pkt, fds);
        }
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    }
}

void wf_shm_check_deadlines(wf_tctx_t *ctx)
{
    for (int i = 0; i < ctx->npend; i++)
        if (ctx->pend[i].fd >= 0 && wf_deadline_passed(ctx->pend[i].deadline_ms))
            pending_drop(ctx, i, false);
    for (int i = 0; i < ctx->size; i++) {
        wf_shm_peer_t *p = &ctx->peers[i];
        if (p->state == WF_SHM_UP || p->state == WF_SHM_FAILED ||
            !p->addr_known)
            continue;
        if (wf_deadline_passed(p->deadline_ms)) {
            wf_shm_peer_fail(ctx, p, WEFT_ERR_TIMEOUT,
                             "no connection within %lld ms",
                             (long long)ctx->timeout_ms);
            continue;
        }
        if (p->state == WF_SHM_NONE && i > ctx->rank)
            dial(ctx, p); /* its backlog was full: again */
    }
}
