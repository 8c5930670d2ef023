/*
 * tcp_calls.h - what the files of the TCP transport call in each other,
 * file by file (tcp.h includes it; the objects are there).
 */
#ifndef WF_TCP_CALLS_H
#define WF_TCP_CALLS_H

#include <stdarg.h>

/* ---- tcp_init.c -------------------------------------------------------- */

weft_status_t wf_tcp_init(const wf_tconfig_t *cfg, wf_tctx_t **ctx);
void wf_tcp_fini(wf_tctx_t *ctx);
weft_status_t wf_tcp_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr);
weft_status_t wf_tcp_get_address(wf_tctx_t *ctx, void *addr, size_t *len);

/* ---- tcp_addr.c -------------------------------------------------------- */

/* Chooses ctx->local[0..nlocal) and ctx->ifname (see tcp_addr.c). */
weft_status_t wf_tcp_choose_addr(wf_tctx_t *ctx);
/* Parses a literal IPv4/IPv6 address (port 0). */
bool wf_tcp_parse_ip(const char *text, struct sockaddr_storage *ss,
                     socklen_t *len);
struct ifaddrs;
/* The addresses a comma list of interface names yields from `list`, at
 * most WF_TCP_IF_MAX, all of the first one's family, IPv4 preferred per
 * interface, IPv6 link-local never; returns how many, the first one's
 * interface name in `first`.  With `what` (the knob's name, for warnings)
 * it is the user's list: literal IPs are taken and interfaces need not be
 * up.  Without, it is the topology's list: only interfaces that are up
 * and not loopback count, quietly.  Pure: tests pass a made-up list. */
int wf_tcp_addrs_from_list(const struct ifaddrs *list, const char *spec,
                           const char *what, struct sockaddr_storage *ss,
                           socklen_t *len, char *first, size_t first_size);

/* ---- tcp_accept.c ------------------------------------------------------ */

void wf_tcp_accept_event(wf_tctx_t *ctx, wf_tcp_listener_t *l);
void wf_tcp_pending_event(wf_tctx_t *ctx, wf_tcp_pending_t *pc);
void wf_tcp_pending_close(wf_tctx_t *ctx, wf_tcp_pending_t *pc);
/* Drops handshakes past their deadline; returns the earliest remaining
 * deadline (0: none). */
uint64_t wf_tcp_pending_expire(wf_tctx_t *ctx, uint64_t now);
/* Watches the listening socket again after a pause (out of fds). */
void wf_tcp_listen_resume(wf_tctx_t *ctx, uint64_t now);

/* ---- tcp_conn.c -------------------------------------------------------- */

weft_status_t wf_tcp_connect(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len);
/* Stream s passed its handshake; with every stream up the peer is up and
 * queued sends go out. */
