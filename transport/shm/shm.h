/*
 * shm.h - the shared-memory transport's objects: the context, its peers
 * and requests, and the calls between its files.
 *
 * Files: shm_init.c (context, address, query, the ops table), shm_conn.c
 * (the Unix-socket handshake that sets a pair up, peer failure),
 * shm_send.c and shm_recv.c (the rings), shm_poll.c (progress, waking).
 * The wire format is in shm_wire.h.
 */
#ifndef WF_SHM_H
#define WF_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "match.h"
#include "shm_wire.h"
#include "transport.h"

enum wf_shm_state {
    WF_SHM_NONE = 0,  /* not connected */
    WF_SHM_DIALING,   /* dialer: HELLO sent, waiting for CHALL */
    WF_SHM_PROVING,   /* dialer: PROOF sent, waiting for READY */
    WF_SHM_ACCEPTING, /* acceptor: CHALL sent, waiting for PROOF */
    WF_SHM_UP,
    WF_SHM_FAILED,
};

/* One direction of a pair, as this side sees it. */
typedef struct wf_shm_ring {
    wf_shm_ring_ctl_t *ctl;
    char *slots;
    uint64_t pos;  /* producer: next slot to fill; consumer: next to take */
    uint64_t tail; /* producer: last tail read from ctl */
    uint64_t taken; /* consumer: slots taken but not yet published */
} wf_shm_ring_t;

/* A receive that a message's pieces (FIRST, MORE) are going into. */
typedef struct wf_shm_rx {
    bool active;
    wf_mreq_t *req;   /* into a posted receive, or */
    wf_mmsg_t *umsg;  /* into an unexpected message */
    size_t got, total;
    uint64_t sig[2];
} wf_shm_rx_t;

struct wf_treq;

typedef struct wf_shm_peer {
    wf_mpeer_t m;
    int idx;
    int state; /* enum wf_shm_state */
    int fd;    /* the pair's socket: handshake, then liveness */
    int efd;   /* the peer's eventfd, to wake it */
    bool dialer;
    bool addr_known;
    wf_shm_addr_t addr;
    uint64_t deadline_ms; /* of the handshake */
    uint8_t nonce[WF_SHM_NONCE_LEN]; /* ours, in HELLO or CHALL */
    wf_shm_pkt_t hello; /* as sent or received: the MACs cover it */
    char *seg;
    size_t seg_len;
    uint32_t slots;
    wf_shm_ring_t tx, rx;
    bool pull_ok;   /* the peer reads our memory: large sends go as RTS */
    bool i_read;    /* we can read the peer's memory */
    pid_t pid;
    struct wf_treq *sq, *sq_tail;  /* sends with slots still to fill */
    struct wf_treq *rts;           /* RTS sends waiting for their FIN */
    uint64_t rts_next;             /* the id of the next RTS */
    uint64_t *fins;                /* FINs to send: (id << 32 | errno) */
    size_t nfins, fins_cap;
    wf_shm_rx_t in;
    int remote_unexp; /* unexpected RTS messages not yet pulled */
    bool gone;        /* a read found the process gone: failed once the
                       * ring is drained */
    char desc[96];
} wf_shm_peer_t;

struct wf_treq {
    wf_mreq_t m;
    uint64_t sig[2];
    size_t off; /* send: bytes written into slots so far */
    bool started;
    uint64_t rts_id;
    struct wf_treq *next_q; /* sq or rts list */
};

/* An unexpected message: RTS ones keep where the payload is. */
typedef struct wf_shm_msg {
    wf_mmsg_t m;
    uint64_t addr, id;
    uint64_t round; /* progress() call it arrived in */
} wf_shm_msg_t;

/* A connection accepted, before its HELLO names the peer. */
typedef struct wf_shm_pending {
    int fd;
    uint64_t deadline_ms;
} wf_shm_pending_t;

#define WF_SHM_MAX_PENDING 64

/* What an event of the context's epoll set is about: the kind in the
 * upper 32 bits, a peer or pending slot in the lower. */
#define WF_SHM_KEY_LISTEN (0ull << 32)
#define WF_SHM_KEY_WAKE (1ull << 32)
#define WF_SHM_KEY_PEER (2ull << 32)
#define WF_SHM_KEY_PENDING (3ull << 32)

