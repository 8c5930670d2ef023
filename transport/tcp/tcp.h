/*
 * tcp.h - private structures of the TCP transport.
 *
 * The transport is split by lifecycle phase:
 *   tcp_init.c  context create/fini, listen sockets, address blob, query
 *   tcp_addr.c  which local addresses (interface list, topology, hint)
 *   tcp_fallback.c  which address pair a dialing stream uses; falling
 *               back from a topology address that does not connect
 *   tcp_conn.c  dialing with retries, accepting, the handshake, timers,
 *               peer failure
 *   tcp_xfer.c  isend/irecv/test, framing, tag matching, unexpected
 *               messages
 *   tcp_poll.c  the epoll loop (progress, get_fd) and the ops table
 *   tcp_stripe.c  several streams per peer: cutting large messages into
 *               pieces, placing received pieces, per-stream counters
 *
 * Every fd of a context is registered in one epoll set.  epoll_event.data.ptr
 * points at a wf_tcp_ev_t embedded as the first member of the owning object,
 * whose `kind` says what the fd is.
 *
 * Wire formats are little-endian byte arrays encoded field by field, so the
 * layout does not depend on struct padding or host byte order.
 */
#ifndef WF_TCP_H
#define WF_TCP_H

#include <endian.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common.h"
#include "transport.h"

/* ---- wire formats ------------------------------------------------------ */

/* Version 2: the handshake proves the job secret (version 1 did not).
 * Version 3: several streams per peer (the hello's flags name the stream),
 * striped frames, and an address blob with one address per interface.
 * Version 4: single-copy messages between ranks on one machine: memory
 * offers in the handshake, RTS and FIN frames (tcp_cma.c). */
#define WF_TCP_VERSION 4u
#define WF_TCP_HELLO_MAGIC 0x324f4c4c45485457ull /* "WTHELLO2" */
#define WF_TCP_CHALL_MAGIC 0x324c4c4148435457ull /* "WTCHALL2" */
#define WF_TCP_PROOF_MAGIC 0x32464f4f52505457ull /* "WTPROOF2" */
#define WF_TCP_REPLY_MAGIC 0x32594c5045525457ull /* "WTREPLY2" */
#define WF_TCP_FRAME_MAGIC 0x314d415246545700ull /* "\0WTFRAM1" */
/* Header of a striped message (stream 0 only, no payload follows): the
 * same fields as a frame; the payload comes as pieces. */
#define WF_TCP_STRIPE_MAGIC 0x31505254535457ull /* "WTSTRP1\0" */
/* One piece of a striped message, on any stream: magic u64, seq u64 (the
 * striped message's number between this pair of ranks, in post order),
 * offset u64, len u64, 0 u64; `len` payload bytes follow. */
#define WF_TCP_PIECE_MAGIC 0x31434549505457ull /* "WTPIEC1\0" */
/* Single copy on one machine (tcp_cma.c), stream 0 only, 40-byte headers:
 * RTS {tag, sig[0], sig[1], message length} and a 16-byte trailer
 * {buffer address, sequence number}, FIN {sequence number, errno, 0, 0}. */
#define WF_TCP_CMA_RTS_MAGIC 0x315354525f4d43ull  /* "CM_RTS1\0" */
#define WF_TCP_CMA_FIN_MAGIC 0x314e49465f4d43ull  /* "CM_FIN1\0" */
#define WF_TCP_CMA_TRAILER 16
/* progress() calls in a row with no event and no post before unclaimed
 * single-copy messages are read into buffers of their own (tcp_cma.c). */
#define WF_TCP_CMA_IDLE_CALLS 3

