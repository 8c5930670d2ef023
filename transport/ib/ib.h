/*
 * ib.h - private structures of the InfiniBand verbs transport.
 *
 * The transport is split by lifecycle phase:
 *   ib_load.c  dlopen of libibverbs, the table of exported verbs, probe()
 *   ib_dev.c   device, port and GID choice (WEFT_IB_HCA, WEFT_IB_GID_INDEX),
 *              the memlock check
 *   ib_init.c  context create/fini, address blob, query, get_fd
 *   ib_qp.c    per-peer buffers, RC QP creation and state transitions
 *   ib_conn.c  the bootstrap: QP numbers over a private TCP context, peer
 *              liveness and failure
 *   ib_xfer.c  isend/irecv/test, fragments striped over the QPs, credits
 *   ib_recv.c  tag matching, unexpected messages, reassembly by offset
 *   ib_poll.c  progress (completion queue and channel) and the ops table
 *   ib_mr.c    the registration cache behind mem_reg/mem_dereg
 *   ib_gdr.c   registering device memory (GPUDirect: dma-buf, peer memory)
 *   ib_rndv.c  zero-copy rendezvous of large messages (RTS, RDMA READ, FIN)
 *
 * Rails: a context may drive several ports (WEFT_IB_HCA=mlx5_0,mlx5_1, or
 * the NICs the topology found equally near), each a rail with its own
 * device context, protection domain and completion queue.  A pair uses
 * min(its two rail counts) rails and at least one QP per rail: QP i runs
 * from local rail i % rails to the peer's rail of the same index, so
 * fragments and rendezvous READs, which already spread over the QPs,
 * spread over the rails.  Memory is registered once per rail; an RTS
 * carries the buffer's rkey of every rail.
 *
 * Data path: every peer pair has WEFT_IB_QPS reliable-connected QPs (1 to
 * WF_IB_QPS_MAX) that share the peer's registered memory: each QP owns
 * its slice of the receive and staging slots and its own credit word.  A
 * message is cut into fragments of at most WF_IB_SLOT_LEN bytes, each one
 * SEND from a staging slot into one of the receiver's pre-posted receive
 * slots of the same QP.  Every fragment starts with a 16-byte fragment
 * header {seq, magic, flags, offset}: the per-peer message number and
 * where its payload goes in the message.  The first fragment of a message
 * always travels on QP 0 and adds the 40-byte message header {magic, tag,
 * sig[0], sig[1], len}; the others go round-robin to whichever QP has a
 * staging slot and a credit.  RC orders only within one QP, so headers
 * reach the receiver in send order (tag matching keeps the TCP
 * transport's FIFO rules), while a later fragment may arrive on another QP
 * before its message's header: the receiver keeps that receive slot (does
 * not re-post it) until the header arrives.  That cannot deadlock: the
 * header was posted on QP 0 before the fragment and QP 0 never holds a
 * slot.  A SEND needs a posted receive at the far end: the sender spends
 * one credit of the QP per fragment, and the receiver returns credits by
 * an RDMA WRITE of the QP's running count of posted receives into a word
 * of the sender's memory (which consumes no receive), so a fast sender
 * never meets an empty receive queue (no RNR retries, no overrun).
 *
 * Large messages (WEFT_IB_ZCOPY_MIN bytes and more) are not copied: the
 * first fragment is an RTS carrying the registered user buffer's address
 * and rkey instead of payload, the receiver pulls the bytes with RDMA
 * READs into the receive buffer (or, unmatched, an unexpected buffer) and
 * answers with a FIN fragment that takes no message number (ib_rndv.c).
 *
 * Bootstrap: the QP number of a pair exists only once both sides created
 * their QP, so it cannot be in the address blob published before connect.
 * Each ib context therefore owns a private TCP transport context (same job
 * and communicator keys, same handshake): the blob carries the TCP address
 * plus this side's LID/GID/MTU, and connect() sends the QP number, PSN and
 * credit word over TCP, then a READY once the QP is ready to receive.  That
 * TCP connection stays open as the liveness channel: a peer that closes its
 * context sends BYE; a peer that dies (kill -9) closes it by kernel, and
 * both fail the pair at once instead of after RC retry timeouts.
 */
