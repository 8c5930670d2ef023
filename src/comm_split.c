/*
 * comm_split.c - weft_comm_split: every rank of the parent publishes its
 * (color, key) under a per-call prefix of the parent's store, reads all the
 * others, and the ranks sharing a color build a new communicator with its
 * own namespace in the store, its own transport endpoint and engine
 * (wf_comm_child, which weft_comm_shrink uses too).  weft_comm_dup is the
 * split where every rank keeps its color and its place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "common.h"

typedef struct {
    int32_t color;
    int32_t key;
} split_record_t;

typedef struct {
    int32_t key;
    int32_t parent_rank;
} member_t;

static int member_cmp(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->parent_rank - y->parent_rank;
}

/* Publishes (color, key) and computes this rank's place among the ranks of
 * its color: *new_rank and *new_size. */
static weft_status_t exchange_colors(wf_comm_impl_t *p, uint64_t seq,
                                     int color, int key, int *new_rank,
                                     int *new_size)
{
    char prefix[48], name[32];
    wf_store_t *s = NULL;
    weft_status_t st;
    member_t *members = calloc((size_t)p->size, sizeof(*members));
    if (!members)
        return WEFT_ERR_NO_MEMORY;
    snprintf(prefix, sizeof(prefix), "split%llu/", (unsigned long long)seq);
    WEFT_CHECK_GOTO(wf_store_sub(p->store, prefix, &s), st, out);
    split_record_t mine = {color, key};
    snprintf(name, sizeof(name), "r%d", p->rank);
    WEFT_CHECK_GOTO(wf_store_set(s, name, &mine, sizeof(mine)), st, out);
    int n = 0;
    for (int r = 0; r < p->size; r++) {
        split_record_t rec;
        size_t len = 0;
        snprintf(name, sizeof(name), "r%d", r);
        WEFT_CHECK_GOTO(wf_store_get(s, name, &rec, sizeof(rec), &len,
                                     p->cfg.timeout_ms), st, out);
        if (len != sizeof(rec)) {
            WEFT_WARN(INIT, "weft_comm_split: malformed record of rank %d", r);
            st = WEFT_ERR_MISMATCH;
            goto out;
        }
        if (rec.color == color)
            members[n++] = (member_t){rec.key, r};
    }
    qsort(members, (size_t)n, sizeof(*members), member_cmp);
    for (int i = 0; i < n; i++)
        if (members[i].parent_rank == p->rank)
            *new_rank = i;
    *new_size = n;
    st = WEFT_OK;
out:
    wf_store_close(s);
    free(members);
    return st;
}

weft_status_t wf_comm_child(wf_comm_impl_t *p, uint64_t comm_key, int rank,
                            int size, weft_comm_t *out)
{
    weft_status_t st;
    char prefix[48];
    wf_comm_impl_t *c = calloc(1, sizeof(*c));
    struct weft_comm *shell = malloc(sizeof(*shell));
    if (!c || !shell) {
        free(c);
        free(shell);
        WEFT_WARN(INIT, "out of memory creating a communicator of %d ranks",
                  size);
        return WEFT_ERR_NO_MEMORY;
    }
    wf_memcache_init(&c->memcache);
    c->cfg = p->cfg;
    wf_plan_cache_init(&c->plans, (int)c->cfg.plan_cache);
    c->cfg.rank = c->rank = rank;
    c->cfg.world_size = c->size = size;
    c->job_key = p->job_key;
    memcpy(c->secret, p->secret, sizeof(c->secret));
    c->comm_key = comm_key;
    snprintf(prefix, sizeof(prefix), "c%016llx/",
             (unsigned long long)c->comm_key);
    WEFT_CHECK_GOTO(wf_store_sub(p->store, prefix, &c->store), st, err);
    WEFT_CHECK_GOTO(wf_comm_connect(c), st, err);
    *out = wf_comm_wrap(shell, c);
    return WEFT_OK;
err:
    wf_comm_impl_free(c, true);
    free(shell);
    return st;
}

static weft_status_t split_on(wf_comm_impl_t *p, int color, int key,
                              weft_comm_t *newcomm)
{
    int rank = -1, size = 0;
    if (!newcomm || (color < 0 && color != WEFT_UNDEFINED)) {
        WEFT_WARN(INIT, "weft_comm_split: %s", !newcomm
                  ? "newcomm is NULL"
                  : "color must be >= 0 or WEFT_UNDEFINED");
        return WEFT_ERR_INVALID_ARG;
    }
    uint64_t seq = __atomic_fetch_add(&p->split_seq, 1, __ATOMIC_RELAXED);
    WEFT_CHECK(exchange_colors(p, seq, color, key, &rank, &size));
    if (color == WEFT_UNDEFINED) {
        *newcomm = NULL;
        return WEFT_OK;
    }
    uint64_t ident[3] = {p->comm_key, seq, (uint64_t)color};
    WEFT_CHECK(wf_comm_child(p, wf_hash64(ident, sizeof(ident)), rank, size,
                             newcomm));
    WEFT_INFO(INIT, "split: color %d gives rank %d of %d (parent rank %d)",
              color, rank, size, p->rank);
    return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_split(weft_comm_t comm, int color, int key,
                                       weft_comm_t *newcomm)
{
    wf_comm_impl_t *p;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_split", &p));
    weft_status_t st = split_on(p, color, key, newcomm);
    wf_comm_put(p);
    return st;
}

/* A duplicate is a split in which every rank has the one color and keeps
 * its rank as key: its identity comes from the same sequence as the
 * splits', so a dup and a split of one communicator never share a
 * namespace, and a rank that never calls it leaves the others with
 * WEFT_ERR_TIMEOUT, as a split would. */
WEFT_API weft_status_t weft_comm_dup(weft_comm_t comm, weft_comm_t *newcomm)
{
    wf_comm_impl_t *p;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_dup", &p));
    weft_status_t st;
    if (!newcomm) {
        WEFT_WARN(INIT, "weft_comm_dup: newcomm is NULL");
        st = WEFT_ERR_INVALID_ARG;
    } else {
        st = split_on(p, 0, p->rank, newcomm);
    }
    wf_comm_put(p);
    return st;
}
