/*
 * route.c - one communicator over several transports: each peer reached
 * by the first transport of an ordered list that reaches it (auto: shm
 * for ranks of this machine, then ib where an active port exists, then
 * tcp), as Open MPI's BTLs, NCCL's SHM/P2P/NET and UCX's lanes do.
 *
 * The route is itself a transport (transport.h) that the engine cannot
 * tell from one: it opens every member transport, publishes all of their
 * addresses in one blob, and at connect() picks a member for the peer.
 * Both ends of a pair pick the same one, because both walk the same list
 * (WEFT_TRANSPORT is the job's) and take the first member that both have
 * and that reaches the other (shm: the same machine and network
 * namespace).  Every request of every member begins with the matching
 * layer's head (match.h), which names its peer, so test() goes to the
 * peer's member with no request of the route's own in between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "config.h"
#include "match.h"
#include "route.h"

#define ROUTE_MAGIC 0x74726677u /* "wfrt" */

struct wf_tctx {
    int n; /* members */
    const wf_transport_ops_t *ops[WF_ROUTE_MAX];
    wf_tctx_t *ctx[WF_ROUTE_MAX];
    int used[WF_ROUTE_MAX]; /* peers each member carries */
    int size, rank;
    int8_t *member; /* per peer: index into ops, or -1 before connect */
    uint32_t ready; /* members whose fd was readable at wait_prepare */
    int epfd;       /* every member's fd, or -1 when one has none */
    uint64_t rounds;
    char name[64];
};

/* What reg() hands out: one handle per member that registers. */
typedef struct route_mh {
    void *mh[WF_ROUTE_MAX];
} route_mh_t;

static void route_fini(wf_tctx_t *rc)
{
    if (!rc)
        return;
    for (int i = 0; i < rc->n; i++)
        if (rc->ctx[i])
            rc->ops[i]->fini(rc->ctx[i]);
    if (rc->epfd >= 0)
        close(rc->epfd);
    free(rc->member);
    free(rc);
}

