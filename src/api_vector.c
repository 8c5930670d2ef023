/*
 * api_vector.c - the vector collectives' entry points (allgatherv,
 * gatherv, scatterv, alltoallv, reduce_scatterv and their non-blocking
 * twins) and the checks of their counts and displacements.  Like every
 * other call they go through wf_api_start (api.c); what is theirs is
 * turning the per-rank arrays into the buffers' extents, the in-place
 * layout and the digest the ranks' signatures compare.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "common.h"
#include "reduce/reduce.h"

/* The extent in bytes of the blocks counts/displs describe on n ranks;
 * false (logged) when an array is missing or an end overflows. */
static bool extent(const call_t *k, const char *what, const size_t *counts,
                   const size_t *displs, int n, size_t es, uint64_t *bytes)
{
    if (!counts || !displs) {
        WEFT_WARN(COLL, "%s: %s is NULL", k->fn,
                  !counts ? what : "a displacement array");
        return false;
    }
    uint64_t most = 0;
    for (int r = 0; r < n; r++) {
        uint64_t end;
        if (__builtin_add_overflow((uint64_t)displs[r], (uint64_t)counts[r],
                                   &end) ||
            end > SIZE_MAX / es) {
            WEFT_WARN(COLL, "%s: block %d of %s (displacement %zu, count "
                      "%zu) ends past the address space", k->fn, r, what,
                      displs[r], counts[r]);
            return false;
        }
        most = WF_MAX(most, end);
    }
    *bytes = most * es;
    return true;
}

typedef struct {
    size_t lo, hi;
    int rank;
} span_t;