/*
 * The handshake, dialer D (lower rank) to acceptor A:
 *   D->A hello:     magic u64, version u32, flags u32 (bits 0-7: stream
 *                   index, 8-15: streams per peer - 1), job_key u64,
 *                   comm_key u64, src_rank u32, dst_rank u32, nonce_d[16],
 *                   offer_d[32]
 *   A->D challenge: magic u64, version u32, verdict u32, nonce_a[16],
 *                   mac_a[32] = HMAC(secret, "weft-tcp-acceptor" || hello
 *                   || nonce_a), offer_a[32]
 *   D->A proof:     magic u64, mac_d[32] = HMAC(secret, "weft-tcp-dialer"
 *                   || hello || nonce_a), reads u64
 *   A->D reply:     magic u64, version u32, verdict u32, reads u64
 * An offer (stream 0 only, zero elsewhere or when off) lets the other side
 * read this process's memory: pid u64, cookie address u64, cookie value
 * u64, node key u64; `reads` is 1 when the sender of the proof or reply
 * read the other side's cookie, so the other side may send it RTS frames
 * (tcp_cma.c).  The offers and `reads` are outside the MACs: a forged one
 * can only make a side read into its own receive buffers what the
 * unauthenticated data stream could carry anyway (design.md).
 * Each side proves the job secret bound to this connection's ranks,
 * communicator and fresh nonces, so a recorded handshake cannot be
 * replayed and the secret never travels.  A challenge with a verdict other
 * than WF_TCP_ACCEPT carries zero nonce and MAC and ends the connection.
 */
#define WF_TCP_NONCE_LEN 16
#define WF_TCP_MAC_LEN 32
#define WF_TCP_OFFER_LEN 32
#define WF_TCP_HELLO_LEN (40 + WF_TCP_NONCE_LEN + WF_TCP_OFFER_LEN)
#define WF_TCP_CHALL_LEN (16 + WF_TCP_NONCE_LEN + WF_TCP_MAC_LEN + \
                          WF_TCP_OFFER_LEN)
#define WF_TCP_PROOF_LEN (16 + WF_TCP_MAC_LEN)
#define WF_TCP_REPLY_LEN 24
/* frame header: magic u64, tag u64, sig[0] u64, sig[1] u64, len u64 */
#define WF_TCP_HDR_LEN 40
/* Stream 0's read-ahead buffer: a read takes up to this many bytes past
 * the frame it asked for (or, for a small frame, this many in all), so
 * that a header and a small payload after it cost one read. */
#define WF_TCP_AHEAD_LEN 4096
/* Reads of fewer bytes than this go into the read-ahead buffer alone, with
 * recv(), and are copied out (tcp_xfer.c, read_frames). */
#define WF_TCP_AHEAD_RECV_MAX (WF_TCP_AHEAD_LEN / 2)
/* Queued frames of up to this many bytes in all are sent from one flat
 * copy with send() (tcp_xfer.c, send_gathered). */
#define WF_TCP_SMALL_SEND 1024
/* Finished requests kept for reuse (tcp_xfer.c); under AddressSanitizer
 * none, so that a use after free still shows. */
#if defined(__SANITIZE_ADDRESS__)
#define WF_TCP_SPARE_REQS 0
#else
#define WF_TCP_SPARE_REQS 64
#endif
/* Awaited peers tracked for progress()'s direct read, and how often it
 * asks epoll anyway while it reads one directly: every so many calls (a
 * call whose read finished a message not counted), and at least every so
 * many calls in all (tcp_poll.c). */
#define WF_TCP_HOT 4
#define WF_TCP_EPOLL_EVERY 4
#define WF_TCP_EPOLL_MAX_SKIP 64

/* Handshake verdicts; the reasons travel in the challenge or reply so the
 * dialer can say why it was turned away. */
typedef enum {
    WF_TCP_ACCEPT = 0,
    WF_TCP_REJ_VERSION = 1,
    WF_TCP_REJ_JOB_KEY = 2,
    WF_TCP_REJ_COMM_KEY = 3,
    WF_TCP_REJ_DST_RANK = 4,
    WF_TCP_REJ_SRC_RANK = 5,
    WF_TCP_REJ_DUPLICATE = 6,
    WF_TCP_REJ_AUTH = 7,
    WF_TCP_REJ_BUSY = 8,
    WF_TCP_REJ_STREAMS = 9,
    WF_TCP_REJ_COUNT
} wf_tcp_verdict_t;