static weft_status_t route_epoll(wf_tctx_t *rc)
{
    rc->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (rc->epfd < 0)
        return WEFT_ERR_SYSTEM;
    for (int i = 0; i < rc->n; i++) {
        int fd = rc->ops[i]->get_fd(rc->ctx[i]);
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (fd < 0 || epoll_ctl(rc->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
            /* A member without an fd is polled: so is the route. */
            close(rc->epfd);
            rc->epfd = -1;
            return WEFT_OK;
        }
    }
    return WEFT_OK;
}

static weft_status_t route_init(const wf_tconfig_t *cfg, wf_tctx_t **out)
{
    wf_tctx_t *rc = calloc(1, sizeof(*rc));
    weft_status_t st = WEFT_ERR_NO_MEMORY;

    if (!rc)
        return st;
    rc->epfd = -1;
    rc->size = cfg->size;
    rc->rank = cfg->rank;
    rc->member = malloc((size_t)cfg->size);
    if (!rc->member)
        goto fail;
    memset(rc->member, -1, (size_t)cfg->size);
    st = wf_transport_members(cfg->knobs ? cfg->knobs->transport : "auto",
                              rc->ops, &rc->n);
    if (st != WEFT_OK)
        goto fail;
    int at = 0;
    for (int i = 0; i < rc->n; i++) {
        st = rc->ops[i]->init(cfg, &rc->ctx[i]);
        if (st != WEFT_OK) {
            WEFT_WARN(NET, "route: transport %s failed to start: %s",
                      rc->ops[i]->name, weft_strerror(st));
            goto fail;
        }
        at += snprintf(rc->name + at, sizeof(rc->name) - (size_t)at, "%s%s",
                       i ? "+" : "", rc->ops[i]->name);
    }
    st = route_epoll(rc);
    if (st != WEFT_OK)
        goto fail;
    *out = rc;
    return WEFT_OK;
fail:
    route_fini(rc);
    return st;
}

static weft_status_t route_query(wf_tctx_t *rc, wf_tdev_attr_t *attr)
{
    /* The cost model gets one link: the slowest member's, the network
     * that the ranks of other machines are behind (docs/transports.md,
     * "Per-peer transports").  Its single copy, which the model uses only
     * when every rank is on one machine, is the first member's: the one
     * that then reaches them all. */
    weft_status_t st = rc->ops[rc->n - 1]->query(rc->ctx[rc->n - 1], attr);
    wf_tdev_attr_t a;

    if (st != WEFT_OK)
        return st;
    for (int i = 0; i < rc->n - 1; i++)
        if (rc->ops[i]->query(rc->ctx[i], &a) == WEFT_OK) {
            attr->caps &= a.caps | WF_TCAP_HOST_MEM;
            attr->reg_min = attr->reg_min && a.reg_min
                                ? WF_MIN(attr->reg_min, a.reg_min)
                                : attr->reg_min | a.reg_min;
            if (i == 0)
                attr->single_copy_min = a.single_copy_min;
        }
    wf_strlcpy(attr->name, rc->name, sizeof(attr->name));
    return WEFT_OK;
}

/* The blob: magic, count, then per member its name, length and blob. */
static weft_status_t route_get_address(wf_tctx_t *rc, void *addr, size_t *len)
{
    uint8_t *b = addr, sub[WF_TADDR_MAX];
    size_t at = 5;

    if (*len < at)
        return WEFT_ERR_INVALID_ARG;
    uint32_t magic = ROUTE_MAGIC;
    memcpy(b, &magic, 4);
    b[4] = (uint8_t)rc->n;
    for (int i = 0; i < rc->n; i++) {
        size_t sl = sizeof(sub);
        WEFT_CHECK(rc->ops[i]->get_address(rc->ctx[i], sub, &sl));
        size_t nl = strlen(rc->ops[i]->name);
        if (at + 1 + nl + 2 + sl > *len || sl > 0xffff) {
            WEFT_WARN(NET, "route: the addresses of %s take more than %zu "
                      "bytes", rc->name, *len);
            return WEFT_ERR_INVALID_ARG;
        }
        b[at++] = (uint8_t)nl;
        memcpy(b + at, rc->ops[i]->name, nl);
        at += nl;
        b[at++] = (uint8_t)(sl & 0xff);
        b[at++] = (uint8_t)(sl >> 8);
        memcpy(b + at, sub, sl);
        at += sl;
    }
    *len = at;
    return WEFT_OK;
}

/* The peer's blob for transport `name`, or NULL when it has none. */
static const uint8_t *blob_find(const uint8_t *b, size_t len,
                                const char *name, size_t *sub_len)
{
    uint32_t magic;
    size_t at = 5, nl = strlen(name);

    if (len < at)
        return NULL;
    memcpy(&magic, b, 4);
    if (magic != ROUTE_MAGIC)
        return NULL;
    for (int k = 0; k < b[4] && at < len; k++) {
        size_t l = b[at++];
        if (at + l + 2 > len)
            return NULL;
        bool hit = l == nl && memcmp(b + at, name, nl) == 0;
        at += l;
        size_t sl = (size_t)b[at] | (size_t)b[at + 1] << 8;
        at += 2;
        if (at + sl > len)
            return NULL;
        if (hit) {
            *sub_len = sl;
            return b + at;
        }
        at += sl;
    }
    return NULL;
}

/* The first member both ends have that reaches the peer. */
static int choose(wf_tctx_t *rc, const uint8_t *b, size_t len,
                  char *why, size_t why_len)
{
    int w = snprintf(why, why_len, "%s", "");
    for (int i = 0; i < rc->n; i++) {
        size_t sl = 0;
        const uint8_t *sub = blob_find(b, len, rc->ops[i]->name, &sl);
        const char *no = !sub ? "the peer has none"
                         : rc->ops[i]->reaches &&
                                 !rc->ops[i]->reaches(rc->ctx[i], sub, sl)
                             ? "does not reach it"
                             : NULL;
        if (!no)
            return i;
        w += snprintf(why + w, why_len > (size_t)w ? why_len - (size_t)w : 0,
                      "%s%s: %s", w ? "; " : "", rc->ops[i]->name, no);
    }
    return -1;
}

static weft_status_t route_connect(wf_tctx_t *rc, int peer, const void *addr,
                                   size_t len)
{
    char why[256];

    if (peer < 0 || peer >= rc->size || peer == rc->rank) {
        WEFT_WARN(NET, "route: invalid peer %d (rank %d of %d)", peer,
                  rc->rank, rc->size);
        return WEFT_ERR_INVALID_ARG;
    }
    int m = rc->member[peer];
    if (m < 0) {
        m = choose(rc, addr, len, why, sizeof(why));
        if (m < 0) {
            WEFT_WARN(NET, "route: no transport of %s reaches peer %d (%s)",
                      rc->name, peer, why);
            return WEFT_ERR_UNSUPPORTED;
        }
        rc->member[peer] = (int8_t)m;
        rc->used[m]++;
        WEFT_INFO(NET, "route: rank %d reaches peer %d by %s%s%s%s", rc->rank,
                  peer, rc->ops[m]->name, why[0] ? " (" : "", why,
                  why[0] ? ")" : "");
    }
    size_t sl = 0;
    const uint8_t *sub = blob_find(addr, len, rc->ops[m]->name, &sl);
    return rc->ops[m]->connect(rc->ctx[m], peer, sub, sl);
}

/* Posts to a peer not connected yet go nowhere: the engine connects on
 * first use, so this is a bug, said as such. */
static int member_of(wf_tctx_t *rc, int peer)
{
    if (peer < 0 || peer >= rc->size)
        return -1;
    return rc->member[peer];
}

static weft_status_t unrouted(wf_tctx_t *rc, int peer)
{
    WEFT_WARN(NET, "route: a message to or from peer %d (rank %d of %d) "
              "before any connect() to it", peer, rc->rank, rc->size);
    return WEFT_ERR_INVALID_ARG;
}

static weft_status_t route_mem_reg(wf_tctx_t *rc, void *buf, size_t len,
                                   int memtype, void **mh)
{
    route_mh_t *h = calloc(1, sizeof(*h));
    weft_status_t st = WEFT_ERR_UNSUPPORTED;
    bool any = false;

    if (!h)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < rc->n; i++) {
        weft_status_t s = rc->ops[i]->mem_reg(rc->ctx[i], buf, len, memtype,
                                              &h->mh[i]);
        any |= s == WEFT_OK;
        if (s != WEFT_OK && s != WEFT_ERR_UNSUPPORTED)
            st = s;
        if (s != WEFT_OK)
            h->mh[i] = NULL;
    }
    if (!any) {
        free(h);
        return st;
    }
    *mh = h;
    return WEFT_OK;
}

