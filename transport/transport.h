/*
 * transport.h - the contract between the engine and a transport.
 *
 * A transport moves tagged messages between the ranks of one communicator.
 * It never sees communicators, plans or algorithms: only peer indices,
 * buffers, lengths, tags and its own configuration.
 *
 * Lifecycle and threading
 *  - One context per communicator, created by init() and released by fini().
 *    All calls on one context come from one thread at a time (whichever
 *    thread holds the engine's progress lock: its progress thread or a
 *    caller waiting for an operation), so transports need no locks of their
 *    own and must not keep per-thread state.  No call blocks: waiting is the engine's job, using get_fd().
 *  - init() opens the listening endpoint and get_address() returns its
 *    opaque address blob (at most WF_TADDR_MAX bytes), which the bootstrap
 *    publishes through the rendezvous store.
 *  - connect(peer, addr) is called on first use of a peer, by both sides.  It
 *    starts connecting and returns WEFT_INPROGRESS, or WEFT_OK once the
 *    connection is up; the transport breaks the tie (TCP: the lower rank
 *    dials, the higher rank accepts).  Sends and receives may be posted right
 *    after the first connect() call; they are queued until the connection is
 *    up.  Every incoming connection passes a handshake that checks job key,
 *    communicator key and ranks and in which both ends prove the job's
 *    secret (cfg.secret); a stray, mis-addressed or unauthenticated
 *    connection is logged and closed and the job goes on.
 *
 * Messages
 *  - isend/irecv post one message.  Messages between one pair of ranks with
 *    the same tag match in the order they were posted; different tags match
 *    independently.  A message that arrives before its receive is posted is
 *    kept (an "unexpected" message) until a receive with its tag is posted.
 *  - Each message carries two signature words `sig` chosen by the sender;
 *    the receiver gets them in wf_treq_info_t and decides what a mismatch
 *    means (the engine uses them to detect ranks calling different
 *    collectives).  A message longer than the posted receive completes the
 *    receive with `truncated` set and the surplus discarded.
 *  - Zero-length messages are valid.
 *  - Back-pressure is WEFT_ERR_AGAIN from isend/irecv: nothing was posted,
 *    retry after progress().
 *
 * Completion and errors
 *  - test(req) returns WEFT_INPROGRESS, or the final status; after a final
 *    status the request is released by the transport and must not be used.
 *  - A failed peer (connection refused until the timeout, reset, closed,
 *    garbage on the wire) fails every pending and later request with that
 *    peer: WEFT_ERR_REMOTE when the peer went away, WEFT_ERR_TRANSPORT for
 *    local failures.  The transport logs the cause once, naming the peer
 *    rank, its host:port and the errno text; peer_describe() gives the same
 *    text for the engine's messages.
 *  - The exception is what a peer sent before it left: complete messages
 *    already received stay receivable, and where a peer can send before
 *    this side's first connect() (TCP: the lower rank dials, and may
 *    finish, say goodbye and leave before the other side first uses the
 *    connection), connect() to a peer that left with such messages waiting
 *    returns WEFT_OK.  Receives with nothing to match then fail, as does a
 *    message whose payload was still to be read from the peer's memory
 *    (the single copy).  Verbs cannot get there: no message flows before
 *    both sides have connected.
 */
#ifndef WF_TRANSPORT_H
#define WF_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* An address blob's capacity: the route's (route.c) holds one blob of
 * each member transport, each of which stays within 256 bytes. */
#define WF_TADDR_MAX 1024

/* Capability bits of a transport. */
#define WF_TCAP_HOST_MEM (1u << 0)   /* can send from / receive to host memory */
#define WF_TCAP_DEVICE_MEM (1u << 1) /* can access device memory directly */
#define WF_TCAP_RDMA (1u << 2)       /* supports one-sided writes */

/* What a transport needs to know; filled by the core from the config
 * snapshot.  Strings are empty when unset.  A transport's own knobs
 * (WEFT_TCP_*, WEFT_IB_*: transport/<name>/<name>_params.def) are not
 * here: it reads them from `knobs`. */