/* Address blob: version u8, count u8, 0 u16, then `count` entries of
 * family u8 (4 or 6), flags u8, port u16 (big endian), 16 bytes of IP
 * (IPv4 in the first 4): one per local interface, in WEFT_SOCKET_IFNAME
 * (or topology) order, then, when the interfaces came from the topology,
 * one more flagged WF_TCP_ADDR_FALLBACK: the address that reached the
 * rendezvous server, which streams fall back to when a topology address
 * does not connect (tcp_conn.c). */
#define WF_TCP_ADDR_HDR 4
#define WF_TCP_ADDR_ENTRY 20
#define WF_TCP_ADDR_FALLBACK 1u
/* Interfaces (listening addresses) per context, besides the fallback;
 * streams per peer. */
#define WF_TCP_IF_MAX 4
#define WF_TCP_STREAMS_MAX 16
/* Unexpected-message buffers of WF_TCP_SPARE_MIN to WF_TCP_SPARE_MAX
 * bytes kept per context for reuse: at most WF_TCP_SPARES of them and
 * WF_TCP_SPARE_BYTES in all.  Sized by count alone (8) the pool ran dry
 * on 4 ranks at 64 MiB, where 100-300 chunks of 256 KiB a rank and call
 * arrive before their receive (docs/performance.md). */
#define WF_TCP_SPARES 128
#define WF_TCP_SPARE_BYTES (32u << 20)
#define WF_TCP_SPARE_MIN (128u << 10)
#define WF_TCP_SPARE_MAX (4u << 20)
#define WF_TCP_ADDR_LEN(n) ((size_t)(WF_TCP_ADDR_HDR + WF_TCP_ADDR_ENTRY * (n)))
/* A dial over a topology-chosen address that has not connected after
 * this long (at most a quarter of the connect timeout) falls back. */
#define WF_TCP_PROBE_MS 2000
/* Striped messages are cut in pieces of at least this many bytes. */
#define WF_TCP_STRIPE_DEFAULT (64u << 10)

/* An incomplete handshake is dropped after this long. */
#define WF_TCP_HELLO_TIMEOUT_MS 3000
/* Accepted connections still in their handshake, at most: a port scan or a
 * flood of half-open sockets costs bounded memory and descriptors. */
#define WF_TCP_PENDING_MAX 64
/* Back-off between dial attempts, doubling from MIN to MAX. */
#define WF_TCP_RETRY_MIN_MS 10
#define WF_TCP_RETRY_MAX_MS 500
/* How long accepting pauses when the process is out of fds. */
#define WF_TCP_ACCEPT_PAUSE_MS 200

/* Header words are little-endian on the wire.  One load or store each
 * (a byte loop here was 600 of an 8-byte allreduce's 7,200 instructions:
 * the compiler did not merge it). */
static inline void wf_tcp_put32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void wf_tcp_put64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint32_t wf_tcp_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static inline uint64_t wf_tcp_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

/* ---- objects ----------------------------------------------------------- */

typedef enum {
    WF_TCP_EV_LISTEN,
    WF_TCP_EV_TIMER,
    WF_TCP_EV_STREAM,
    WF_TCP_EV_PENDING
} wf_tcp_ev_kind_t;

typedef struct wf_tcp_ev {
    wf_tcp_ev_kind_t kind;
} wf_tcp_ev_t;

typedef enum { WF_TCP_REQ_SEND, WF_TCP_REQ_RECV } wf_tcp_req_kind_t;

/* One frame to write on one stream: a header and `len` payload bytes. */
typedef struct wf_tcp_sunit {
    struct wf_tcp_sunit *next; /* the stream's send queue */
    struct wf_treq *req;
    const char *buf;
    size_t len;  /* payload bytes of this frame */
    size_t done; /* bytes of header+payload written */
    uint8_t hdr[WF_TCP_HDR_LEN];
} wf_tcp_sunit_t;