void wf_tcp_stream_up(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* "peer 3 (host:port)" into p->desc. */
void wf_tcp_peer_set_desc(wf_tcp_peer_t *p, const char *where);
/* The streams of a pair: WEFT_TCP_STREAMS when set, else one per
 * interface both ends listen on, min(local interfaces, the peer's), so
 * that listing two NICs uses both without a second setting.  Both ends
 * compute the same number; the acceptor also takes it from an
 * authenticated hello when it has not got the dialer's address yet. */
int wf_tcp_pair_streams(const wf_tctx_t *ctx, const wf_tcp_peer_t *p);
/* The streams in use with p: at least stream 0, which carries what is
 * queued before the number is known. */
static inline int wf_tcp_nstreams(const wf_tcp_peer_t *p)
{
    return p->nstreams > 0 ? p->nstreams : 1;
}
/* Options of every data connection, set on its socket before connect()
 * or after accept(): no Nagle, and the send buffer of WEFT_TCP_SNDBUF. */
void wf_tcp_socket_options(const wf_tctx_t *ctx, int fd);
/* ---- tcp_pacing.c: no pacing between ranks on one machine -------------- */
/* Before listen() or connect(): a socket whose congestion control paces
 * (BBR) takes one that does not.  Returns its name, or NULL when nothing
 * changed; `was` (when given and empty) receives the control the socket
 * had, the system's default. */
const char *wf_tcp_unpace_early(int fd, char *was, size_t was_len);
/* What a connected stream's congestion control `now` must become. */
typedef enum {
    WF_TCP_CC_KEEP,
    WF_TCP_CC_UNPACE,  /* a stream of this machine that still paces */
    WF_TCP_CC_RESTORE, /* a stream between machines that left the system's
                        * default `system_cc` before connecting */
} wf_tcp_cc_move_t;
wf_tcp_cc_move_t wf_tcp_cc_after_connect(const char *now,
                                         const char *system_cc,
                                         bool same_host_pair);
/* Applies wf_tcp_cc_after_connect to connected socket `fd`; returns the
 * control it selected, or NULL.  *late: it had to leave BBR after the
 * connection was established, where the kernel's pacing may go on. */
const char *wf_tcp_pacing_settle(int fd, const char *system_cc, bool *late);
/* Handles an event on a stream that is still being established. */
void wf_tcp_dial_event(wf_tctx_t *ctx, wf_tcp_stream_t *s, uint32_t events);
/* Runs due retries and deadlines, re-arms the timer fd. */
void wf_tcp_timers(wf_tctx_t *ctx);
/* Notes that something is due at `when` (absolute wf_time_ms). */
void wf_tcp_timer_schedule(wf_tctx_t *ctx, uint64_t when);
/* Fails a peer: logs once, closes its socket, fails its requests.  With
 * p->m.fail_unreported set beforehand the message is kept for the next
 * post (wf_match_peer_failed) instead of being logged now. */
void wf_tcp_peer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fails the peer of stream s, naming the stream when there are several. */
void wf_tcp_stream_fail(wf_tctx_t *ctx, wf_tcp_stream_t *s, weft_status_t st,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the stream's epoll interest: EPOLLIN unless its reader waits for a
 * striped header, plus EPOLLOUT when `out`. */
void wf_tcp_stream_watch(wf_tctx_t *ctx, wf_tcp_stream_t *s, bool out);

/* ---- tcp_fallback.c ---------------------------------------------------- */

/* The local address stream s dials from (index into ctx->local; -1: the
 * kernel chooses) and the peer address it dials (index into its addr). */
int wf_tcp_local_index(const wf_tctx_t *ctx, const wf_tcp_stream_t *s);
int wf_tcp_remote_index(const wf_tcp_stream_t *s);
/* Whether falling back would change s's path (it has not yet, and either
 * end has a fallback this stream does not use already). */
bool wf_tcp_can_fall_back(const wf_tctx_t *ctx, const wf_tcp_stream_t *s);
/* Marks s as on the fallback (its fd already closed), keeps `why` for a
 * later failure message and logs the switch; the caller redials. */
void wf_tcp_fallback_switch(wf_tctx_t *ctx, wf_tcp_stream_t *s,
                            const char *why);

/* ---- tcp_send.c, tcp_recv.c -------------------------------------------- */

weft_status_t wf_tcp_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req);
weft_status_t wf_tcp_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req);
/* The peer of a post, checked: a rank of the job other than this one,
 * and connect()ed (or connecting to us). */
static inline weft_status_t wf_tcp_peer_get(wf_tctx_t *ctx, int peer,
                                            wf_tcp_peer_t **out)
{
    WEFT_CHECK(wf_match_peer_check(&ctx->m, peer));
    wf_tcp_peer_t *p = &ctx->peers[peer];
    if (WF_UNLIKELY(!p->connect_called && p->state == WF_TCP_IDLE)) {
        WEFT_WARN(NET, "tcp: %s used before connect()", p->desc);
        return WEFT_ERR_INVALID_USAGE;
    }
    *out = p;
    return WEFT_OK;
}
/* Writes queued frames of a stream until the socket would block. */
void wf_tcp_flush(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* Reads and dispatches incoming frames until the socket would block. */
void wf_tcp_read(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* The matching layer's release hook: a striped send's pieces go. */
void wf_tcp_req_release(wf_match_t *m, wf_mreq_t *r);
/* The peer failed (p->m.fail_status): its queued frames fail, and so do
 * what its streams were reading and its posted receives; complete
 * unexpected messages stay deliverable. */
void wf_tcp_send_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p);
void wf_tcp_recv_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p);
/* Frees what p's send queues and readers hold (at context teardown,
 * before the matching layer's fini frees the requests and messages). */
void wf_tcp_send_free(wf_tcp_peer_t *p, int nstreams);
void wf_tcp_recv_free(wf_tctx_t *ctx, wf_tcp_peer_t *p);

/* ---- tcp_stripe.c ------------------------------------------------------ */

/* Queues the frames of a send: one frame on stream 0, or for a large
 * message with several streams a striped header on stream 0 and its
 * pieces over all streams.  False when out of memory. */
bool wf_tcp_stripe_queue(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_treq_t *r,
                         const uint64_t sig[2]);
