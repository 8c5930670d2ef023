/*
 * ib.h - the verbs transport's objects: context, rails, peers, QPs,
 * messages in flight.  The protocol and wire formats are in ib_wire.h,
 * the calls between the files in ib_calls.h (included at the end);
 * matching is transport/match.h's.
 *
 * The transport is split by lifecycle phase:
 *   ib_load.c  dlopen of libibverbs, the table of exported verbs, probe()
 *   ib_dev.c   device, port and GID choice (WEFT_IB_HCA, WEFT_IB_GID_INDEX),
 *              the memlock check
 *   ib_init.c  context create/fini, address blob, query, get_fd
 *   ib_qp.c    per-peer buffers, RC QP creation and state transitions
 *   ib_conn.c  the bootstrap: QP numbers over a private TCP context, peer
 *              liveness and failure
 *   ib_send.c  isend, fragments striped over the QPs, credits
 *   ib_recv.c  irecv, fragments placed by offset into receives or
 *              unexpected messages
 *   ib_poll.c  progress (completion queue and channel) and the ops table
 *   ib_mr.c    the registration cache behind mem_reg/mem_dereg
 *   ib_gdr.c   registering device memory (GPUDirect: dma-buf, peer memory)
 *   ib_rndv.c  zero-copy rendezvous of large messages (RTS, RDMA READ, FIN)
 */
#ifndef WF_IB_H
#define WF_IB_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ib_wire.h"
#include "match.h"

/* Rendezvous reads: at most this many bytes per RDMA READ, and this many
 * READs in flight per QP (each QP's send queue has room for them on top
 * of its staging slots and credit writes, so reads never wait for a WQE). */
#define WF_IB_READ_CHUNK (512 * 1024)
#define WF_IB_READS_PER_QP 4
/* The receiver registers a rendezvous destination this much at a time, so
 * a message larger than the memlock limit still arrives (the window is
 * read in full, deregistered, and the next one registered). */
#define WF_IB_PULL_WINDOW (16u << 20)
/* How often a sender that waits for credits looks at its credit word. */
#define WF_IB_STALL_POLL_NS 500000
/* The smallest share of one QP. */
#define WF_IB_QP_MIN_RECV 4
/* Credits are returned once a quarter of a QP's receives were re-posted. */
#define WF_IB_CREDIT_DIV 4
/* Credit writes in flight per QP. */
#define WF_IB_CREDIT_WRITES 4
/* Bytes of control words per QP: the two credit words, padded. */
#define WF_IB_CTRL_LEN 64

/* RC settings: 4.096 us * 2^16 = 268 ms per try, 7 tries.  Soft-RoCE under
 * emulation has long latency tails; a dead peer is found through the
 * bootstrap connection long before this. */
#define WF_IB_QP_TIMEOUT 16
#define WF_IB_QP_RETRY 7

/* Receive slots per peer and staging slots per peer, each of
 * WF_IB_SLOT_LEN bytes; the QPs of a peer split them (wf_ib_qp_slots), so
 * more QPs cost no more pinned memory up to WF_IB_RECV_SLOTS /
 * WF_IB_QP_MIN_RECV of them.  Twice as many receive as staging slots: a
 * sender is then limited by its own slots coming back (which raises a
 * completion) and waits for credits only when the receiver falls behind
 * by a whole window. */
#define WF_IB_RECV_SLOTS 16
#define WF_IB_SEND_SLOTS 8

/* A chosen local port (ib_dev.c). */
typedef struct wf_ib_port {
    char dev_name[64];
    uint8_t port;
    uint8_t link_layer; /* IBV_LINK_LAYER_* */
    uint8_t mtu;        /* enum ibv_mtu, the port's active MTU */
    uint16_t lid;
    int gid_index;      /* -1: none (InfiniBand without GRH) */
    union ibv_gid gid;
    uint64_t speed_mbps;
} wf_ib_port_t;

/* A request; the fields after the head are a send's. */
struct wf_treq {
    wf_mreq_t m;           /* first: the matching layer's head */
    struct wf_treq *next;  /* the send queue, or the sends awaiting a FIN */
    uint64_t sig[2];
    size_t staged; /* payload bytes copied into staging slots */
    bool started;  /* the header fragment is posted */
    uint32_t seq;  /* the message's number on its peer */
    unsigned frags_out; /* fragments posted, not completed */
    bool rndv;     /* goes by rendezvous (RTS, the peer reads) */
    bool fin;      /* the peer's FIN arrived */
    void *mh;      /* registration of buf taken for the rendezvous,
                    * dropped when the request is released (m.holds) */
};

