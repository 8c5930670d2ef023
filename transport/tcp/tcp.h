/*
 * tcp.h - the TCP transport's objects: context, peers, streams, frames in
 * flight.  Wire formats are in tcp_wire.h, the calls between the files in
 * tcp_calls.h (included at the end); matching is transport/match.h's.
 * The files, by lifecycle phase:
 *   tcp_init.c  context create/fini, listen sockets, address blob, query
 *   tcp_addr.c  which local addresses (interface list, topology, hint)
 *   tcp_fallback.c  which address pair a dialing stream uses; falling
 *               back from a topology address that does not connect
 *   tcp_conn.c  dialing with retries, accepting, the handshake, timers,
 *               peer failure
 *   tcp_send.c  isend, framing, writing queued frames
 *   tcp_recv.c  irecv, reading frames into receives or unexpected ones
 *   tcp_poll.c  the epoll loop (progress, get_fd) and the ops table
 *   tcp_stripe.c  several streams per peer: cutting large messages into
 *               pieces, placing received pieces, per-stream counters
 *
 * Every fd of a context is registered in one epoll set.  epoll_event.data.ptr
 * points at a wf_tcp_ev_t embedded as the first member of the owning object,
 * whose `kind` says what the fd is.
 */
#ifndef WF_TCP_H
#define WF_TCP_H

#include <sys/types.h>

#include "match.h"
#include "tcp_wire.h"

/* progress() calls in a row with no event and no post before unclaimed
 * single-copy messages are read into buffers of their own (tcp_cma.c). */
#define WF_TCP_CMA_IDLE_CALLS 3
/* Stream 0's read-ahead buffer: a read takes up to this many bytes past
 * the frame it asked for (or, for a small frame, this many in all), so
 * that a header and a small payload after it cost one read. */
#define WF_TCP_AHEAD_LEN 4096
/* Reads of fewer bytes than this go into the read-ahead buffer alone, with
 * recv(), and are copied out (tcp_recv.c, read_frames). */
#define WF_TCP_AHEAD_RECV_MAX (WF_TCP_AHEAD_LEN / 2)
/* Queued frames of up to this many bytes in all are sent from one flat
 * copy with send() (tcp_send.c, send_gathered). */
#define WF_TCP_SMALL_SEND 1024
/* Awaited peers tracked for progress()'s direct read, and how often it
 * asks epoll anyway while it reads one directly: every so many calls (a
 * call whose read finished a message not counted), and at least every so
 * many calls in all (tcp_poll.c). */
#define WF_TCP_HOT 4
#define WF_TCP_EPOLL_EVERY 4
#define WF_TCP_EPOLL_MAX_SKIP 64
/* An incomplete handshake is dropped after this long. */
#define WF_TCP_HELLO_TIMEOUT_MS 3000
/* Accepted connections still in their handshake, at most: a port scan or a
 * flood of half-open sockets costs bounded memory and descriptors. */
#define WF_TCP_PENDING_MAX 64
/* Back-off between dial attempts, doubling from MIN to MAX. */
#define WF_TCP_RETRY_MIN_MS 10
#define WF_TCP_RETRY_MAX_MS 500

typedef enum {
    WF_TCP_EV_LISTEN, WF_TCP_EV_TIMER, WF_TCP_EV_STREAM, WF_TCP_EV_PENDING
} wf_tcp_ev_kind_t;

typedef struct wf_tcp_ev {
    wf_tcp_ev_kind_t kind;
} wf_tcp_ev_t;

/* One frame to write on one stream: a header and `len` payload bytes. */
typedef struct wf_tcp_sunit {
    struct wf_tcp_sunit *next; /* the stream's send queue */
    struct wf_treq *req;
    const char *buf;
    size_t len;  /* payload bytes of this frame */
    size_t done; /* bytes of header+payload written */
    uint8_t hdr[WF_TCP_HDR_LEN];
} wf_tcp_sunit_t;