/* Stream 0 read a striped header (fields in s->rx): match it. */
bool wf_tcp_stripe_header(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* A piece header is in s->rx: find its message, or wait for it. */
bool wf_tcp_piece_start(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* The current piece of s->rx is whole. */
void wf_tcp_piece_done(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* Fails or drops the striped messages being received from p. */
void wf_tcp_stripe_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st);
/* Bytes written and read on stream `idx` of `peer`, and the local and
 * remote addresses of its socket ("" when none); for tests and logs. */
weft_status_t wf_tcp_stream_stats(wf_tctx_t *ctx, int peer, int idx,
                                  uint64_t *out, uint64_t *in, char *local,
                                  char *remote, size_t size);
/* Logs every stream's counters at debug level (from fini). */
void wf_tcp_stream_log(wf_tctx_t *ctx);

/* ---- tcp_rate.c -------------------------------------------------------- */

/* Reads what each of p's streams delivers (at most once a millisecond). */
void wf_tcp_rates_refresh(wf_tcp_peer_t *p);
/* Cuts `len` bytes into pieces for n streams, pieces[k] for stream k (0
 * allowed), in proportion to rates[k] when those are known and differ,
 * else equal; piece ends at multiples of `align` but the last.  Returns
 * how many entries of pieces it filled (at most n). */
int wf_tcp_stripe_cut(size_t len, int n, const uint64_t *rates, size_t align,
                      size_t *pieces);

/* One frame of a send queue: header words and payload; `r` NULL for a
 * control frame (freed once written). */
void wf_tcp_unit_init(wf_tcp_sunit_t *u, wf_treq_t *r, uint64_t magic,
                      uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4,
                      const char *buf, size_t len);
void wf_tcp_unit_queue(wf_tcp_stream_t *s, wf_tcp_sunit_t *u);

/* ---- tcp_cma.c --------------------------------------------------------- */

/* The random cookie peers read to prove they can, and under Yama's
 * ptrace_scope 1 the permission for them to; WEFT_OK when off. */
weft_status_t wf_tcp_cma_init(wf_tctx_t *ctx);
/* This process's memory offer for the handshake of stream `idx` (zeros:
 * none, when off or not stream 0). */
void wf_tcp_cma_offer(const wf_tctx_t *ctx, int idx,
                      uint8_t out[WF_TCP_OFFER_LEN]);
/* The peer's offer from its handshake: reads its cookie, and on success
 * reads its single-copy messages from now on.  True when it can. */
bool wf_tcp_cma_take_offer(wf_tctx_t *ctx, wf_tcp_peer_t *p, int idx,
                           const uint8_t offer[WF_TCP_OFFER_LEN]);
/* The handshake's `reads` from the peer: it can read this process. */
void wf_tcp_cma_peer_reads(wf_tctx_t *ctx, wf_tcp_peer_t *p, int idx,
                           uint64_t reads);
/* Whether a send of `len` bytes to p goes as an RTS: the peer can read
 * this process and the message is large enough. */
bool wf_tcp_cma_sends(const wf_tctx_t *ctx, const wf_tcp_peer_t *p,
                      size_t len);
/* The transport's send_pulled(): wf_tcp_cma_sends for a valid peer. */
bool wf_tcp_send_pulled(wf_tctx_t *ctx, int peer, size_t len);
/* Queues send r as an RTS when wf_tcp_cma_sends; false when it goes the
 * usual way. */
bool wf_tcp_cma_queue(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_treq_t *r,
                      const uint64_t sig[2]);
/* A header on stream 0 that may be one of ours: 1 handled (an RTS's
 * trailer follows as payload), 0 the peer failed, -1 not a CMA frame. */
int wf_tcp_cma_header(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* The RTS trailer in s->rx is whole; false when the peer failed. */
bool wf_tcp_cma_trailer_done(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* The matching layer's claim_remote hook: receive r claims unexpected
 * message msg, an RTS whose payload is still in the sender's memory:
 * reads it straight into r and completes r. */
void wf_tcp_cma_claim(wf_match_t *m, wf_mmsg_t *msg, wf_mreq_t *r);
/* Reads the RTS that no receive claimed before this progress() call into
 * unexpected buffers, so that their senders complete. */
void wf_tcp_cma_flush(wf_tctx_t *ctx);
/* Fails the sends still waiting for their FIN. */
void wf_tcp_cma_fail(wf_tcp_peer_t *p, weft_status_t st);
/* Bytes read from `peer` by single copy, how many of its messages went
 * into an unexpected buffer first (NULL: not wanted), and whether each
 * side can read the other; for tests. */
weft_status_t wf_tcp_cma_stats(wf_tctx_t *ctx, int peer, uint64_t *read,
                               uint64_t *buffered, bool *readable, bool *ok);

/* ---- tcp_poll.c -------------------------------------------------------- */

int wf_tcp_progress(wf_tctx_t *ctx);
int wf_tcp_get_fd(wf_tctx_t *ctx);
/* A receive now waits on `peer`: while no other peer is awaited,
 * progress() reads its stream 0 without asking epoll first. */
void wf_tcp_hot_add(wf_tctx_t *ctx, int peer);

#endif /* WF_TCP_CALLS_H */