struct wf_treq {
    struct wf_treq *next;                /* posted list */
    struct wf_treq *all_prev, *all_next; /* every live request of the ctx */
    wf_tcp_req_kind_t kind;
    int peer;
    uint64_t tag;
    char *buf;
    size_t len;  /* send: message length; recv: buffer capacity */
    int units_left;         /* send: frames not yet written whole */
    wf_tcp_sunit_t unit0;   /* send: the frame (or striped header) */
    wf_tcp_sunit_t *pieces; /* send: striped pieces, NULL when not */
    bool cma_wait;          /* send: RTS out, waiting for the reader's FIN */
    uint64_t cma_seq;       /* send: the RTS's sequence number */
    uint8_t cma_trailer[WF_TCP_CMA_TRAILER]; /* send: the RTS's trailer */
    weft_status_t status;   /* WEFT_INPROGRESS until complete */
    wf_treq_info_t info;
};

/* A message that arrived before its receive was posted. */
typedef struct wf_tcp_umsg {
    struct wf_tcp_umsg *next;
    uint64_t tag;
    uint64_t sig[2];
    size_t len;
    bool complete;          /* all payload bytes are in `data` */
    struct wf_treq *waiter; /* a receive matched it before it completed */
    char *data;             /* grows with the bytes received (rx_grow) */
    size_t cap;             /* bytes data holds; 0: not from the pool */
    struct wf_tctx *ctx;    /* whose pool data returns to (umsg_free) */
    /* A single-copy message whose payload is still in the sender's
     * memory (NULL data): read into the receive that claims it, or into
     * `data` once the caller waits with nothing else to do (tcp_cma.c). */
    bool cma_pending;
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
    struct wf_treq *req;  /* a posted receive, or */
    wf_tcp_umsg_t *umsg;  /* an unexpected buffer of `len` bytes */
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
    struct wf_treq *req;
    wf_tcp_umsg_t *umsg;
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
    /* Stream 0's read-ahead (tcp_xfer.c): bytes a read took past what the
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
    weft_status_t fail_status;
    bool fail_unreported; /* failed quietly; warn on the next post */
    char fail_msg[400];
    struct wf_treq *posted, *posted_tail;
    wf_tcp_umsg_t *unexp, *unexp_tail;
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
    wf_tconfig_t cfg;
    int epfd;
    int max_streams;    /* allocated per peer: WEFT_TCP_STREAMS, else the
                         * local interfaces (wf_tcp_pair_streams) */
    bool streams_fixed; /* WEFT_TCP_STREAMS set: every pair uses it */
    size_t stripe_min;  /* messages of this size and more are striped */
    size_t cma_min;     /* single copy on one machine from this size, 0 off */
    uint64_t cma_cookie; /* read by peers to prove they can (tcp_cma.c) */
    size_t cma_pending;  /* unexpected RTS the flush may still read */
    uint64_t posts;      /* isend/irecv calls so far */
    uint64_t posts_seen; /* posts when the last progress() returned */
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
    struct wf_treq *all; /* every live request, for fini */
    /* Finished requests kept for the next posts (tcp_xfer.c): an 8-byte
     * allreduce posts two, and their calloc and free were a tenth of its
     * user-space instructions. */
    struct wf_treq *spare_reqs;
    int nspare_reqs;
    uint64_t unexp_arrivals; /* unexpected messages ever (scan_unexpected) */
    uint64_t msgs_read;      /* whole messages read from a stream 0 */
    char *scratch;       /* sink for discarded bytes (wf_topo_mem_alloc) */
    /* Freed unexpected-message buffers kept for the next ones
     * (wf_tcp_umsg_free): back-to-back collectives read the next call's
     * chunks early, and fresh 128 KiB+ blocks are mapped and faulted in
     * anew every time (docs/performance.md). */
    char *spare[WF_TCP_SPARES];
    size_t spare_cap[WF_TCP_SPARES];
    int nspare;
    size_t spare_bytes; /* the sum of spare_cap */
    size_t scratch_len;
    /* The congestion control sockets had before wf_tcp_unpace_early (the
     * system's default), restored on streams between machines. */
    char cc_default[16];
    /* Streams of this machine that left BBR only once connected (the early
     * switch was refused): their pacing may go on (tests, logs). */
    int cc_late;
};

