/*
 * exec_impl.h - the execution state of one request, shared by exec.c (the
 * plan runner) and the staging of its steps (struct wf_stage_ops, below;
 * src/dev/dev_exec.c for device memory).
 */
#ifndef WF_EXEC_IMPL_H
#define WF_EXEC_IMPL_H

#include "sched/engine_impl.h"
#include "weft_cuda.h"

enum { ST_WAITING = 0, ST_READY, ST_POSTED, ST_DONE };

/* A transfer handed to the transport.  For device requests it goes
 * through a pinned staging buffer, released when the transfer ends (a
 * send) or when the data reached the device (a receive). */
typedef struct {
    uint32_t step;
    wf_treq_t *treq;
    void *staging;
    bool counted; /* in e->inflight_send/recv: every receive, and every
                   * send but those the receiver pulls (exec.c) */
} posted_t;

/* Device work in flight for a step (src/dev/dev_exec.c). */
typedef enum {
    DW_STAGE_OUT, /* device -> staging copy; the send follows */
    DW_SEND_WAIT, /* staged, the transport had no room yet */
    DW_STAGE_IN,  /* staging -> device copy of a received message */
    DW_LOCAL      /* a reduce, copy or divide on the device */
} wf_devwork_kind_t;

typedef struct {
    uint32_t step;
    uint8_t kind;          /* wf_devwork_kind_t */
    wf_dev_event_t event;  /* recorded after the work */
    void *staging;
} wf_devwork_t;

/* One allocation with its arrays behind it (wf_exec_start); the plan's
 * dependents come from the shared index (req->built->deps). */
struct wf_exec {
    size_t slots;        /* entries of the per-step arrays below */
    uint8_t *state;
    uint32_t *pending;   /* unfinished dependencies of each step */
    uint32_t *queue;     /* ready FIFO, ring of nsteps entries */
    uint32_t q_head, q_len;
    uint32_t *blocked;   /* ready transfers waiting for a flow slot */
    uint32_t nblocked;
    posted_t *posted;
    uint32_t nposted, posted_cap;
    wf_devwork_t *dw;    /* device work in flight */
    uint32_t ndw, dw_cap;
    uint32_t ndone;
    void *scratch;
    uint64_t scratch_cap; /* its size: a kept block may be larger */
    void *mh[3];          /* the transport's registration of each buffer
                           * (wf_buf_id_t), or NULL (reg.c) */
    uint64_t sig[2];
};

/* ---- exec.c, for the staging ops ---------------------------------------- */
char *wf_exec_buf(struct weft_request *req, wf_bref_t r);
void wf_exec_mark_done(struct weft_request *req, uint32_t i);
uint64_t wf_exec_step_tag(const struct weft_request *req, const wf_step_t *s);
/* Appends to x->posted, growing it. */
weft_status_t wf_exec_add_posted(wf_exec_t *x, posted_t p);

/* ---- reg.c: the buffers registered for an operation's life ---------------- */
/* Registers the request's host buffers that a transfer of at least
 * e->reg_min bytes uses; a failed registration only leaves its handle
 * NULL (the transport then registers per message). */
void wf_exec_register(wf_engine_t *e, struct weft_request *req);
void wf_exec_deregister(wf_engine_t *e, struct weft_request *req);

/* ---- staging ------------------------------------------------------------
 * How the steps of a request whose buffers the engine cannot touch
 * directly (device memory) reach them: through host staging buffers.  A
 * request's `stage` is NULL for host buffers; the device path
 * (src/dev/dev_exec.c) provides the one other table.  exec.c calls these
 * and knows nothing of devices. */
struct wf_stage_ops {
    /* Scratch for the request where its data lives, and its return. */
    weft_status_t (*scratch)(wf_engine_t *e, struct weft_request *req,
                             uint64_t bytes, void **ptr, uint64_t *cap);
    void (*scratch_give)(wf_engine_t *e, void *ptr, uint64_t cap);
    /* A send: stages the data out, then sends.  Returns 1 when started,
     * 0 when it must wait for a flow slot, <0 on failure. */
    int (*send)(wf_engine_t *e, struct weft_request *req, uint32_t i);
    /* A host buffer for a receive; the message lands there first. */
    weft_status_t (*recv_staging)(wf_engine_t *e, struct weft_request *req,
                                  size_t bytes, void **staging);
    /* A message arrived in `staging` for step i: copies it in; the step
     * is done when the copy is (poll). */
    weft_status_t (*stage_in)(wf_engine_t *e, struct weft_request *req,
                              uint32_t i, void *staging);
    /* Starts a local step (reduce, copy, divide) where the data lives. */
    weft_status_t (*local)(wf_engine_t *e, struct weft_request *req,
                           uint32_t i);
    /* Completes the staged work that finished; returns the work done. */
    int (*poll)(wf_engine_t *e, struct weft_request *req,
                weft_status_t *status);
    /* Gives back a staging buffer (kept for reuse); never NULL. */
    void (*staging_give)(wf_engine_t *e, void *staging);
    /* The request ended: what it counted and reserved is given back
     * (forget), then what it still holds (release). */
    void (*forget)(wf_engine_t *e, struct weft_request *req);
    void (*release)(wf_engine_t *e, struct weft_request *req);
};

#endif /* WF_EXEC_IMPL_H */