static void route_mem_dereg(wf_tctx_t *rc, void *mh)
{
    route_mh_t *h = mh;

    if (!h)
        return;
    for (int i = 0; i < rc->n; i++)
        if (h->mh[i])
            rc->ops[i]->mem_dereg(rc->ctx[i], h->mh[i]);
    free(h);
}

static void *sub_mh(void *mh, int m)
{
    return mh ? ((route_mh_t *)mh)->mh[m] : NULL;
}

static weft_status_t route_isend(wf_tctx_t *rc, int peer, uint64_t tag,
                                 const uint64_t sig[2], const void *buf,
                                 size_t len, void *mh, wf_treq_t **req)
{
    int m = member_of(rc, peer);
    if (m < 0)
        return unrouted(rc, peer);
    return rc->ops[m]->isend(rc->ctx[m], peer, tag, sig, buf, len,
                             sub_mh(mh, m), req);
}

static weft_status_t route_irecv(wf_tctx_t *rc, int peer, uint64_t tag,
                                 void *buf, size_t cap, void *mh,
                                 wf_treq_t **req)
{
    int m = member_of(rc, peer);
    if (m < 0)
        return unrouted(rc, peer);
    return rc->ops[m]->irecv(rc->ctx[m], peer, tag, buf, cap, sub_mh(mh, m),
                             req);
}

static weft_status_t route_test(wf_tctx_t *rc, wf_treq_t *req,
                                wf_treq_info_t *info)
{
    if (!req)
        return WEFT_ERR_INVALID_ARG;
    int m = member_of(rc, ((wf_mreq_t *)(void *)req)->peer);
    if (m < 0)
        return WEFT_ERR_INVALID_ARG;
    return rc->ops[m]->test(rc->ctx[m], req, info);
}