/* ---- tcp_init.c -------------------------------------------------------- */

weft_status_t wf_tcp_init(const wf_tconfig_t *cfg, wf_tctx_t **ctx);
void wf_tcp_fini(wf_tctx_t *ctx);
weft_status_t wf_tcp_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr);
weft_status_t wf_tcp_get_address(wf_tctx_t *ctx, void *addr, size_t *len);
/* Formats an address as "1.2.3.4:5" or "[::1]:5". */
void wf_tcp_format_addr(const struct sockaddr *sa, char *out, size_t size);
/* Decodes an address blob into at most WF_TCP_IF_MAX addresses (*count)
 * and, with *fallback set, the fallback address after them (arrays of
 * WF_TCP_IF_MAX + 1); false when malformed. */
bool wf_tcp_blob_decode(const void *blob, size_t len,
                        struct sockaddr_storage *ss, socklen_t *ss_len,
                        int *count, bool *fallback);

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

/* ---- tcp_hs.c ---------------------------------------------------------- */

/* Encodes a hello without an offer; shared with the tests. */
void wf_tcp_hello_encode(uint8_t out[WF_TCP_HELLO_LEN], uint64_t job_key,
                         uint64_t comm_key, int src_rank, int dst_rank,
                         const uint8_t nonce[WF_TCP_NONCE_LEN]);
/* The hello of stream `idx` of `nstreams` (the above is stream 0 of 1),
 * with a memory offer (NULL: none). */
void wf_tcp_hello_encode_stream(uint8_t out[WF_TCP_HELLO_LEN],
                                uint64_t job_key, uint64_t comm_key,
                                int src_rank, int dst_rank, int idx,
                                int nstreams,
                                const uint8_t nonce[WF_TCP_NONCE_LEN],
                                const uint8_t *offer);
/* mac = HMAC(secret, role || hello || nonce_a), role WF_TCP_ROLE_*. */
#define WF_TCP_ROLE_ACCEPTOR "weft-tcp-acceptor"
#define WF_TCP_ROLE_DIALER "weft-tcp-dialer"
weft_status_t wf_tcp_hs_mac(const uint8_t secret[32], const char *role,
                            const uint8_t hello[WF_TCP_HELLO_LEN],
                            const uint8_t nonce_a[WF_TCP_NONCE_LEN],
                            uint8_t mac[WF_TCP_MAC_LEN]);
/* A challenge (nonce, mac and offer NULL for a rejection; offer NULL for
 * none), a proof, a reply; `reads`: this side can read the other's
 * memory. */
void wf_tcp_chall_encode(uint8_t out[WF_TCP_CHALL_LEN], uint32_t verdict,
                         const uint8_t *nonce, const uint8_t *mac,
                         const uint8_t *offer);
void wf_tcp_proof_encode(uint8_t out[WF_TCP_PROOF_LEN],
                         const uint8_t mac[WF_TCP_MAC_LEN], bool reads);
void wf_tcp_reply_encode(uint8_t out[WF_TCP_REPLY_LEN], uint32_t verdict,
                         bool reads);
/* "job key mismatch (...)" etc. */
const char *wf_tcp_verdict_str(uint32_t verdict);

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
 * p->fail_unreported set beforehand the message is kept for the next post
 * instead of being logged now. */
void wf_tcp_peer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The status of a post to a failed peer; warns now if the failure was
 * kept quiet (see wf_tcp_peer_fail). */