#ifndef WF_IB_H
#define WF_IB_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "transport.h"

/* ---- constants --------------------------------------------------------- */

/* 3: several rails per context (address blob, INFO and RTS carry a
 * rail's worth of addresses and keys each). */
#define WF_IB_VERSION 3u
#define WF_IB_FRAME_MAGIC 0x314d415246424957ull /* "WIBFRAM1" */
#define WF_IB_FRAG_MAGIC 0x4657u                 /* "WF" */
#define WF_IB_FRAG_FIRST 1u /* fragment flag: the message header follows */
/* With FIRST: the message is a rendezvous "ready to send" (RTS): after the
 * message header come the sender's address u64 and its rkey u32 on each
 * of WF_IB_RAILS_MAX rails (0 past the sender's rails), no payload; the
 * receiver pulls the payload with RDMA READ (ib_rndv.c). */
#define WF_IB_FRAG_RNDV 2u
/* Alone: FIN of message `seq` of the other direction, which the receiver
 * has finished reading; takes no message number. */
#define WF_IB_FRAG_FIN 4u
#define WF_IB_RAILS_MAX 4 /* ports one context drives */
#define WF_IB_RTS_LEN (8 + 4 * WF_IB_RAILS_MAX)
/* Rendezvous reads: at most this many bytes per RDMA READ, and this many
 * READs in flight per QP (each QP's send queue has room for them on top
 * of its staging slots and credit writes, so reads never wait for a WQE). */
#define WF_IB_READ_CHUNK (512 * 1024)
#define WF_IB_READS_PER_QP 4
/* The receiver registers a rendezvous destination this much at a time, so
 * a message larger than the memlock limit still arrives (the window is
 * read in full, deregistered, and the next one registered). */
#define WF_IB_PULL_WINDOW (16u << 20)
/* Every fragment: seq u32, magic u16, flags u16, offset u64. */
#define WF_IB_FRAG_LEN 16
/* The first fragment's message header after it: magic, tag, sig, len. */
#define WF_IB_HDR_LEN 40
/* Upper bound of WEFT_IB_QPS. */
#define WF_IB_QPS_MAX 8
/* How often a sender that waits for credits looks at its credit word. */
#define WF_IB_STALL_POLL_NS 500000
/* Receive slots per peer, staging slots per peer, and the size of each;
 * the QPs of a peer split them (wf_ib_qp_slots), so more QPs cost no more
 * pinned memory up to WF_IB_RECV_SLOTS / WF_IB_QP_MIN_RECV of them.
 * Twice as many receive as staging slots: a sender is then limited by its
 * own slots coming back (which raises a completion) and waits for credits
 * only when the receiver falls behind by a whole window. */
#define WF_IB_RECV_SLOTS 16
#define WF_IB_SEND_SLOTS 8
#define WF_IB_SLOT_LEN (64 * 1024)
/* The smallest share of one QP. */
#define WF_IB_QP_MIN_RECV 4
/* Credits are returned once a quarter of a QP's receives were re-posted. */
#define WF_IB_CREDIT_DIV 4
/* Credit writes in flight per QP. */
#define WF_IB_CREDIT_WRITES 4
/* Bytes of control words per QP: the two credit words, padded. */
#define WF_IB_CTRL_LEN 64

/* RC settings: 4.096 us * 2^16 = 268 ms per try, 7 tries.  Soft-RoCE under
 * emulation has latency tails of 100+ ms; a dead peer is found through the
 * bootstrap connection long before this. */
#define WF_IB_QP_TIMEOUT 16
#define WF_IB_QP_RETRY 7

/* Tags on the private bootstrap TCP context. */
#define WF_IB_TAG_INFO 1u
#define WF_IB_TAG_READY 2u
#define WF_IB_TAG_LIVE 3u /* carries BYE; a failure means the peer died */