/* A request; the fields after the head are a send's. */
struct wf_treq {
    wf_mreq_t m;            /* first: the matching layer's head */
    struct wf_treq *next;   /* the peer's RTS waiting for their FIN */
    int units_left;         /* frames not yet written whole */
    wf_tcp_sunit_t unit0;   /* the frame (or striped header) */
    wf_tcp_sunit_t *pieces; /* striped pieces (m.holds), NULL when not */
    bool cma_wait;          /* RTS out, waiting for the reader's FIN */
    uint64_t cma_seq;       /* the RTS's sequence number */
    uint8_t cma_trailer[WF_TCP_CMA_TRAILER]; /* the RTS's trailer */
};

/* An unexpected message; a single-copy one (m.remote: its payload still
 * in the sender's memory, no data) is read into the receive that claims
 * it, or into a buffer once the caller waits with nothing else to do
 * (tcp_cma.c). */
typedef struct wf_tcp_umsg {
    wf_mmsg_t m;
    uint64_t cma_addr, cma_seq;
} wf_tcp_umsg_t;

/* A striped message being received: its header came on stream 0 and was
 * matched like any message; its pieces land at their offsets. */
typedef struct wf_tcp_smsg {
    struct wf_tcp_smsg *next;
    uint64_t seq;
    size_t len;  /* message length */
    size_t left; /* payload bytes not yet received */
    char *dst;
    size_t cap; /* bytes that go to dst: min(len, capacity) */
    uint64_t sig[2];
    wf_mreq_t *req;  /* a posted receive, or */
    wf_mmsg_t *umsg; /* an unexpected buffer of `len` bytes */
} wf_tcp_smsg_t;

/* Receive state of one stream: a header, then the payload into a user
 * buffer (`req`), an unexpected buffer (`umsg`) or a striped message
 * (`smsg`, at the piece's offset), then surplus bytes of a truncated
 * message are discarded.  A piece whose striped header has not come yet
 * on stream 0 waits (`waiting`) with the stream unread. */
typedef struct wf_tcp_rx {
    uint8_t hdr[WF_TCP_HDR_LEN];
    size_t hdr_got;
    bool in_payload;
    bool waiting;
    uint64_t tag, sig[2];
    size_t len; /* message (or piece) length */
    char *dst;
    size_t dst_len; /* bytes that go to dst: min(len, capacity) */
    size_t got;     /* payload bytes consumed so far (dst + discard) */
    wf_mreq_t *req;
    wf_mmsg_t *umsg;
    wf_tcp_smsg_t *smsg;
    bool cma;       /* reading an RTS's trailer */
    size_t cma_len; /* the RTS's message length */
    uint8_t cma_trailer[WF_TCP_CMA_TRAILER];
}  wf_tcp_rx_t;

typedef enum {
    WF_TCP_IDLE,        /* nothing happened yet */
    WF_TCP_WAIT_ACCEPT, /* higher rank: waits for the peer to dial */
    WF_TCP_RETRY,       /* dialer: waits for the next attempt */
    WF_TCP_DIALING,     /* dialer: non-blocking connect in flight */
    WF_TCP_HELLO,       /* dialer: hello sent, waiting for the challenge */
    WF_TCP_PROOF,       /* dialer: proof sent, waiting for the reply */
    WF_TCP_UP,
    WF_TCP_FAILED
} wf_tcp_state_t;

struct wf_tcp_peer;

/* One TCP connection of a peer.  Stream 0 carries every message header,
 * so matching order is the post order; streams 1.. carry only pieces. */