static int route_progress(wf_tctx_t *rc)
{
    int work = 0;
    /* Members that carry no peer yet are looked at now and then only, so
     * that shm's rings are not slowed by a socket poll on every call;
     * often enough for a peer that dials in before this side connects. */
    bool all = (++rc->rounds & 63) == 0;

    for (int i = 0; i < rc->n; i++) {
        if (!rc->used[i] && !all && !(rc->ready & (1u << i)))
            continue;
        rc->ready &= ~(1u << i);
        int n = rc->ops[i]->progress(rc->ctx[i]);
        if (n < 0)
            return n;
        work += n;
    }
    return work;
}

static int route_get_fd(wf_tctx_t *rc)
{
    return rc->epfd;
}

/* Before the engine sleeps on the route's epoll fd.  A member's fd that
 * is readable now has work the member must see next round, even one that
 * carries no peer yet and is otherwise looked at only now and then (a
 * connection coming in, a timer): left alone, it keeps the engine's
 * poll() returning at once, and an idle rank spins. */
static bool route_wait_prepare(wf_tctx_t *rc)
{
    struct epoll_event ev[WF_ROUTE_MAX];
    bool pending = false;

    for (int i = 0; i < rc->n; i++)
        if (rc->ops[i]->wait_prepare)
            pending |= rc->ops[i]->wait_prepare(rc->ctx[i]);
    int k = rc->epfd >= 0 ? epoll_wait(rc->epfd, ev, WF_ROUTE_MAX, 0) : 0;
    for (int i = 0; i < k; i++) {
        rc->ready |= 1u << ev[i].data.u32;
        pending = true;
    }
    return pending;
}

static const char *route_peer_describe(wf_tctx_t *rc, int peer)
{
    int m = member_of(rc, peer);
    return rc->ops[m < 0 ? rc->n - 1 : m]->peer_describe(
        rc->ctx[m < 0 ? rc->n - 1 : m], peer);
}

static bool route_peer_linked(wf_tctx_t *rc, int peer)
{
    for (int i = 0; i < rc->n; i++)
        if (rc->ops[i]->peer_linked &&
            rc->ops[i]->peer_linked(rc->ctx[i], peer))
            return true;
    return false;
}

/* Calls visit for each member's messages: peers' indices are the same. */
static uint64_t route_scan_unexpected(wf_tctx_t *rc,
                                      bool (*visit)(void *arg, int peer,
                                                    uint64_t tag,
                                                    const uint64_t sig[2]),
                                      void *arg)
{
    uint64_t sum = 0;

    for (int i = 0; i < rc->n; i++)
        if (rc->ops[i]->scan_unexpected)
            sum += rc->ops[i]->scan_unexpected(rc->ctx[i], visit, arg);
    return sum;
}

static bool route_send_pulled(wf_tctx_t *rc, int peer, size_t len)
{
    int m = member_of(rc, peer);
    return m >= 0 && rc->ops[m]->send_pulled &&
           rc->ops[m]->send_pulled(rc->ctx[m], peer, len);
}

const char *wf_route_peer_transport(wf_tctx_t *rc, int peer)
{
    int m = member_of(rc, peer);
    return m < 0 ? NULL : rc->ops[m]->name;
}

const wf_transport_ops_t wf_route_transport = {
    .size = sizeof(wf_transport_ops_t),
    .name = "route",
    .caps = WF_TCAP_HOST_MEM,
    .init = route_init,
    .fini = route_fini,
    .query = route_query,
    .get_address = route_get_address,
    .connect = route_connect,
    .mem_reg = route_mem_reg,
    .mem_dereg = route_mem_dereg,
    .isend = route_isend,
    .irecv = route_irecv,
    .test = route_test,
    .progress = route_progress,
    .get_fd = route_get_fd,
    .peer_describe = route_peer_describe,
    .peer_linked = route_peer_linked,
    .scan_unexpected = route_scan_unexpected,
    .send_pulled = route_send_pulled,
    .wait_prepare = route_wait_prepare,
};