/* Receive state of one message whose fragments are arriving; a peer has
 * a table of them (several QPs: several messages at once). */
typedef struct wf_ib_rx {
    bool in_msg;
    uint32_t seq;
    uint64_t tag, sig[2];
    size_t len;     /* message length */
    size_t got;     /* payload bytes consumed */
    char *dst;      /* user or unexpected buffer */
    size_t dst_len; /* bytes that go to dst: min(len, capacity) */
    wf_mreq_t *req;
    wf_mmsg_t *umsg;
} wf_ib_rx_t;

/* A rendezvous message being pulled with RDMA READ (ib_rndv.c). */
typedef struct wf_ib_pull {
    struct wf_ib_pull *next;
    uint32_t seq;           /* the sender's number of the message: FIN */
    uint64_t tag, sig[2];
    size_t len;             /* message length */
    uint64_t raddr;         /* the sender's buffer */
    uint32_t rkey[WF_IB_RAILS_MAX]; /* its key on each rail */
    wf_mreq_t *req;         /* the posted receive it goes to, or NULL */
    wf_mmsg_t *umsg;        /* else the unexpected buffer */
    bool started;           /* dst chosen and registered */
    char *dst;
    size_t dst_len;         /* bytes to read: min(len, capacity) */
    void *mh;               /* registration of dst's current window */
    size_t win_end;         /* end of that window */
    size_t posted, done;    /* bytes whose READs were posted / completed */
} wf_ib_pull_t;

typedef enum {
    WF_IB_IDLE,     /* connect() not called yet */
    WF_IB_EXCHANGE, /* bootstrap: INFO sent, waiting for the peer's */
    WF_IB_WAIT_READY, /* QP ready to receive, waiting for the peer's READY */
    WF_IB_UP,
    WF_IB_FAILED
} wf_ib_state_t;

/* Per-peer registered memory: every QP's receive slots, staging slots
 * and control words, in one block registered on each rail of the pair. */
typedef struct wf_ib_bufs {
    char *mem;
    size_t len;
    struct ibv_mr *mr[WF_IB_RAILS_MAX];
} wf_ib_bufs_t;

/* One RC QP of a pair, with its share of the peer's slots and its two
 * credit words (in: written by the peer; out: the source of our writes). */
typedef struct wf_ib_qp {
    struct ibv_qp *qp;
    int rail;               /* its local and remote rail: qi % p->nrails */
    uint32_t psn;
    char *recv;             /* nrecv * WF_IB_SLOT_LEN */
    char *send;             /* nsend * WF_IB_SLOT_LEN */
    volatile uint64_t *credit_in;
    uint64_t *credit_out;
    uint64_t rcredit_addr;  /* the peer's credit_in word of this QP */
    uint32_t rcredit_rkey;  /* and its key on this QP's rail */
    /* sending */
    uint64_t sends_posted, sends_done; /* fragments */
    uint64_t bytes_sent, bytes_read;   /* SENDs posted, READs posted */
    struct wf_treq *slot_req[WF_IB_SEND_SLOTS]; /* owner of each slot */
    /* receiving */
    uint64_t recvs_posted;   /* receives posted in total */
    uint64_t credit_sent;    /* recvs_posted value last written */
    int credit_writes;       /* credit writes in flight */
    /* rendezvous READs in flight, by read slot */
    wf_ib_pull_t *read_pull[WF_IB_READS_PER_QP];
    uint32_t read_len[WF_IB_READS_PER_QP];
    unsigned reads_out;
} wf_ib_qp_t;

/* A fragment that arrived before its message's header (another QP). */
typedef struct wf_ib_held {
    uint32_t seq;
    uint8_t qp, slot;
    uint32_t len;
} wf_ib_held_t;

/* The peer's side of one rail, from its address blob. */
typedef struct wf_ib_rrail {
    uint8_t link_layer, port, mtu;
    uint16_t lid;
    union ibv_gid gid;
} wf_ib_rrail_t;