typedef struct wf_tcp_stream {
    wf_tcp_ev_t ev; /* first member: epoll data points here */
    struct wf_tcp_peer *peer;
    int idx;
    int fd;
    wf_tcp_state_t state; /* RETRY..UP while dialing, UP, IDLE */
    uint32_t events;      /* the registered epoll interest */
    char where[100];      /* "127.0.0.1:40211" (remote; dialer: from local) */
    uint64_t retry_at;    /* next dial attempt, state RETRY */
    int retry_ms;
    int last_errno;
    bool on_fallback;     /* dialer: gave up on the topology's address */
    uint64_t probe_at;    /* dialer: fall back if not connected by then */
    char fb_note[300];    /* why it fell back, for a later failure */
    uint8_t hello[WF_TCP_HELLO_LEN]; /* dialer: the hello it sent */
    uint8_t reply[WF_TCP_CHALL_LEN]; /* challenge, then the final reply */
    size_t reply_got;
    wf_tcp_sunit_t *sendq, *sendq_tail;
    wf_tcp_rx_t rx;
    /* Stream 0's read-ahead (tcp_recv.c): bytes a read took past what the
     * reader asked for, consumed before the next read.  Stream 0 never
     * waits (tcp_stripe.c), so they are always consumed in the same call. */
    char *ahead;
    size_t ahead_off, ahead_len;
    uint64_t bytes_out, bytes_in; /* payload and headers, for tests/logs */
    uint64_t reads;               /* reads that returned bytes */
    uint64_t rate; /* bytes/s it delivers while busy, 0 unknown
                    * (tcp_rate.c) */
    uint64_t acked_seen, busy_seen; /* TCP_INFO at the last sample */
} wf_tcp_stream_t;

typedef struct wf_tcp_peer {
    wf_mpeer_t m; /* posted receives, unexpected messages, failure note */
    int rank;
    /* IDLE, WAIT_ACCEPT (acceptor, until every stream is adopted),
     * DIALING (dialer, until every stream is up), UP, FAILED */
    wf_tcp_state_t state;
    int nup;  /* streams up */
    int neof; /* streams the peer closed cleanly (between frames) */
    bool connect_called;
    bool have_addr;
    int naddr; /* the peer's listening addresses, then its fallback */
    bool has_fallback; /* addr[naddr] is the peer's fallback address */
    struct sockaddr_storage addr[WF_TCP_IF_MAX + 1];
    socklen_t addr_len[WF_TCP_IF_MAX + 1];
    char desc[128];    /* "peer 3 (127.0.0.1:40211)" */
    uint64_t deadline; /* establishment deadline (0 = none) */
    wf_tcp_smsg_t *smsgs; /* striped messages being received */
    uint64_t send_seq;    /* striped messages posted to the peer */
    uint64_t recv_seq;    /* striped headers received from it */
    bool cma_readable;    /* this side can read the peer's memory */
    bool cma_ok;          /* the peer can read ours: large sends are RTS */
    int cma_pid;          /* the peer's pid, when cma_readable */
    uint64_t cma_send_seq;     /* RTS sent to the peer */
    struct wf_treq *cma_sends; /* RTS sent, waiting for their FIN */
    uint64_t cma_bytes_read;   /* payload read from the peer's memory */
    uint64_t cma_buffered;     /* of its messages, read before a receive
                                * claimed them (a second copy) */
    int nstreams; /* this pair's streams, 0 until known (tcp_conn.c) */
    uint64_t rates_at; /* when the streams' rates were last read (ms) */
    wf_tcp_stream_t *streams; /* ctx->max_streams, nstreams of them used */
} wf_tcp_peer_t;

/* A listening socket, one per local interface. */
typedef struct wf_tcp_listener {
    wf_tcp_ev_t ev;
    int fd;
    bool paused; /* out of fds: not watched until ctx->listen_resume */
} wf_tcp_listener_t;

/* An accepted connection in its handshake: reading the hello, then (after
 * the challenge went out) reading the proof. */