/* Address blob: version u8, rails u8, per rail {link layer u8, port u8,
 * mtu u8, lid u16, gid[16]}, tcp blob length u8, then the TCP blob. */
#define WF_IB_BLOB_RAIL 21
#define WF_IB_BLOB_LEN(rails) (3 + WF_IB_BLOB_RAIL * (size_t)(rails))
/* Bootstrap INFO: QPs u32, receive slots per QP u32, slot length u32,
 * rails u32, then per QP: qpn u32, psn u32, credit addr u64, and the
 * rkey u32 of the credit word on that QP's rail. */
#define WF_IB_INFO_FIXED 16
#define WF_IB_INFO_QP 20
#define WF_IB_INFO_LEN (WF_IB_INFO_FIXED + WF_IB_QPS_MAX * WF_IB_INFO_QP)

static inline void wf_ib_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void wf_ib_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t wf_ib_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t wf_ib_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---- ib_load.c: the exported verbs, found with dlsym --------------------- */

/* Only functions that libibverbs exports are here; ibv_post_send,
 * ibv_post_recv, ibv_poll_cq and ibv_req_notify_cq are inline in verbs.h
 * and call the provider through ctx->ops. */
typedef struct wf_ibv {
    struct ibv_device **(*get_device_list)(int *n);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *a);
    /* The exported symbol fills the older, shorter port struct; the
     * caller zeroes the rest. */
    int (*query_port)(struct ibv_context *ctx, uint8_t port,
                      struct ibv_port_attr *a);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index,
                     union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
                             int access);
    /* Optional (rdma-core 34 and later; NULL when missing): registers
     * memory another driver exports as a dma-buf (GPU memory). */
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
                                    size_t len, uint64_t iova, int fd,
                                    int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *c);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe,
                                void *cq_context, struct ibv_comp_channel *ch,
                                int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq,
                        void **cq_context);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
                                struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    const char *(*wc_status_str)(enum ibv_wc_status status);
} wf_ibv_t;

/* Loads libibverbs once per process.  Returns the table, or NULL with the
 * reason in *why (static text). */
const wf_ibv_t *wf_ibv_load(const char **why);
/* The registry's probe: libibverbs loads and some port is ACTIVE. */
bool wf_ib_probe(char *why, size_t why_len);

/* ---- ib_dev.c ---------------------------------------------------------- */

/* A chosen local port. */
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

/* Opens the ports chosen by `hca` (WEFT_IB_HCA, may be empty), each with
 * its GID (`gid_index` < 0: automatic, RoCE v2 of `family`, 4 or 6), at
 * most `max` of them: every ACTIVE port the list admits, in device order.
 * With `hca` empty, the ACTIVE ports of the devices the topology chose
 * for this rank (`topo_hca`, a comma list of names, `topo_why` saying
 * why); when none of them has one, or there is no topology, the first
 * ACTIVE port of any device (one rail: weft does not stripe over devices
 * nobody said were near).  Fills ctx[i], port[i] and *n.  Takes only the
 * table `v`, so tests pass a fake one. */
weft_status_t wf_ib_dev_open(const wf_ibv_t *v, const char *hca,
                             const char *topo_hca, const char *topo_why,
                             int gid_index, int family, int max,
                             struct ibv_context **ctx, wf_ib_port_t *port,
                             int *n);
/* True when some device has an active port; the names go to `list`. */
bool wf_ib_dev_any_active(const wf_ibv_t *v, char *list, size_t list_len);
/* Fails with a clear message when RLIMIT_MEMLOCK cannot cover `need`
 * bytes and the process cannot lock memory without limit. */
weft_status_t wf_ib_check_memlock(size_t need);
/* "::ffff:10.0.0.1" style text of a GID. */
void wf_ib_gid_str(const union ibv_gid *gid, char *out, size_t size);
/* "IB"/"RoCE" and "1024" style names for messages. */
const char *wf_ib_mtu_str(uint8_t mtu);