typedef struct wf_ib_peer {
    wf_mpeer_t m; /* posted receives, unexpected messages, failure note */
    int rank;
    wf_ib_state_t state;
    bool have_addr;
    int nrrails;             /* rails in the peer's blob */
    wf_ib_rrail_t rrail[WF_IB_RAILS_MAX];
    int nrails;              /* rails of this pair: min of the two counts */
    int nqp;                 /* QPs of this pair (wf_ib_pair_qps) */
    unsigned nrecv, nsend;   /* receive / staging slots per QP */
    unsigned credit_batch;   /* re-posts per credit write */
    wf_ib_qp_t qp[WF_IB_QPS_MAX];
    wf_ib_bufs_t b;
    char desc[160];
    /* bootstrap requests on the TCP context (NULL when none) */
    wf_treq_t *boot_info_send, *boot_info_recv, *boot_ready_send,
        *boot_ready_recv, *boot_live;
    uint8_t info_out[WF_IB_INFO_LEN], info_in[WF_IB_INFO_LEN];
    uint8_t ready_in[1], live_in[1];
    /* sending */
    struct wf_treq *sendq, *sendq_tail;
    uint32_t tx_seq;         /* number of the next message */
    int tx_next;             /* QP to try first for a non-first fragment */
    bool stalled;            /* sends wait for credits (see ib_poll.c) */
    struct wf_treq *await;   /* rendezvous sends waiting for their FIN */
    uint32_t *fins;          /* FINs to send (message numbers) */
    unsigned nfins, fins_cap;
    /* receiving */
    uint32_t rx_next;        /* seq of the next message header */
    unsigned rx_cap;         /* entries of rx: every receive slot + 1 */
    unsigned rx_busy;        /* messages begun, not complete */
    wf_ib_rx_t *rx;          /* messages arriving, found by seq */
    wf_ib_held_t *held;      /* nqp * nrecv entries */
    unsigned nheld;
    wf_ib_pull_t *pulls, *pulls_tail; /* rendezvous messages, in order */
    int rd_next;             /* QP to try first for the next READ */
} wf_ib_peer_t;


/* One cached registration (ib_mr.c): the range on every rail. */
typedef struct wf_ib_reg {
    char *addr;
    size_t len;
    struct ibv_mr *mr[WF_IB_RAILS_MAX];
    int refs;
} wf_ib_reg_t;

/* One port a context drives, with the verbs objects of its device. */
typedef struct wf_ib_rail {
    struct ibv_context *dev;
    wf_ib_port_t port;
    struct ibv_pd *pd;
    struct ibv_comp_channel *channel;
    struct ibv_cq *cq;
    unsigned cq_events;    /* received, not yet acknowledged */
} wf_ib_rail_t;

typedef struct wf_ib_mrcache {
    wf_ib_reg_t **regs; /* sorted by addr */
    size_t n, cap;
    uint64_t made;      /* registrations made (not found in the cache),
                         * for the tests of the engine's registrations */
} wf_ib_mrcache_t;


struct wf_tctx {
    wf_match_t m; /* first: requests, matching, the unexpected pool */
    wf_tconfig_t cfg;
    const struct wf_ibv *v; /* the verbs (ib_calls.h, ib_load.c) */
    /* The verbs knobs (ib_params.def), read from the snapshot at init. */
    char hca[256];         /* WEFT_IB_HCA: device[:port] list, ^ excludes */
    int gid_index;         /* WEFT_IB_GID_INDEX; -1: automatic */
    int nqp;               /* QPs per peer (WEFT_IB_QPS) */
    size_t zcopy_min;      /* WEFT_IB_ZCOPY_MIN: rendezvous from; 0: never */
    uint8_t rd_atom;       /* RDMA READs in flight per QP the device takes */
    unsigned gdr_logged;   /* device-memory registration kinds logged */
    wf_ib_rail_t rail[WF_IB_RAILS_MAX];
    int nrails;
    char rails_str[160];   /* "rxe0:1" or "mlx5_0:1+mlx5_1:1", for logs */
    int cq_depth;
    int epfd;              /* channel fds + the bootstrap's fd + timer */
    int timer_fd;          /* ticks while some peer waits for credits */
    int stalled;           /* peers waiting for credits */
    const wf_transport_ops_t *boot_ops;
    wf_tctx_t *boot;       /* private TCP context */
    uint8_t blob[WF_TADDR_MAX];
    size_t blob_len;
    char local_str[80];
    wf_ib_peer_t *peers;   /* cfg.size entries */
    int connecting;        /* peers in EXCHANGE or WAIT_READY */
    wf_ib_mrcache_t mrc;
};

#include "ib_calls.h"

#endif /* WF_IB_H */
