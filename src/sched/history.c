/*
 * history.c - the last operations of a communicator, for hang diagnosis.
 *
 * A timeout says what this rank waits for; the question after a hang is
 * usually what every rank was doing before.  Each engine keeps its last
 * WF_HISTORY operations (sequence number, collective, count, dtype,
 * algorithm, start, end, status) and, with WEFT_DEBUG_DUMP=1, logs them
 * together with what each unfinished operation waits for when the
 * communicator fails.  Recording costs a few stores per operation.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "reduce/reduce.h"
#include "sched/engine_impl.h"
#include "timeline.h"

void wf_history_start_args(wf_engine_t *e, uint64_t seq,
                           const wf_coll_args_t *args, const char *algo,
                           uint64_t start_ms)
{
    wf_history_entry_t *h = &e->history.e[e->history.n++ % WF_HISTORY];
    *h = (wf_history_entry_t){
        .seq = seq, .coll = args->coll, .count = args->count,
        .dtype = args->dtype, .algo = algo ? algo : "?",
        .start_ms = start_ms, .status = WEFT_INPROGRESS,
        .start_ns = wf_timeline_active() ? wf_time_ns() : 0};
}

void wf_history_start(wf_engine_t *e, const struct weft_request *req,
                      uint64_t start_ms)
{
    wf_history_start_args(e, req->seq, &req->args, req->algo_name, start_ms);
    if (req->algo_name)
        wf_sig_make(req, e->history.e[(e->history.n - 1) % WF_HISTORY].sig);
}

bool wf_history_coll_sig(wf_engine_t *e, uint64_t seq, uint64_t mask,
                         uint64_t *full, uint64_t sig[2])
{
    bool found = false;
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->history.n, first = n > WF_HISTORY ? n - WF_HISTORY : 0;
    for (uint64_t i = n; i-- > first && !found;) {
        const wf_history_entry_t *h = &e->history.e[i % WF_HISTORY];
        if (h->coll != WF_COLL_SEND && h->coll != WF_COLL_RECV &&
            (h->seq & mask) == seq) {
            *full = h->seq;
            sig[0] = h->sig[0];
            sig[1] = h->sig[1];
            found = true;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return found;
}

/* The timeline's record of an operation that ended now. */
static void to_timeline(const wf_engine_t *e, const wf_history_entry_t *h,
                        const char *algo, int waited_on, uint64_t waited_ns,
                        wf_timeline_rec_t *r)
{
    uint64_t now = wf_time_ns();
    *r = (wf_timeline_rec_t){
        .start_ns = h->start_ns, .end_ns = now, .seq = h->seq,
        .bytes = h->count * wf_dtype_size((weft_dtype_t)h->dtype),
        .algo = algo ? algo : h->algo, .comm_id = e->timeline_id,
        .rank = e->rank, .size = e->size, .status = h->status,
        .waited_on = waited_on, .coll = (uint8_t)h->coll,
        .dtype = (uint8_t)h->dtype};
    /* A peer known but no time: it was waited for until the end. */
    if (waited_on >= 0)
        r->waited_ns = (waited_ns > h->start_ns ? waited_ns : now) -
                       h->start_ns;
}

static void end_entry(wf_engine_t *e, uint64_t seq, wf_coll_t coll,
                      weft_status_t status, const char *algo, int waited_on,
                      uint64_t waited_ns)
{
    wf_timeline_rec_t rec;
    bool record = false;
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->history.n, first = n > WF_HISTORY ? n - WF_HISTORY : 0;
    for (uint64_t i = n; i-- > first;) {
        wf_history_entry_t *h = &e->history.e[i % WF_HISTORY];
        if (h->seq == seq && h->coll == (int)coll && h->end_ms == 0) {
            /* The coarse clock may read below the precise start. */
            uint64_t end_ms = wf_time_ms_coarse();
            h->end_ms = end_ms > h->start_ms ? end_ms : h->start_ms;
            h->status = status;
            if ((record = h->start_ns && wf_timeline_active()))
                to_timeline(e, h, algo, waited_on, waited_ns, &rec);
            break;
        }
    }
    pthread_mutex_unlock(&e->lock);
    if (record)
        wf_timeline_record(&rec);
}

void wf_history_end_of(wf_engine_t *e, uint64_t seq, wf_coll_t coll,
                       weft_status_t status, int waited_on)
{
    end_entry(e, seq, coll, status, NULL, waited_on, 0);
}

void wf_history_end(wf_engine_t *e, const struct weft_request *req,
                    weft_status_t status)
{
    end_entry(e, req->seq, req->args.coll, status, req->algo_name,
              req->waited_on, req->waited_ns);
}

static void describe(const wf_history_entry_t *h, uint64_t now, char *buf,
                     size_t len)
{
    const char *dt = wf_dtype_valid(h->dtype)
                         ? wf_dtype_name((weft_dtype_t)h->dtype) : "?";
    int k = snprintf(buf, len, "#%llu %s %llu x %s (%s): ",
                     (unsigned long long)h->seq, wf_coll_name(h->coll),
                     (unsigned long long)h->count, dt, h->algo);
    if (k < 0 || (size_t)k >= len)
        return;
    if (h->end_ms)
        snprintf(buf + k, len - (size_t)k, "%s after %llu ms",
                 h->status == WEFT_OK ? "done" : weft_status_name(h->status),
                 (unsigned long long)(h->end_ms - h->start_ms));
    else
        snprintf(buf + k, len - (size_t)k, "unfinished for %llu ms",
                 (unsigned long long)(now - h->start_ms));
}

void wf_history_dump(wf_engine_t *e, const char *why)
{
    wf_history_entry_t copy[WF_HISTORY];
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->history.n, first = n > WF_HISTORY ? n - WF_HISTORY : 0;
    for (uint64_t i = first; i < n; i++)
        copy[i - first] = e->history.e[i % WF_HISTORY];
    pthread_mutex_unlock(&e->lock);
    uint64_t now = wf_time_ms();
    WEFT_WARN(SCHED, "debug dump of rank %d (%s): last %llu of %llu "
              "operations", e->rank, why, (unsigned long long)(n - first),
              (unsigned long long)n);
    for (uint64_t i = 0; i < n - first; i++) {
        char line[256];
        describe(&copy[i], now, line, sizeof(line));
        WEFT_WARN(SCHED, "  %s", line);
    }
    /* What the unfinished ones wait for (caller holds progress_lock). */
    for (struct weft_request *req = e->active_head; req; req = req->next) {
        char what[256];
        wf_exec_describe_wait(e, req, what, sizeof(what));
        WEFT_WARN(SCHED, "  #%llu %s is %s", (unsigned long long)req->seq,
                  wf_coll_name(req->args.coll), what);
    }
}