static int span_cmp(const void *x, const void *y)
{
    const span_t *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Receive blocks that overlap would leave whichever arrived last: refused.
 * Empty blocks overlap nothing. */
static weft_status_t check_disjoint(const call_t *k, const size_t *counts,
                                    const size_t *displs, int n)
{
    span_t *s = malloc((size_t)n * sizeof(*s));
    if (!s)
        return WEFT_ERR_NO_MEMORY;
    int m = 0;
    for (int r = 0; r < n; r++)
        if (counts[r])
            s[m++] = (span_t){displs[r], displs[r] + counts[r], r};
    qsort(s, (size_t)m, sizeof(*s), span_cmp);
    for (int i = 1; i < m; i++) {
        if (s[i].lo < s[i - 1].hi) {
            WEFT_WARN(COLL, "%s: the receive blocks of ranks %d and %d "
                      "overlap (elements %zu-%zu and %zu-%zu)", k->fn,
                      s[i - 1].rank, s[i].rank, s[i - 1].lo, s[i - 1].hi - 1,
                      s[i].lo, s[i].hi - 1);
            free(s);
            return WEFT_ERR_INVALID_ARG;
        }
    }
    free(s);
    return WEFT_OK;
}

/* FNV-1a over the counts: what ranks that pass the same array agree on. */
static uint64_t digest(const size_t *counts, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int r = 0; r < n; r++)
        h = (h ^ (uint64_t)counts[r]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* A rank's own block given twice (its send count and its entry in the
 * counts) must agree. */
static weft_status_t own_block(const call_t *k, const wf_coll_args_t *a,
                               const char *single, size_t n,
                               const char *array, size_t entry)
{
    if (n == entry)
        return WEFT_OK;
    WEFT_WARN(COLL, "%s: %s %zu on rank %d differs from its own entry "
              "%s[%d] %zu", k->fn, single, n, a->rank, array, a->rank, entry);
    return WEFT_ERR_INVALID_ARG;
}

static weft_status_t allgatherv_args(const call_t *k, wf_coll_args_t *a)
{
    size_t es = a->elem_size;
    if (!extent(k, "recvcounts", k->counts, k->displs, a->size, es,
                &a->vrecv_bytes))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(own_block(k, a, "sendcount", k->count, "recvcounts",
                         k->counts[a->rank]));
    WEFT_CHECK(check_disjoint(k, k->counts, k->displs, a->size));
    a->vsend_bytes = (uint64_t)k->count * es;
    a->vdigest = digest(k->counts, a->size);
    const char *r = k->recvbuf;
    a->in_place = r && (const char *)k->sendbuf == r + k->displs[a->rank] * es;
    return WEFT_OK;
}

/* gatherv (root: recvbuf in blocks) and scatterv (root: sendbuf). */
static weft_status_t rooted_args(const call_t *k, wf_coll_args_t *a)
{
    size_t es = a->elem_size;
    bool gather = a->coll == WF_COLL_GATHERV;
    uint64_t own = (uint64_t)k->count * es, blocks = 0;
    if (a->rank == a->root) {
        const char *what = gather ? "recvcounts" : "sendcounts";
        if (!extent(k, what, k->counts, k->displs, a->size, es, &blocks))
            return WEFT_ERR_INVALID_ARG;
        if (gather)
            WEFT_CHECK(check_disjoint(k, k->counts, k->displs, a->size));
        const char *b = gather ? k->recvbuf : k->sendbuf;
        const char *o = gather ? k->sendbuf : k->recvbuf;
        a->in_place = b && o == b + k->displs[a->root] * es;
        if (!a->in_place)
            WEFT_CHECK(own_block(k, a, gather ? "sendcount" : "recvcount",
                                 k->count, what, k->counts[a->root]));
        a->vcounts = k->counts;
        a->vdispls = k->displs;
    }
    a->vsend_bytes = gather ? own : blocks;
    a->vrecv_bytes = gather ? blocks : own;
    return WEFT_OK;
}

static weft_status_t alltoallv_args(const call_t *k, wf_coll_args_t *a)
{
    size_t es = a->elem_size;
    a->in_place = k->sendbuf && k->sendbuf == k->recvbuf;
    if (!extent(k, "recvcounts", k->counts, k->displs, a->size, es,
                &a->vrecv_bytes))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(check_disjoint(k, k->counts, k->displs, a->size));
    if (a->in_place) { /* the data to send is laid out as received */
        a->vscounts = k->counts;
        a->vsdispls = k->displs;
        a->vsend_bytes = a->vrecv_bytes;
    } else {
        if (!extent(k, "sendcounts", k->scounts, k->sdispls, a->size, es,
                    &a->vsend_bytes))
            return WEFT_ERR_INVALID_ARG;
        WEFT_CHECK(own_block(k, a, "sendcounts entry", k->scounts[a->rank],
                             "recvcounts", k->counts[a->rank]));
        a->vscounts = k->scounts;
        a->vsdispls = k->sdispls;
    }
    uint64_t sent = 0;
    for (int r = 0; r < a->size; r++)
        sent += a->vscounts[r];
    a->count = (size_t)sent;
    return WEFT_OK;
}

static weft_status_t reduce_scatterv_args(const call_t *k, wf_coll_args_t *a)
{
    size_t es = a->elem_size;
    if (!k->counts) {
        WEFT_WARN(COLL, "%s: recvcounts is NULL", k->fn);
        return WEFT_ERR_INVALID_ARG;
    }
    uint64_t total = 0, before = 0;
    for (int r = 0; r < a->size; r++) {
        if (r == a->rank)
            before = total;
        if (__builtin_add_overflow(total, (uint64_t)k->counts[r], &total) ||
            total > SIZE_MAX / es) {
            WEFT_WARN(COLL, "%s: the recvcounts add up past the address "
                      "space", k->fn);
            return WEFT_ERR_INVALID_ARG;
        }
    }
    a->count = k->counts[a->rank];
    a->vsend_bytes = total * es;
    a->vrecv_bytes = (uint64_t)a->count * es;
    a->vdigest = digest(k->counts, a->size);
    const char *s = k->sendbuf;
    a->in_place = s && (const char *)k->recvbuf == s + before * es;
    return WEFT_OK;
}

weft_status_t wf_api_vector_args(const call_t *k, wf_coll_args_t *a)
{
    a->vcounts = k->counts;
    a->vdispls = k->displs;
    switch (k->coll) {
    case WF_COLL_ALLGATHERV: return allgatherv_args(k, a);
    case WF_COLL_GATHERV:
    case WF_COLL_SCATTERV:
        a->vcounts = a->vdispls = NULL;
        return rooted_args(k, a);
    case WF_COLL_ALLTOALLV: return alltoallv_args(k, a);
    case WF_COLL_REDUCE_SCATTERV:
        a->vdispls = NULL;
        return reduce_scatterv_args(k, a);
    default: return WEFT_ERR_INTERNAL;
    }
}

/* One call_t for every entry point below. */
static call_t vcall(const char *fn, wf_coll_t coll, const void *sendbuf,
                    void *recvbuf, size_t count, weft_dtype_t dtype,
                    weft_op_t op, int root)
{
    return CALL(fn, coll, sendbuf, recvbuf, count, dtype, op, root, -1);
}

#define VCOLL_PAIR(name, params, setup)                                        \
    WEFT_API weft_status_t weft_i##name(WF_VPARAMS params,                     \
                                        weft_request_t *req)                   \
    {                                                                          \
        call_t k = setup;                                                      \
        k.fn = "weft_i" #name;                                                 \
        return wf_api_start(comm, &k, req);                                    \
    }                                                                          \
    WEFT_API weft_status_t weft_##name(WF_VPARAMS params)                      \
    {                                                                          \
        call_t k = setup;                                                      \
        k.fn = "weft_" #name;                                                  \
        return wf_api_run(comm, &k);                                           \
    }