/* ---- objects ----------------------------------------------------------- */

typedef enum { WF_IB_REQ_SEND, WF_IB_REQ_RECV } wf_ib_req_kind_t;

struct wf_treq {
    struct wf_treq *next;                /* send queue / posted list */
    struct wf_treq *all_prev, *all_next; /* every live request of the ctx */
    wf_ib_req_kind_t kind;
    int peer;
    uint64_t tag;
    uint64_t sig[2];
    char *buf;
    size_t len;    /* send: message length; recv: buffer capacity */
    size_t staged; /* send: payload bytes copied into staging slots */
    bool started;  /* send: the header fragment is posted */
    uint32_t seq;  /* send: the message's number on its peer */
    unsigned frags_out; /* send: fragments posted, not completed */
    bool rndv;     /* send: goes by rendezvous (RTS, the peer reads) */
    bool fin;      /* send: the peer's FIN arrived */
    void *mh;      /* send: registration of buf taken for the rendezvous,
                    * dropped when the request is released */
    weft_status_t status;
    wf_treq_info_t info;
};

/* A message that arrived before its receive was posted. */
typedef struct wf_ib_umsg {
    struct wf_ib_umsg *next;
    uint64_t tag;
    uint64_t sig[2];
    size_t len;
    bool complete;
    struct wf_treq *waiter; /* a receive matched it before it completed */
    char data[];
} wf_ib_umsg_t;

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
    struct wf_treq *req;
    wf_ib_umsg_t *umsg;
} wf_ib_rx_t;

/* A rendezvous message being pulled with RDMA READ (ib_rndv.c). */
typedef struct wf_ib_pull {
    struct wf_ib_pull *next;
    uint32_t seq;           /* the sender's number of the message: FIN */
    uint64_t tag, sig[2];
    size_t len;             /* message length */
    uint64_t raddr;         /* the sender's buffer */
    uint32_t rkey[WF_IB_RAILS_MAX]; /* its key on each rail */
    struct wf_treq *req;    /* the posted receive it goes to, or NULL */
    wf_ib_umsg_t *umsg;     /* else the unexpected buffer */
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
    struct wf_treq *posted, *posted_tail;
    wf_ib_umsg_t *unexp, *unexp_tail;
    uint32_t rx_next;        /* seq of the next message header */
    unsigned rx_cap;         /* entries of rx: every receive slot + 1 */
    unsigned rx_busy;        /* messages begun, not complete */
    wf_ib_rx_t *rx;          /* messages arriving, found by seq */
    wf_ib_held_t *held;      /* nqp * nrecv entries */
    unsigned nheld;
    wf_ib_pull_t *pulls, *pulls_tail; /* rendezvous messages, in order */
    int rd_next;             /* QP to try first for the next READ */
    /* failure */
    weft_status_t fail_status;
    bool fail_unreported;
    char fail_msg[200];
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
} wf_ib_mrcache_t;

struct wf_tctx {
    wf_tconfig_t cfg;
    const wf_ibv_t *v;
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
    struct wf_treq *all;   /* every live request, for fini */
    uint64_t unexp_arrivals; /* unexpected messages ever (scan_unexpected) */
    wf_ib_mrcache_t mrc;
};

/* ---- ib_qp.c ----------------------------------------------------------- */

/* Registers the peer's buffers and creates its `nqp` QPs in INIT with
 * every receive posted; fills p->info_out. */
weft_status_t wf_ib_qp_create(wf_tctx_t *ctx, wf_ib_peer_t *p, int nqp);
/* INIT -> RTR -> RTS of every QP with the peer's INFO (p->info_in). */
weft_status_t wf_ib_qp_connect(wf_tctx_t *ctx, wf_ib_peer_t *p);
void wf_ib_qp_destroy(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Posts the receive of slot `slot` of QP `qi`. */
weft_status_t wf_ib_post_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                              unsigned slot);
/* Receive and staging slots of each of `nqp` QPs. */
void wf_ib_qp_slots(int nqp, unsigned *nrecv, unsigned *nsend);
/* Bytes of pinned memory one peer with `nqp` QPs needs (per rail it is
 * registered on). */
