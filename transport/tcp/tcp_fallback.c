/*
 * tcp_fallback.c - which addresses a dialing stream uses, and falling
 * back when a topology-chosen address does not connect.
 *
 * Stream k dials from local address k mod nlocal (the kernel's choice
 * with one) to the peer's address k mod naddr.  When the addresses came
 * from the topology, a guess from the PCI tree, each end also publishes a
 * fallback (the address that reached the rendezvous server); a stream
 * whose dial fails or has not connected within ctx->probe_ms switches to
 * our fallback and the peer's, so a NIC that cannot reach the peer costs
 * a short delay and an info line, never the job (tcp_conn.c redials).
 */
#include <stdio.h>
#include <string.h>

#include "tcp.h"

int wf_tcp_local_index(const wf_tctx_t *ctx, const wf_tcp_stream_t *s)
{
    if (s->on_fallback && ctx->fallback >= 0)
        return ctx->fallback;
    return ctx->nlocal < 2 ? -1 : s->idx % ctx->nlocal;
}

int wf_tcp_remote_index(const wf_tcp_stream_t *s)
{
    const wf_tcp_peer_t *p = s->peer;
    return s->on_fallback && p->has_fallback ? p->naddr : s->idx % p->naddr;
}

bool wf_tcp_can_fall_back(const wf_tctx_t *ctx, const wf_tcp_stream_t *s)
{
    const wf_tcp_peer_t *p = s->peer;
    int a = s->idx % p->naddr;
    bool remote = p->has_fallback &&
                  (p->addr_len[p->naddr] != p->addr_len[a] ||
                   memcmp(&p->addr[p->naddr], &p->addr[a], p->addr_len[a]));
    return !s->on_fallback &&
           (remote || (ctx->fallback >= 0 &&
                       wf_tcp_local_index(ctx, s) != ctx->fallback));
}

/* "eth1 10.0.1.2" (no port) of local address i, or "the default route". */
static void local_desc(const wf_tctx_t *ctx, int i, char *out, size_t size)
{
    char ip[80];
    if (i < 0) {
        wf_strlcpy(out, "the default route", size);
        return;
    }
    wf_tcp_format_addr((const struct sockaddr *)&ctx->local[i], ip,
                       sizeof(ip));
    *strrchr(ip, ':') = '\0';
    snprintf(out, size, "%s%s%s", ctx->local_name[i],
             ctx->local_name[i][0] ? " " : "", ip);
}

void wf_tcp_fallback_switch(wf_tctx_t *ctx, wf_tcp_stream_t *s,
                            const char *why)
{
    wf_tcp_peer_t *p = s->peer;
    int li = wf_tcp_local_index(ctx, s);
    char from[120], to[80], via[120];
    unsigned bit = 1u << (li + 1);

    local_desc(ctx, li, from, sizeof(from));
    s->on_fallback = true;
    s->probe_at = 0;
    local_desc(ctx, wf_tcp_local_index(ctx, s), via, sizeof(via));
    wf_tcp_format_addr((struct sockaddr *)&p->addr[wf_tcp_remote_index(s)],
                       to, sizeof(to));
    snprintf(s->fb_note, sizeof(s->fb_note), " (fell back after %s "
             "could not reach %s: %s)", from, s->where, why);
    /* A big job has many peers: the first switch per local address at
     * info, the rest at debug. */
    if (!(ctx->fb_logged & bit))
        WEFT_INFO(NET, "tcp: %s cannot reach peer %d (%s: %s): stream %d "
                  "of %d uses %s -> %s (reached the rendezvous server)",
                  from, p->rank, s->where, why, s->idx, p->nstreams, via,
                  to);
    else
        WEFT_DEBUG(NET, "tcp: %s cannot reach peer %d (%s: %s): stream %d "
                   "uses %s -> %s", from, p->rank, s->where, why, s->idx,
                   via, to);
    ctx->fb_logged |= bit;
    s->retry_ms = WF_TCP_RETRY_MIN_MS;
}