typedef struct wf_tcp_pending {
    wf_tcp_ev_t ev;
    struct wf_tcp_pending *next;
    int fd;
    char remote[80]; /* "host:port" of the remote end */
    uint8_t hello[WF_TCP_HELLO_LEN];
    size_t got;
    bool challenged;
    int src;                          /* the rank the hello claims */
    uint8_t nonce[WF_TCP_NONCE_LEN];  /* ours, sent in the challenge */
    uint8_t proof[WF_TCP_PROOF_LEN];
    size_t proof_got;
    uint64_t deadline;
} wf_tcp_pending_t;

struct wf_tctx {
    wf_match_t m; /* first: requests, matching, the unexpected pool */
    wf_tconfig_t cfg;
    int epfd;
    /* The TCP knobs (tcp_params.def), read from the snapshot at init. */
    int max_streams;    /* allocated per peer: WEFT_TCP_STREAMS, else the
                         * local interfaces (wf_tcp_pair_streams) */
    bool streams_fixed; /* WEFT_TCP_STREAMS set: every pair uses it */
    size_t stripe_min;  /* messages of this size and more are striped */
    size_t cma_min;     /* single copy on one machine from this size, 0 off */
    size_t sndbuf;      /* SO_SNDBUF of each data connection, 0: kernel's */
    uint64_t cma_cookie; /* read by peers to prove they can (tcp_cma.c) */
    size_t cma_pending;  /* unexpected RTS the flush may still read */
    uint64_t posts_seen; /* m.posts when the last progress() returned */
    int idle_calls;      /* progress() calls in a row that found no event
                          * and followed no post: the caller is waiting */
    /* Peers receives wait on; while there is one, progress() reads its
     * stream 0 directly (tcp_poll.c).  hot_overflow: more were awaited
     * than hot[] holds.  polls_skipped: calls since the last epoll_wait
     * but those whose direct read finished a message; calls_unpolled: all
     * calls since. */
    int hot[WF_TCP_HOT];
    int nhot;
    bool hot_overflow;
    int polls_skipped;
    int calls_unpolled;
    int nlocal;         /* local interfaces streams bind to */
    int nlisten;        /* listeners: nlocal, +1 for a separate fallback */
    int fallback;       /* local[] index of the fallback address, -1 none */
    unsigned fb_logged; /* local indexes whose fallback was logged */
    int probe_ms;       /* WF_TCP_PROBE_MS, at most timeout_ms / 4 */
    wf_tcp_listener_t listen[WF_TCP_IF_MAX + 1];
    wf_tcp_ev_t timer_ev;
    int timer_fd;
    uint64_t timer_due;     /* earliest timed event, 0 = none */
    uint64_t timer_armed;   /* what timer_fd is armed for, 0 = disarmed */
    bool timer_fired;       /* timer_fd expired in this progress() batch */
    uint64_t listen_resume; /* accept paused (out of fds) until then */
    bool listen_warned;
    struct sockaddr_storage local[WF_TCP_IF_MAX + 1]; /* listening */
    socklen_t local_len[WF_TCP_IF_MAX + 1];
    char local_name[WF_TCP_IF_MAX + 1][32]; /* their interfaces, or "" */
    char ifname[64];    /* the first interface's name */
    char local_str[80]; /* "127.0.0.1:40211" (the first; "+N" more) */
    uint8_t blob[WF_TCP_ADDR_LEN(WF_TCP_IF_MAX + 1)];
    size_t blob_len;
    wf_tcp_peer_t *peers; /* cfg.size entries */
    wf_tcp_pending_t *pending;
    size_t npending;
    uint64_t msgs_read;      /* whole messages read from a stream 0 */
    char *scratch;       /* sink for discarded bytes (wf_topo_mem_alloc) */
    size_t scratch_len;
    /* The congestion control sockets had before wf_tcp_unpace_early (the
     * system's default), restored on streams between machines. */
    char cc_default[16];
    /* Streams of this machine that left BBR only once connected (the early
     * switch was refused): their pacing may go on (tests, logs). */
    int cc_late;
};

#include "tcp_calls.h"

#endif /* WF_TCP_H */