size_t wf_ib_peer_mem(int nqp);
/* QPs of a pair over `rails` rails when WEFT_IB_QPS is `qps`: at least one
 * per rail and a multiple of the rails, so each rail carries as much. */
int wf_ib_pair_qps(int qps, int rails);

/* wr_id: peer << 32 | qp << 16 | kind << 8 | slot. */
enum {
    WF_IB_WR_RECV = 1,
    WF_IB_WR_SEND = 2,
    WF_IB_WR_CREDIT = 3,
    WF_IB_WR_READ = 4 /* slot: the QP's read slot */
};
static inline uint64_t wf_ib_wrid(int peer, int qi, int kind, unsigned slot)
{
    return ((uint64_t)(uint32_t)peer << 32) | ((uint64_t)qi << 16) |
           ((uint64_t)kind << 8) | slot;
}

/* ---- ib_conn.c --------------------------------------------------------- */

weft_status_t wf_ib_connect(wf_tctx_t *ctx, int peer, const void *addr,
                            size_t len);
/* Advances the bootstrap of connecting peers and watches liveness. */
int wf_ib_conn_progress(wf_tctx_t *ctx);
/* Fails a peer: logs once (or keeps the message for the next post when
 * p->fail_unreported is set), fails its requests. */
void wf_ib_peer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
weft_status_t wf_ib_peer_failed(wf_ib_peer_t *p);
/* Tells connected peers that this context closes on purpose. */
void wf_ib_conn_bye(wf_tctx_t *ctx);

/* ---- ib_xfer.c --------------------------------------------------------- */

static inline void wf_ib_req_finish(struct wf_treq *r, weft_status_t st)
{
    r->next = NULL;
    r->status = st;
}

weft_status_t wf_ib_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                          const uint64_t sig[2], const void *buf, size_t len,
                          void *mh, wf_treq_t **req);
weft_status_t wf_ib_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                          size_t cap, void *mh, wf_treq_t **req);
weft_status_t wf_ib_test(wf_tctx_t *ctx, wf_treq_t *req, wf_treq_info_t *info);
/* Posts fragments of queued sends while slots and credits allow. */
void wf_ib_pump(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Handles one completion on QP `qi`. */
void wf_ib_on_send_done(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                        unsigned slot);
void wf_ib_on_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi, unsigned slot,
                   size_t len);
/* Writes QP `qi`'s count of posted receives to the peer when due. */
void wf_ib_credit_flush(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi);
void wf_ib_xfer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p);
void wf_ib_xfer_free_all(wf_tctx_t *ctx);

/* ---- ib_recv.c --------------------------------------------------------- */