weft_status_t wf_tcp_peer_failed(wf_tcp_peer_t *p);
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

/* ---- tcp_xfer.c -------------------------------------------------------- */

weft_status_t wf_tcp_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req);
weft_status_t wf_tcp_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req);
weft_status_t wf_tcp_test(wf_tctx_t *ctx, wf_treq_t *req, wf_treq_info_t *info);
/* Writes queued frames of a stream until the socket would block. */
void wf_tcp_flush(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* Reads and dispatches incoming frames until the socket would block. */
void wf_tcp_read(wf_tctx_t *ctx, wf_tcp_stream_t *s);
/* A receive now waits on `peer`: while no other peer is awaited,
 * progress() reads its stream 0 without asking epoll first. */
void wf_tcp_hot_add(wf_tctx_t *ctx, int peer);
void wf_tcp_req_done(wf_treq_t *r, weft_status_t st);
/* Unlinks and returns the first posted receive with `tag`. */
wf_treq_t *wf_tcp_take_posted(wf_tcp_peer_t *p, uint64_t tag);
void wf_tcp_umsg_free(wf_tcp_umsg_t *m);
/* A whole message arrived for receive r, or into unexpected buffer m
 * (delivered now if a receive already claimed it). */
void wf_tcp_msg_done(wf_treq_t *r, wf_tcp_umsg_t *m, size_t len,
                     const uint64_t sig[2]);
/* Copies a complete unexpected message into a receive and completes it. */
void wf_tcp_deliver(wf_treq_t *r, const wf_tcp_umsg_t *m);
void wf_tcp_unlink_unexp(wf_tcp_peer_t *p, wf_tcp_umsg_t *m,
                         wf_tcp_umsg_t *prev);
/* Appends a new unexpected message for the header in rx; NULL when out of
 * memory.  `cap` bytes of buffer to start with. */
wf_tcp_umsg_t *wf_tcp_umsg_new(wf_tctx_t *ctx, wf_tcp_peer_t *p,
                               const wf_tcp_rx_t *rx, size_t cap);
/* The same without a buffer (data NULL). */
wf_tcp_umsg_t *wf_tcp_umsg_new_empty(wf_tctx_t *ctx, wf_tcp_peer_t *p,
                                     const wf_tcp_rx_t *rx);
/* A buffer for an unexpected message of at least `cap` bytes, its size
 * in *have: from the context's pool when it keeps one that large, else
 * fresh; NULL when out of memory. */
char *wf_tcp_unexp_buffer(wf_tctx_t *ctx, size_t cap, size_t *have);
/* Frees the buffers kept by wf_tcp_umsg_free (at context teardown). */
void wf_tcp_spares_free(wf_tctx_t *ctx);
/* Fails the peer's pending requests and drops partial messages; complete
 * unexpected messages stay deliverable. */
void wf_tcp_xfer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p);
/* Frees every request and unexpected message of the context. */
void wf_tcp_xfer_free_all(wf_tctx_t *ctx);

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
void wf_tcp_piece_done(wf_tcp_stream_t *s);
/* Fails or drops the striped messages being received from p. */
void wf_tcp_stripe_fail(wf_tcp_peer_t *p, weft_status_t st);
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
/* Whether the content of /proc/sys/kernel/yama/ptrace_scope is scope 1,
 * the one a process can lift for its peers (PR_SET_PTRACER). */
bool wf_tcp_cma_yama_restricts(const char *ptrace_scope);
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
/* Reads the 8-byte cookie at `addr` in process `pid`: 0 when it reads
 * `want`, else the errno (EPERM for another value). */
int wf_tcp_cma_probe(pid_t pid, uint64_t addr, uint64_t want);
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
/* Receive r claims unexpected message m, an RTS whose payload is still
 * in the sender's memory: reads it straight into r and completes r. */
void wf_tcp_cma_claim(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_tcp_umsg_t *m,
                      struct wf_treq *r);
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

#endif /* WF_TCP_H */
