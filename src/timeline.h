/*
 * timeline.h - every operation of every communicator of this process, as
 * a Chrome trace (WEFT_TIMELINE, weft_timeline_start; docs/timeline.md).
 *
 * The engines hand each finished operation to wf_timeline_record(), which
 * copies a fixed-size record into a bounded ring; a writer thread formats
 * the ring into the file.  Nothing is formatted or written in the caller,
 * and when the ring is full records are counted as dropped rather than
 * waited for.  Off, an operation pays one relaxed load of wf_timeline_on.
 */
#ifndef WF_TIMELINE_H
#define WF_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "weft.h"

typedef struct {
    uint64_t start_ns, end_ns; /* wf_time_ns() */
    uint64_t seq;              /* the communicator's operation number */
    uint64_t bytes;            /* count times the dtype's size */
    uint64_t waited_ns;        /* from the start to the last peer's part */
    const char *algo;          /* a static name, or NULL */
    uint32_t comm_id;          /* wf_timeline_comm_id() of its engine */
    int32_t rank, size;        /* in that communicator */
    int32_t status;            /* weft_status_t */
    int32_t waited_on;         /* the peer whose part came last, or -1 */
    uint8_t coll, dtype;       /* wf_coll_t, weft_dtype_t */
} wf_timeline_rec_t;

/* Whether a timeline is being written (read on every operation). */
extern int wf_timeline_on;
static inline bool wf_timeline_active(void)
{
    return __atomic_load_n(&wf_timeline_on, __ATOMIC_RELAXED) != 0;
}

/* A number for a new communicator's engine: its track in the file. */
uint32_t wf_timeline_comm_id(void);

/* Called as each communicator is created, with its WEFT_TIMELINE (may be
 * empty) and its rank: the first one sets the rank "%r" stands for, and
 * the first with a path starts the timeline if none is being written. */
weft_status_t wf_timeline_comm_created(const char *pattern, int rank);

/* Queues one finished operation (only while wf_timeline_active()). */
void wf_timeline_record(const wf_timeline_rec_t *rec);

/* Writes out what is queued and flushes the file (a communicator's
 * destroy: what it did is on disk before the process may be killed). */
void wf_timeline_flush(void);

#endif /* WF_TIMELINE_H */
