/*
 * comm_shrink.c - weft_comm_shrink: a new communicator of the ranks that
 * are still alive, agreed through the rendezvous store.
 *
 * The survivors cannot agree over the data connections (some of them are
 * broken, which is why they shrink), so they meet in the parent's store,
 * under "shrink<seq>/":
 *   r<rank>   each caller's arrival, with the peers its engine saw go away
 *             (a bitmap of lost connections);
 *   decider   claimed with set-once by the first caller to arrive;
 *   members   written by the decider: the old ranks of the new
 *             communicator, ascending.
 * The decider waits until every rank has either arrived or been reported
 * lost by someone who arrived, or until twice the parent's timeout plus
 * 2 s have passed (a rank that hangs without dying is left out that way),
 * then writes the members.  One writer makes the result the same for everyone: a rank the
 * decider did not count, arriving late, is told so and gets no
 * communicator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "common.h"

/* How often the decider looks for arrivals. */
#define WF_SHRINK_POLL_MS 10

/* How long the decider waits for a rank that neither arrived nor was
 * reported lost: a survivor may learn of the failure only from its own
 * timeout (a rank no failure notice reached) and then spend the hang
 * diagnosis window (diag.c, at most 2 s) before calling shrink, so twice
 * the timeout, the bound for failure detection, plus that window. */
static int64_t arrival_window_ms(const wf_comm_impl_t *p)
{
    return 2 * p->cfg.timeout_ms + 2000;
}

static bool bit(const uint8_t *map, int i)
{
    return map[i / 8] >> (i % 8) & 1;
}

static void set_bit(uint8_t *map, int i)
{
    map[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* The decider: waits for arrivals, returns the members in *out (ascending
 * old ranks) and their number in *n. */
static weft_status_t decide(wf_comm_impl_t *p, wf_store_t *s, int32_t *out,
                            int *n)
{
    size_t maplen = ((size_t)p->size + 7) / 8;
    uint8_t *arrived = calloc(maplen, 1), *lost = calloc(maplen, 1);
    uint8_t *theirs = malloc(maplen);
    weft_status_t st = WEFT_OK;
    if (!arrived || !lost || !theirs) {
        st = WEFT_ERR_NO_MEMORY;
        goto out;
    }
    uint64_t deadline = wf_deadline_after(arrival_window_ms(p));
    for (;;) {
        int settled = 0;
        for (int r = 0; r < p->size; r++) {
            if (!bit(arrived, r)) {
                char name[24];
                size_t len = 0;
                snprintf(name, sizeof(name), "r%d", r);
                /* A zero timeout probes without waiting (or logging). */
                weft_status_t g = wf_store_get(s, name, theirs, maplen, &len,
                                               0);
                if (g == WEFT_OK && len == maplen) {
                    set_bit(arrived, r);
                    for (size_t i = 0; i < maplen; i++)
                        lost[i] |= theirs[i];
                } else if (g != WEFT_OK && g != WEFT_ERR_TIMEOUT) {
                    st = g;
                    goto out;
                }
            }
            settled += bit(arrived, r) || bit(lost, r);
        }
        if (settled == p->size || wf_deadline_passed(deadline))
            break;
        wf_sleep_ms(WF_SHRINK_POLL_MS);
    }
    *n = 0;
    for (int r = 0; r < p->size; r++)
        if (bit(arrived, r))
            out[(*n)++] = r;
out:
    free(arrived);
    free(lost);
    free(theirs);
    return st;
}

/* Publishes this rank's arrival, takes part in the decision, and returns
 * this rank's place in the new communicator (-1: left out) and its size. */
static weft_status_t agree(wf_comm_impl_t *p, wf_store_t *s, int *new_rank,
                           int *new_size)
{
    size_t maplen = ((size_t)p->size + 7) / 8;
    size_t cap = (size_t)p->size * sizeof(int32_t);
    uint8_t *lost = calloc(maplen, 1);
    int32_t *members = malloc(cap);
    weft_status_t st;
    if (!lost || !members) {
        st = WEFT_ERR_NO_MEMORY;
        goto out;
    }
    wf_engine_lost_peers(p->engine, lost);
    char name[24];
    snprintf(name, sizeof(name), "r%d", p->rank);
    WEFT_CHECK_GOTO(wf_store_set(s, name, lost, maplen), st, out);
    int32_t me = p->rank, who = -1;
    bool decider = false;
    size_t len = 0;
    WEFT_CHECK_GOTO(wf_store_set_once(s, "decider", &me, sizeof(me), &decider,
                                      &who, sizeof(who), &len), st, out);
    if (decider) {
        int n = 0;
        WEFT_CHECK_GOTO(decide(p, s, members, &n), st, out);
        WEFT_CHECK_GOTO(wf_store_set(s, "members", members,
                                     (size_t)n * sizeof(int32_t)), st, out);
    }
    /* The decider answers within its window from its own arrival, which
     * came before ours. */
    WEFT_CHECK_GOTO(wf_store_get(s, "members", members, cap, &len,
                                 arrival_window_ms(p) + 1000), st, out);
    *new_size = (int)(len / sizeof(int32_t));
    *new_rank = -1;
    for (int i = 0; i < *new_size; i++)
        if (members[i] == p->rank)
            *new_rank = i;
    st = WEFT_OK;
out:
    free(lost);
    free(members);
    return st;
}

static weft_status_t shrink_on(wf_comm_impl_t *p, weft_comm_t *newcomm)
{
    if (!newcomm) {
        WEFT_WARN(INIT, "weft_comm_shrink: newcomm is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    *newcomm = NULL;
    uint64_t seq = __atomic_fetch_add(&p->shrink_seq, 1, __ATOMIC_RELAXED);
    char prefix[48];
    snprintf(prefix, sizeof(prefix), "shrink%llu/", (unsigned long long)seq);
    wf_store_t *s = NULL;
    int rank = -1, size = 0;
    WEFT_CHECK(wf_store_sub(p->store, prefix, &s));
    weft_status_t st = agree(p, s, &rank, &size);
    wf_store_close(s);
    if (st != WEFT_OK)
        return st;
    if (rank < 0) {
        WEFT_WARN(INIT, "weft_comm_shrink: rank %d arrived after the "
                  "survivors were decided without it (%d ranks, decided "
                  "within 2 x WEFT_TIMEOUT + 2 s of the first arrival)",
                  p->rank, size);
        return WEFT_ERR_REMOTE;
    }
    uint64_t ident[3] = {p->comm_key, seq, 0x736872696e6bull /* "shrink" */};
    WEFT_CHECK(wf_comm_child(p, wf_hash64(ident, sizeof(ident)), rank, size,
                             newcomm));
    WEFT_INFO(INIT, "shrink: rank %d of %d becomes rank %d of %d", p->rank,
              p->size, rank, size);
    return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_shrink(weft_comm_t comm,
                                        weft_comm_t *newcomm)
{
    wf_comm_impl_t *p;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_shrink", &p));
    weft_status_t st = shrink_on(p, newcomm);
    wf_comm_put(p);
    return st;
}