#define WF_VPARAMS(...) __VA_ARGS__

static call_t with(call_t k, const size_t *counts, const size_t *displs,
                   const size_t *scounts, const size_t *sdispls)
{
    k.counts = counts;
    k.displs = displs;
    k.scounts = scounts;
    k.sdispls = sdispls;
    return k;
}

VCOLL_PAIR(allgatherv,
           (const void *sendbuf, size_t sendcount, void *recvbuf,
            const size_t *recvcounts, const size_t *displs,
            weft_dtype_t dtype, weft_comm_t comm),
           with(vcall("", WF_COLL_ALLGATHERV, sendbuf, recvbuf, sendcount,
                      dtype, WEFT_SUM, -1),
                recvcounts, displs, NULL, NULL))
VCOLL_PAIR(gatherv,
           (const void *sendbuf, size_t sendcount, void *recvbuf,
            const size_t *recvcounts, const size_t *displs,
            weft_dtype_t dtype, int root, weft_comm_t comm),
           with(vcall("", WF_COLL_GATHERV, sendbuf, recvbuf, sendcount, dtype,
                      WEFT_SUM, root),
                recvcounts, displs, NULL, NULL))
VCOLL_PAIR(scatterv,
           (const void *sendbuf, const size_t *sendcounts,
            const size_t *displs, void *recvbuf, size_t recvcount,
            weft_dtype_t dtype, int root, weft_comm_t comm),
           with(vcall("", WF_COLL_SCATTERV, sendbuf, recvbuf, recvcount,
                      dtype, WEFT_SUM, root),
                sendcounts, displs, NULL, NULL))
VCOLL_PAIR(alltoallv,
           (const void *sendbuf, const size_t *sendcounts,
            const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
            const size_t *rdispls, weft_dtype_t dtype, weft_comm_t comm),
           with(vcall("", WF_COLL_ALLTOALLV, sendbuf, recvbuf, 0, dtype,
                      WEFT_SUM, -1),
                recvcounts, rdispls, sendcounts, sdispls))
VCOLL_PAIR(reduce_scatterv,
           (const void *sendbuf, void *recvbuf, const size_t *recvcounts,
            weft_dtype_t dtype, weft_op_t op, weft_comm_t comm),
           with(vcall("", WF_COLL_REDUCE_SCATTERV, sendbuf, recvbuf, 0, dtype,
                      op, -1),
                recvcounts, NULL, NULL, NULL))
