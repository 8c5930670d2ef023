/*
 * ib_calls.h - what the files of the verbs transport call in each other,
 * file by file (ib.h includes it; the objects are there).
 */
#ifndef WF_IB_CALLS_H
#define WF_IB_CALLS_H

/* ---- ib_load.c --------------------------------------------------------- */

/* The verbs libibverbs exports, found with dlsym (ib_load.c).  Only functions that libibverbs exports are here; ibv_post_send,
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
 * p->m.fail_unreported is set), fails its requests. */
void wf_ib_peer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Tells connected peers that this context closes on purpose. */
void wf_ib_conn_bye(wf_tctx_t *ctx);

/* ---- ib_send.c --------------------------------------------------------- */

/* A send is final with st (it leaves the transport's queues first). */
static inline void wf_ib_req_finish(struct wf_treq *r, weft_status_t st)
{
    r->next = NULL;
    wf_match_done(&r->m, st);
}

weft_status_t wf_ib_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                          const uint64_t sig[2], const void *buf, size_t len,
                          void *mh, wf_treq_t **req);
/* The peer of a post, checked: a rank of the job other than this one,
 * that connect() was called for. */
weft_status_t wf_ib_peer_get(wf_tctx_t *ctx, int peer, wf_ib_peer_t **out);
/* Posts fragments of queued sends while slots and credits allow. */
void wf_ib_pump(wf_tctx_t *ctx, wf_ib_peer_t *p);
/* Handles one completion on QP `qi`. */
void wf_ib_on_send_done(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                        unsigned slot);
/* Writes QP `qi`'s count of posted receives to the peer when due. */
void wf_ib_credit_flush(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi);
/* The matching layer's release hook: a rendezvous send's registration
 * goes. */
void wf_ib_req_release(wf_match_t *m, wf_mreq_t *r);
/* Fails the queued and staged sends of a failed peer (st). */
void wf_ib_send_fail(wf_ib_peer_t *p, weft_status_t st);

/* ---- ib_recv.c --------------------------------------------------------- */

weft_status_t wf_ib_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                          size_t cap, void *mh, wf_treq_t **req);
/* Allocates the receive state of a peer with p->nqp QPs. */
weft_status_t wf_ib_xfer_open(wf_tctx_t *ctx, wf_ib_peer_t *p);
void wf_ib_on_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi, unsigned slot,
                   size_t len);
/* Fails the posted receives and every message in progress of a failed
 * peer (st), and forgets held fragments. */
void wf_ib_recv_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st);
/* Frees the receive state (at teardown, before the matching layer's). */
void wf_ib_recv_free(wf_tctx_t *ctx, wf_ib_peer_t *p);

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
/* Starts the matching state of a context whose cfg.rank, cfg.size and
 * peers are set (init; the tests' fake contexts). */
void wf_ib_match_open(wf_tctx_t *ctx);
/* Frees every request and message of the context (fini; the tests). */
void wf_ib_xfer_free_all(wf_tctx_t *ctx);
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

#endif /* WF_IB_CALLS_H */