/*
 * reg.c - a request's buffers registered with the transport for the
 * operation's life, where the transport moves large messages straight
 * from and to registered memory (transport.h, wf_tdev_attr_t.reg_min:
 * the verbs transport's zero copy).
 *
 * A plan cuts its buffers into many messages (chunks, blocks, a tree's
 * subtrees).  Registered one message at a time, every message would pin
 * and unpin its pages; registered whole here, each message's own
 * registration finds this one in the transport's cache and takes a
 * reference (transport/ib/ib_mr.c).  Only a buffer that a transfer of at
 * least reg_min bytes uses is registered (the plan's transfer_max, found
 * once when it was built): one used by small messages alone would pay a
 * registration that no message needs.  The scratch
 * area is registered per operation too; it is the engine's, kept between
 * operations, but the transport's cache keeps no registration that
 * nobody holds, so nothing stays pinned behind a freed block.
 */
#include "common.h"
#include "sched/exec_impl.h"

/* Bytes of each buffer the plan may touch. */
static void buffer_bytes(const struct weft_request *req, uint64_t bytes[3])
{
    wf_coll_buffer_bytes(&req->args, &bytes[WF_BUF_SEND],
                         &bytes[WF_BUF_RECV]);
    bytes[WF_BUF_SCRATCH] = req->plan->scratch_bytes;
}

void wf_exec_register(wf_engine_t *e, struct weft_request *req)
{
    wf_exec_t *x = req->exec;
    const uint64_t *largest = req->built->transfer_max;
    uint64_t bytes[3];
    buffer_bytes(req, bytes);
    for (int b = WF_BUF_SEND; b <= WF_BUF_SCRATCH; b++) {
        if (largest[b] < e->reg_min || !bytes[b])
            continue;
        wf_bref_t whole = wf_bref((wf_buf_id_t)b, 0);
        if (e->tops->mem_reg(e->tctx, wf_exec_buf(req, whole),
                             (size_t)bytes[b], WF_MEM_HOST, &x->mh[b]) < 0)
            x->mh[b] = NULL; /* logged by the transport */
    }
}

void wf_exec_deregister(wf_engine_t *e, struct weft_request *req)
{
    wf_exec_t *x = req->exec;
    for (int b = WF_BUF_SEND; b <= WF_BUF_SCRATCH; b++) {
        if (x->mh[b])
            e->tops->mem_dereg(e->tctx, x->mh[b]);
        x->mh[b] = NULL;
    }
}