struct wf_tctx {
    wf_match_t m; /* first: match.h */
    int rank, size;
    uint64_t job_key, comm_key;
    uint8_t secret[32];
    int64_t timeout_ms;
    size_t cma_min; /* WEFT_SHM_CMA_MIN; 0: never */
    uint32_t slots; /* WEFT_SHM_SLOTS */
    wf_shm_addr_t addr;
    int lfd;  /* listening socket */
    int efd;  /* our eventfd: peers write it to wake us */
    int epfd; /* lfd, efd and every pair's socket: get_fd() */
    uint64_t cookie; /* what a peer's cma probe reads */
    uint64_t round, tick;
    uint64_t posts_seen; /* m.posts when the last progress() returned */
    int idle_calls;      /* progress() calls in a row with nothing done */
    bool armed;       /* wait_prepare ran since the last progress */
    int handshakes;   /* pairs in their handshake, and pending accepts */
    wf_shm_pending_t pend[WF_SHM_MAX_PENDING];
    int npend;
    int *up; /* indices of the peers that are up */
    int nup;
    wf_shm_peer_t *peers;
};

/* ---- shm_init.c -------------------------------------------------------- */
bool wf_shm_probe(char *why, size_t why_len);

/* ---- shm_conn.c -------------------------------------------------------- */
weft_status_t wf_shm_connect(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len);
void wf_shm_accept(wf_tctx_t *ctx);
void wf_shm_sock_event(wf_tctx_t *ctx, wf_shm_peer_t *p, uint32_t events);
void wf_shm_pending_event(wf_tctx_t *ctx, int slot);
void wf_shm_check_deadlines(wf_tctx_t *ctx);
/* Fails the peer: logs the cause once, fails what is pending with it. */
void wf_shm_peer_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void wf_shm_peer_close(wf_tctx_t *ctx, wf_shm_peer_t *p);

/* ---- shm_send.c -------------------------------------------------------- */
weft_status_t wf_shm_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req);
bool wf_shm_send_pulled(wf_tctx_t *ctx, int peer, size_t len);
/* Fills slots from the peer's queues; returns the slots filled. */
int wf_shm_tx_pump(wf_tctx_t *ctx, wf_shm_peer_t *p);
void wf_shm_fin_queue(wf_tctx_t *ctx, wf_shm_peer_t *p, uint64_t id, int err);
void wf_shm_fin_arrived(wf_tctx_t *ctx, wf_shm_peer_t *p, uint64_t id,
                        int err);
void wf_shm_send_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st);
/* Wakes the peer if it sleeps waiting for what we just published. */
void wf_shm_tx_wake(wf_shm_peer_t *p);

/* ---- shm_recv.c -------------------------------------------------------- */
weft_status_t wf_shm_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req);
/* Takes what the peer published; returns the slots taken. */
int wf_shm_rx_drain(wf_tctx_t *ctx, wf_shm_peer_t *p);
/* Reads unexpected RTS messages of earlier rounds into buffers; the
 * caller does so only once the rank has had nothing else to do for
 * WF_SHM_IDLE_CALLS calls of progress() in a row, as tcp's single copy
 * does (docs/transports.md): a busy rank is about to post their
 * receives, and reading them early costs a second copy. */
#define WF_SHM_IDLE_CALLS 3
void wf_shm_pull_unclaimed(wf_tctx_t *ctx, wf_shm_peer_t *p);
void wf_shm_claim_remote(wf_match_t *m, wf_mmsg_t *msg, wf_mreq_t *r);
bool wf_shm_rx_pending(const wf_shm_peer_t *p);
void wf_shm_recv_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st);

/* ---- shm_poll.c -------------------------------------------------------- */
int wf_shm_progress(wf_tctx_t *ctx);
bool wf_shm_wait_prepare(wf_tctx_t *ctx);
void wf_shm_wake(int efd);

static inline wf_shm_slot_t *wf_shm_slot(const wf_shm_ring_t *r,
                                         uint32_t slots, uint64_t pos)
{
    return (wf_shm_slot_t *)(void *)(r->slots + (size_t)(pos & (slots - 1)) *
                                                    WF_SHM_SLOT_BYTES);
}

static inline char *wf_shm_payload(wf_shm_slot_t *s)
{
    return (char *)s + WF_SHM_LINE;
}

#endif /* WF_SHM_H */
