/*
 * stream_order.c - operations enqueued on a device stream, as NCCL does.
 *
 * weft_allreduce_stream(..., stream) returns at once.  The operation must
 * start only when the work enqueued on `stream` before it is done, and the
 * work enqueued after it must wait until it ends.  Two things are put on
 * the stream:
 *
 *  1. a host function that opens the request's gate: the engine keeps a
 *     gated request (and those submitted after it, so operations still
 *     start in order) back until then;
 *  2. a wait on a flag word in pinned memory (the device layer's
 *     stream_wait_flag; cuStreamWaitValue32 on a GPU), which the request
 *     sets when it completes, with an error as well, so a failed
 *     operation never stalls the stream: its error is the communicator's
 *     (weft_comm_get_error) as for any operation.
 *
 * No thread blocks: not the caller, not a CUDA callback thread.  Flag
 * words come from a process-wide pool of pinned pages; a word is reused
 * only once an event recorded on the stream after its wait has completed.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common.h"
#include "dev/stream_order.h"

#define FLAGS_PER_PAGE 1024

typedef struct {
    volatile uint32_t *flag;
    wf_dev_event_t passed; /* recorded after the stream's wait */
    bool busy;
} flag_slot_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static flag_slot_t *slots;
static uint32_t nslots, slots_cap;

/* A free flag word (set to 0) for `dev`, under pool_lock. */
static weft_status_t flag_take(const wf_dev_ops_t *dev, flag_slot_t **out)
{
    for (uint32_t k = 0; k < nslots; k++) {
        flag_slot_t *s = &slots[k];
        if (s->busy && s->passed && dev->event_query(s->passed) == WEFT_OK)
            s->busy = false; /* the stream is past its wait */
        if (!s->busy) {
            *s->flag = 0;
            *out = s;
            return WEFT_OK;
        }
    }
    /* Pages are never freed: a stream may still be waiting on them. */
    void *page;
    WEFT_CHECK(dev->alloc_pinned(FLAGS_PER_PAGE * sizeof(uint32_t), &page));
    for (uint32_t k = 0; k < FLAGS_PER_PAGE; k++) {
        if (!wf_array_room((void **)&slots, &slots_cap, nslots,
                           sizeof(*slots)))
            return nslots ? flag_take(dev, out) : WEFT_ERR_NO_MEMORY;
        wf_dev_event_t ev;
        if (dev->event_create(&ev) != WEFT_OK)
            break;
        slots[nslots++] = (flag_slot_t){
            .flag = (volatile uint32_t *)page + k, .passed = ev};
    }
    return nslots ? flag_take(dev, out) : WEFT_ERR_CUDA;
}

/* The host function: the work before the operation on the stream is done. */
static void open_gate(void *arg)
{
    struct weft_request *req = arg;
    wf_req_open_gate(req);
    wf_req_release(req);
}

weft_status_t wf_stream_attach(const wf_dev_ops_t *dev,
                               struct weft_request *req, void *stream)
{
    flag_slot_t *slot = NULL;
    const char *what = "allocating a pinned flag word";
    pthread_mutex_lock(&pool_lock);
    weft_status_t st = flag_take(dev, &slot);
    if (st != WEFT_OK)
        goto out;
    slot->busy = true;
    wf_req_retain(req); /* the host function's reference */
    req->gated = true;
    what = "enqueueing the operation's start on the stream";
    st = dev->host_func(stream, open_gate, req);
    if (st != WEFT_OK) {
        wf_req_release(req);
        goto err_ungate;
    }
    /* From here the host function runs some day; open_gate on a request
     * that was never submitted is harmless. */
    what = "making the stream wait for the operation";
    st = dev->stream_wait_flag(stream, slot->flag);
    if (st != WEFT_OK)
        goto err_ungate;
    what = "recording an event after the stream's wait";
    st = dev->event_record(slot->passed, stream);
    if (st != WEFT_OK) {
        /* The stream waits on the word already: release it now, and never
         * reuse the word (4 bytes), as nothing tells when it has passed. */
        __atomic_store_n(slot->flag, 1, __ATOMIC_RELEASE);
        slot->passed = NULL; /* busy for good (flag_take) */
        goto err_keep_slot;
    }
    req->done_flag = slot->flag;
    goto out;
err_ungate:
    slot->busy = false;
err_keep_slot:
    req->gated = false;
out:
    pthread_mutex_unlock(&pool_lock);
    if (st != WEFT_OK)
        WEFT_WARN(COLL, "%s on a stream: %s failed: %s",
                  wf_coll_name(req->args.coll), what,
                  st == WEFT_ERR_NO_MEMORY ? "out of memory"
                                           : dev->last_error());
    return st;
}