struct wf_config;
typedef struct wf_tconfig {
    int rank;             /* this process's index among the peers */
    int size;             /* number of peers, including this one */
    uint64_t job_key;     /* hash of the job id: tells jobs apart (no secret) */
    uint64_t comm_key;    /* identifies the communicator: handshake check */
    uint8_t secret[32];   /* the job's data-plane secret: every handshake
                           * proves it by HMAC challenge-response, never
                           * sends it (docs/design.md, "Trust model") */
    char ifname[256];     /* WEFT_SOCKET_IFNAME: interface name(s) or an IP */
    char bind_hint[64];   /* local IP that reaches the rendezvous, if known */
    char topo_ifname[256]; /* netdev names of the NICs the topology chose
                            * for this rank, comma separated; TCP uses them
                            * when ifname is empty (docs/topology.md) */
    char topo_hca[128];   /* verbs names of those NICs; ib uses them when
                           * WEFT_IB_HCA is empty */
    char topo_why[128];   /* why those NICs, for the transport's log line */
    int topo_numa;        /* OS index of the NUMA node the topology chose
                           * for this rank's staging memory
                           * (wf_topo_mem_alloc); -1: none, leave unbound */
    int port_min;         /* WEFT_PORT_RANGE, 0 0 for any */
    int port_max;
    int64_t timeout_ms;   /* connection establishment deadline */
    /* The communicator's config snapshot (src/config.h), read during
     * init() only: a transport copies the knobs it needs.  NULL: every
     * knob of the transport as if 0 or empty (TCP: one stream per
     * interface, no single copy, the kernel's send buffer; verbs: one
     * QP, no zero copy, automatic device and GID). */
    const struct wf_config *knobs;
} wf_tconfig_t;

typedef struct wf_tdev_attr {
    char name[64];        /* e.g. interface name */
    char address[80];     /* human-readable local address, e.g. 10.0.0.1:5000 */
    uint32_t caps;        /* WF_TCAP_* */
    uint64_t speed_mbps;  /* 0 when unknown */
    size_t single_copy_min; /* messages of this many bytes or more go by a
                             * single copy between processes on one
                             * machine where the peer allows it; 0: never
                             * (the cost model's constants follow it) */
    size_t reg_min;       /* messages of this many bytes or more move
                           * straight from and to registered memory: the
                           * engine registers (mem_reg) each host buffer
                           * of an operation that such a message uses, for
                           * the operation's life, and passes the handle
                           * with every transfer on it; 0: the transport
                           * wants no registration from the engine */
} wf_tdev_attr_t;

/* Filled by test() when a request completes. */
typedef struct wf_treq_info {
    size_t len;           /* bytes sent, or bytes of the received message */
    uint64_t sig[2];      /* receive: the sender's signature words */
    bool truncated;       /* receive: the message was longer than the buffer */
} wf_treq_info_t;

typedef struct wf_tctx wf_tctx_t; /* a transport's per-communicator context */
typedef struct wf_treq wf_treq_t; /* a transport's request */