/* Allocates the receive state of a peer with p->nqp QPs. */
weft_status_t wf_ib_xfer_open(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Removes and returns the oldest unexpected message for `tag`, or NULL. */
wf_ib_umsg_t *wf_ib_unexp_take(wf_ib_peer_t *p, uint64_t tag);
/* Completes receive `r` with the complete unexpected message `m` (freed). */
void wf_ib_unexp_deliver(struct wf_treq *r, wf_ib_umsg_t *m);
/* Fails every message in progress and forgets held fragments. */
void wf_ib_rx_fail_all(wf_ib_peer_t *p, weft_status_t st);
/* Completes a receive with a message of `len` bytes. */
void wf_ib_recv_finish(struct wf_treq *r, size_t len, const uint64_t sig[2]);
/* Removes an unexpected message from the peer's list. */
void wf_ib_unexp_unlink(wf_ib_peer_t *p, wf_ib_umsg_t *m);

/* ---- ib_rndv.c --------------------------------------------------------- */

/* Whether a send of `len` bytes goes by rendezvous; if so registers its
 * buffer (`mh`: the caller's registration, or NULL) and marks it. */
void wf_ib_rndv_send_prepare(wf_tctx_t *ctx, wf_ib_peer_t *p,
                             struct wf_treq *r, void *mh);
/* Writes the RTS body (address, rkey) of send `r` at `dst`. */
void wf_ib_rndv_rts_put(const struct wf_treq *r, uint8_t *dst);
/* An RTS arrived and was matched (req) or kept unexpected (umsg): the
 * pull takes its place in the peer's queue and reads start. */
weft_status_t wf_ib_rndv_pull_add(wf_tctx_t *ctx, wf_ib_peer_t *p,
                                  wf_ib_pull_t *pl);
/* Posts the READs that fit (read slots of every QP). */
void wf_ib_rndv_progress(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* A READ completed. */
void wf_ib_rndv_on_read(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                        unsigned slot);
/* The peer's FIN of our message `seq` arrived. */
void wf_ib_rndv_on_fin(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq);
/* A rendezvous send finished staging its RTS: it waits for the FIN. */
void wf_ib_rndv_await(wf_ib_peer_t *p, struct wf_treq *r);
/* Finishes send `r` when its fragments completed and its FIN came. */
void wf_ib_send_maybe_done(struct wf_treq *r);
/* Fails pulls and sends waiting for a FIN; forgets due FINs. */
void wf_ib_rndv_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st);
void wf_ib_rndv_free(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Nothing rendezvous-related is pending with the peer. */
bool wf_ib_rndv_idle(const wf_ib_peer_t *p);

/* ---- ib_poll.c --------------------------------------------------------- */

int wf_ib_progress(wf_tctx_t *ctx);
/* Notes that `p` waits for credits: returned credits arrive by RDMA
 * WRITE, which raises no completion on this side, so a timer wakes the
 * engine to look while any peer waits. */
void wf_ib_stall(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Polls every rail's completion queue until empty; < 0 when one failed. */
int wf_ib_poll_cq(wf_tctx_t *ctx);

/* ---- ib_init.c --------------------------------------------------------- */

weft_status_t wf_ib_init(const wf_tconfig_t *cfg, wf_tctx_t **ctx);
void wf_ib_fini(wf_tctx_t *ctx);
weft_status_t wf_ib_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr);
weft_status_t wf_ib_get_address(wf_tctx_t *ctx, void *addr, size_t *len);
int wf_ib_get_fd(wf_tctx_t *ctx);
const char *wf_ib_peer_describe(wf_tctx_t *ctx, int peer);

/* ---- ib_mr.c ----------------------------------------------------------- */

weft_status_t wf_ib_mem_reg(wf_tctx_t *ctx, void *buf, size_t len,
                            int memtype, void **mh);
/* Pins host memory [addr, addr + len) on rail `rail` with `access`; NULL
 * after a warning naming the device, `what` ("for peer 1 ...", "at
 * 0x..."), the errno text and, where the kernel refused to pin, the
 * memlock limit. */
struct ibv_mr *wf_ib_pin(wf_tctx_t *ctx, int rail, void *addr, size_t len,
                         int access, const char *what);
void wf_ib_mem_dereg(wf_tctx_t *ctx, void *mh);
void wf_ib_mrcache_free(wf_tctx_t *ctx);

/* ---- ib_gdr.c ---------------------------------------------------------- */

/* Registers device memory on rail `rail`: dma-buf first, then peer memory
 * (ibv_reg_mr on the device pointer); WEFT_ERR_UNSUPPORTED when neither
 * works, and the engine stages through host memory.  *kind names the one
 * used. */
weft_status_t wf_ib_gdr_reg(wf_tctx_t *ctx, int rail, void *buf, size_t len,
                            struct ibv_mr **mr, const char **kind);
/* One line for weft-info --doctor: which GPUDirect registration this
 * host's rdma-core and CUDA driver offer. */
void wf_ib_gdr_describe(char *out, size_t len);

#endif /* WF_IB_H */