typedef struct wf_transport_ops {
    size_t size; /* sizeof(wf_transport_ops_t): fields are only appended */
    const char *name;
    uint32_t caps;

    /* Creates the context and its listening endpoint. */
    weft_status_t (*init)(const wf_tconfig_t *cfg, wf_tctx_t **ctx);
    /* Closes every connection and releases the context; pending requests
     * are dropped.  Accepts NULL; never blocks for long. */
    void (*fini)(wf_tctx_t *ctx);
    /* Describes the local device the context uses. */
    weft_status_t (*query)(wf_tctx_t *ctx, wf_tdev_attr_t *attr);
    /* Copies the address blob into addr (capacity *len), sets *len. */
    weft_status_t (*get_address)(wf_tctx_t *ctx, void *addr, size_t *len);
    /* Non-blocking, idempotent connect to `peer`; see above. */
    weft_status_t (*connect)(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len);
    /* Registers memory for zero-copy use until mem_dereg; a transport
     * that needs none (TCP) returns a NULL handle.  The engine calls it
     * for host buffers when query() gave a reg_min, and a transfer given
     * a handle must lie inside the registered range; a transport still
     * registers what it is not given a handle for (a NULL mh), so a
     * failed registration costs speed, never correctness.  `memtype` is
     * where the memory lives (a wf_memtype_t of cuda/weft_cuda.h): the
     * engine stages device buffers through host memory and registers
     * host memory only; a transport that cannot register device memory
     * returns WEFT_ERR_UNSUPPORTED for it (the verbs transport registers
     * it by GPUDirect where the host allows, ib_gdr.c). */
    weft_status_t (*mem_reg)(wf_tctx_t *ctx, void *buf, size_t len,
                             int memtype, void **mh);
    void (*mem_dereg)(wf_tctx_t *ctx, void *mh);
    /* Posts a send / receive of one message; see above. */
    weft_status_t (*isend)(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req);
    weft_status_t (*irecv)(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req);
    /* Polls one request; see above. */
    weft_status_t (*test)(wf_tctx_t *ctx, wf_treq_t *req,
                          wf_treq_info_t *info);
    /* Does all I/O that is possible without blocking.  Returns the number of
     * events handled (>= 0), or a negative status when the context itself
     * failed. */
    int (*progress)(wf_tctx_t *ctx);
    /* A file descriptor that becomes readable when progress() has work, or
     * -1 when the engine has to poll. */
    int (*get_fd)(wf_tctx_t *ctx);
    /* "peer 3 (10.0.0.2:41234)" for messages; never NULL. */
    const char *(*peer_describe)(wf_tctx_t *ctx, int peer);
    /* True when a connection with `peer` is up or being set up, including
     * one the peer started before this side called connect(): the engine
     * owes such a peer its failure and bye notices. */
    bool (*peer_linked)(wf_tctx_t *ctx, int peer);
    /* Unexpected messages: calls visit() for each message held that no
     * receive has claimed yet (its header has arrived), oldest first per
     * peer, until visit returns true.  visit may be NULL.  Returns how many
     * unexpected messages have arrived since init, a counter that tells the
     * engine whether anything new came in since its last look: it uses the
     * scan to find messages no operation will ever take (ranks that
     * disagree on a root), which would otherwise go unnoticed. */
    uint64_t (*scan_unexpected)(wf_tctx_t *ctx,
                                bool (*visit)(void *arg, int peer,
                                              uint64_t tag,
                                              const uint64_t sig[2]),
                                void *arg);
    /* True when a send of `len` bytes to `peer` posted now would be a
     * notice the receiver answers by reading the payload from the
     * sender's memory: it holds no transport buffer or socket space while
     * it waits for the receiver, so the engine does not count it against
     * its send window.  NULL: every send holds buffers. */
    bool (*send_pulled)(wf_tctx_t *ctx, int peer, size_t len);
    /* Called under the engine's lock right before it sleeps in poll() on
     * get_fd(): the transport arms what makes that fd readable (peers of
     * the shared-memory transport write it only when asked to) and
     * returns true when progress() has work already, in which case the
     * engine does not sleep.  NULL: the fd tells the truth by itself. */
    bool (*wait_prepare)(wf_tctx_t *ctx);
    /* Whether this context can reach the peer with address blob `addr`
     * (shm: a process of this machine and network namespace); the
     * per-peer choice of transports asks it.  NULL: every peer. */
    bool (*reaches)(wf_tctx_t *ctx, const void *addr, size_t len);
} wf_transport_ops_t;

/* The registry: transports compiled in, in preference order. */
const wf_transport_ops_t *wf_transport_find(const char *name);
/* Picks the transport for WEFT_TRANSPORT: one name, that transport for
 * every peer; "auto" or an ordered list ("shm,tcp"), the route over the
 * usable ones (route.h), or the one usable transport alone. */
weft_status_t wf_transport_select(const char *name,
                                  const wf_transport_ops_t **ops);
/* Names of all compiled-in transports, comma separated. */
const char *wf_transport_names(void);
/* How this host would register device memory for RDMA (GPUDirect), in
 * one line for weft-info --doctor. */
void wf_transport_gpudirect(char *out, size_t len);

/* Every compiled-in transport's ops table, from the one list. */
#include "transport_list.h"
#define WF_TRANSPORT_EXTERN_(name, ops, probe) extern const wf_transport_ops_t ops;
WF_TRANSPORT_LIST(WF_TRANSPORT_EXTERN_)
#undef WF_TRANSPORT_EXTERN_

#endif /* WF_TRANSPORT_H */
