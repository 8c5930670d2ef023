/*
 * test_vcolls.c - the vector collectives (allgatherv, gatherv, scatterv,
 * alltoallv, reduce_scatterv) on 1 to 5 thread ranks and 3 processes:
 * counts that differ per rank, zeros on some ranks, one rank holding
 * everything, all empty; blocks laid out in reverse rank order with gaps
 * that must stay untouched; in place and out of place; blocking and
 * non-blocking.  Every element is checked against a value computed here
 * from its sender, destination and index.  Then ranks that disagree on
 * the counts end with WEFT_ERR_MISMATCH naming both sides, and bad
 * arrays are refused with WEFT_ERR_INVALID_ARG and a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define GAP 3           /* elements between blocks, left as SENTINEL */
#define SENTINEL -777.0

typedef enum { UNEVEN, ONE_HOLDS_ALL, ALL_EMPTY, EQUAL, NPATTERNS } pattern_t;

static const char *const pattern_names[] = {"uneven", "one rank holds all",
                                            "all empty", "equal"};

/* Rank r's block in a pattern: several chunks (1 KiB chunks, 8-byte
 * elements), a single element, or nothing. */
static size_t count_of(pattern_t p, int r, int size)
{
    switch (p) {
    case UNEVEN: return r % 3 == 1 ? 0 : (size_t)(1 + 150 * r + 7 * (r % 2));
    case ONE_HOLDS_ALL: return r == size - 1 ? 700 : 0;
    case ALL_EMPTY: return 0;
    default: return 130;
    }
}

/* Blocks in reverse rank order with GAP elements before each; returns
 * the buffer's length in elements. */
static size_t lay_out(const size_t *counts, size_t *displs, int size)
{
    size_t at = 0;
    for (int r = size - 1; r >= 0; r--) {
        at += GAP;
        displs[r] = at;
        at += counts[r];
    }
    return at + GAP;
}

/* The value of element i that rank `from` sends to rank `to`. */
static double val(int from, int to, size_t i)
{
    return (double)(from * 100000 + to * 1000) + (double)(i % 997);
}

static double *sentinels(size_t n)
{
    double *b = malloc((n ? n : 1) * sizeof(*b));
    ASSERT_TRUE(b != NULL);
    for (size_t i = 0; i < n; i++)
        b[i] = SENTINEL;
    return b;
}

/* Every element of buf: block r (counts/displs) holds what rank r sent
 * to `to` (to < 0: the block's own values, val(r, r, i)), the rest
 * SENTINEL. */
static void check_blocks(const char *what, const double *buf, size_t len,
                         const size_t *counts, const size_t *displs, int size,
                         int me, int to)
{
    size_t wrong = 0;
    char *owned = calloc(len ? len : 1, 1);
    for (int r = 0; r < size; r++) {
        for (size_t i = 0; i < counts[r]; i++) {
            double want = val(r, to < 0 ? r : to, i);
            owned[displs[r] + i] = 1;
            if (buf[displs[r] + i] != want && wrong++ < 3)
                fprintf(stderr, "%s, rank %d: block %d element %zu is %g, "
                        "expected %g\n", what, me, r, i,
                        buf[displs[r] + i], want);
        }
    }
    for (size_t i = 0; i < len; i++)
        if (!owned[i] && buf[i] != SENTINEL && wrong++ < 3)
            fprintf(stderr, "%s, rank %d: gap element %zu was written\n",
                    what, me, i);
    free(owned);
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong elements on rank %d",
                     what, wrong, me);
}

static weft_status_t finish(weft_status_t st, weft_request_t req, bool nb)
{
    if (!nb || st != WEFT_OK)
        return st;
    st = weft_wait(req);
    weft_request_free(req);
    return st;
}

static void allgatherv_case(weft_comm_t comm, int me, int size, pattern_t p,
                            bool in_place, bool nb)
{
    size_t counts[8] = {0}, displs[8] = {0};
    for (int r = 0; r < size; r++)
        counts[r] = count_of(p, r, size);
    size_t len = lay_out(counts, displs, size);
    double *recv = sentinels(len), *send = sentinels(counts[me]);
    double *src = in_place ? recv + displs[me] : send;
    for (size_t i = 0; i < counts[me]; i++)
        src[i] = val(me, me, i);
    weft_request_t req = NULL;
    weft_status_t st =
        nb ? weft_iallgatherv(src, counts[me], recv, counts, displs,
                              WEFT_FLOAT64, comm, &req)
           : weft_allgatherv(src, counts[me], recv, counts, displs,
                             WEFT_FLOAT64, comm);
    char what[128];
    snprintf(what, sizeof(what), "allgatherv %s%s%s", pattern_names[p],
             in_place ? ", in place" : "", nb ? ", non-blocking" : "");
    ASSERT_OK(finish(st, req, nb));
    check_blocks(what, recv, len, counts, displs, size, me, -1);
    free(recv);
    free(send);
}

static void gatherv_case(weft_comm_t comm, int me, int size, pattern_t p,
                         bool in_place, bool nb)
{
    int root = 1 % size;
    size_t counts[8] = {0}, displs[8] = {0};
    for (int r = 0; r < size; r++)
        counts[r] = count_of(p, r, size);
    size_t len = lay_out(counts, displs, size);
    double *recv = sentinels(len), *send = sentinels(counts[me]);
    bool ip = in_place && me == root;
    double *src = ip ? recv + displs[me] : send;
    for (size_t i = 0; i < counts[me]; i++)
        src[i] = val(me, root, i);
    /* Only the root's recvbuf and arrays are read. */
    const size_t *rc = me == root ? counts : NULL;
    const size_t *rd = me == root ? displs : NULL;
    weft_request_t req = NULL;
    weft_status_t st =
        nb ? weft_igatherv(src, counts[me], me == root ? recv : NULL, rc, rd,
                           WEFT_FLOAT64, root, comm, &req)
           : weft_gatherv(src, counts[me], me == root ? recv : NULL, rc, rd,
                          WEFT_FLOAT64, root, comm);
    ASSERT_OK(finish(st, req, nb));
    if (me == root) {
        char what[128];
        snprintf(what, sizeof(what), "gatherv %s%s%s", pattern_names[p],
                 in_place ? ", in place" : "", nb ? ", non-blocking" : "");
        check_blocks(what, recv, len, counts, displs, size, me, me);
    }
    free(recv);
    free(send);
}

static void scatterv_case(weft_comm_t comm, int me, int size, pattern_t p,
                          bool in_place, bool nb)
{
    int root = size - 1;
    size_t counts[8] = {0}, displs[8] = {0};
    for (int r = 0; r < size; r++)
        counts[r] = count_of(p, r, size);
    size_t len = lay_out(counts, displs, size);
    double *send = sentinels(len), *recv = sentinels(counts[me] + GAP);
    for (int r = 0; r < size && me == root; r++)
        for (size_t i = 0; i < counts[r]; i++)
            send[displs[r] + i] = val(root, r, i);
    bool ip = in_place && me == root;
    double *dst = ip ? send + displs[me] : recv;
    weft_request_t req = NULL;
    weft_status_t st =
        nb ? weft_iscatterv(me == root ? send : NULL,
                            me == root ? counts : NULL,
                            me == root ? displs : NULL, dst, counts[me],
                            WEFT_FLOAT64, root, comm, &req)
           : weft_scatterv(me == root ? send : NULL,
                           me == root ? counts : NULL,
                           me == root ? displs : NULL, dst, counts[me],
                           WEFT_FLOAT64, root, comm);
    ASSERT_OK(finish(st, req, nb));
    size_t wrong = 0;
    for (size_t i = 0; i < counts[me]; i++)
        wrong += dst[i] != val(root, me, i);
    for (size_t i = counts[me]; !ip && i < counts[me] + GAP; i++)
        wrong += recv[i] != SENTINEL; /* nothing past the block */
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "scatterv %s%s%s: %zu wrong on "
                     "rank %d", pattern_names[p], in_place ? ", in place" : "",
                     nb ? ", non-blocking" : "", wrong, me);
    free(recv);
    free(send);
}

/* How many elements rank s sends rank d; symmetric, as in place needs. */
static size_t a2a_count(pattern_t p, int s, int d, int size)
{
    switch (p) {
    case UNEVEN: return (size_t)((s + d) % 3) * 150 + (s == d);
    case ONE_HOLDS_ALL: return s == size - 1 || d == size - 1 ? 300 : 0;
    case ALL_EMPTY: return 0;
    default: return 90;
    }
}

static void alltoallv_case(weft_comm_t comm, int me, int size, pattern_t p,
                           bool in_place, bool nb)
{
    size_t sc[8], sd[8], rc[8], rd[8];
    for (int r = 0; r < size; r++) {
        sc[r] = a2a_count(p, me, r, size);
        rc[r] = a2a_count(p, r, me, size);
    }
    size_t slen = lay_out(sc, sd, size), rlen = lay_out(rc, rd, size);
    /* The send side in forward order, to differ from the receive side's. */
    size_t at = 0;
    for (int r = 0; r < size; r++, at += sc[r - 1] + 1)
        sd[r] = at;
    double *send = sentinels(slen), *recv = sentinels(rlen);
    double *from = in_place ? recv : send;
    const size_t *fc = in_place ? rc : sc, *fd = in_place ? rd : sd;
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < fc[r]; i++)
            from[fd[r] + i] = val(me, r, i);
    weft_request_t req = NULL;
    weft_status_t st =
        nb ? weft_ialltoallv(from, in_place ? NULL : sc, in_place ? NULL : sd,
                             recv, rc, rd, WEFT_FLOAT64, comm, &req)
           : weft_alltoallv(from, in_place ? NULL : sc, in_place ? NULL : sd,
                            recv, rc, rd, WEFT_FLOAT64, comm);
    ASSERT_OK(finish(st, req, nb));
    char what[128];
    snprintf(what, sizeof(what), "alltoallv %s%s%s", pattern_names[p],
             in_place ? ", in place" : "", nb ? ", non-blocking" : "");
    check_blocks(what, recv, rlen, rc, rd, size, me, me);
    free(send);
    free(recv);
}

/* Rank r's contribution to element j of the whole vector. */
static int32_t rs_in(int r, size_t j) { return (int32_t)((r * 7 + j) % 13); }

static void reduce_scatterv_case(weft_comm_t comm, int me, int size,
                                 pattern_t p, bool in_place, bool nb)
{
    size_t counts[8] = {0}, total = 0, before = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = count_of(p, r, size) * 2; /* int32: as many bytes */
        if (r == me)
            before = total;
        total += counts[r];
    }
    int32_t *send = malloc((total + 1) * sizeof(*send));
    int32_t *recv = malloc((counts[me] + GAP) * sizeof(*recv));
    ASSERT_TRUE(send && recv);
    for (size_t j = 0; j < total; j++)
        send[j] = rs_in(me, j);
    for (size_t i = 0; i < counts[me] + GAP; i++)
        recv[i] = -1;
    int32_t *dst = in_place ? send + before : recv;
    weft_request_t req = NULL;
    weft_status_t st =
        nb ? weft_ireduce_scatterv(send, dst, counts, WEFT_INT32, WEFT_SUM,
                                   comm, &req)
           : weft_reduce_scatterv(send, dst, counts, WEFT_INT32, WEFT_SUM,
                                  comm);
    ASSERT_OK(finish(st, req, nb));
    size_t wrong = 0;
    for (size_t i = 0; i < counts[me]; i++) {
        int32_t want = 0;
        for (int r = 0; r < size; r++)
            want += rs_in(r, before + i);
        if (dst[i] != want && wrong++ < 3)
            fprintf(stderr, "reduce_scatterv rank %d element %zu: %d, "
                    "expected %d\n", me, i, dst[i], want);
    }
    for (size_t i = counts[me]; !in_place && i < counts[me] + GAP; i++)
        wrong += recv[i] != -1;
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "reduce_scatterv %s%s%s: %zu wrong "
                     "on rank %d", pattern_names[p],
                     in_place ? ", in place" : "", nb ? ", non-blocking" : "",
                     wrong, me);
    free(send);
    free(recv);
}

typedef void (*case_fn)(weft_comm_t, int, int, pattern_t, bool, bool);
static const case_fn cases[] = {allgatherv_case, gatherv_case, scatterv_case,
                                alltoallv_case, reduce_scatterv_case};

static void matrix(weft_comm_t comm, int me, int size)
{
    for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++)
        for (int p = 0; p < NPATTERNS; p++)
            for (int ip = 0; ip < 2; ip++)
                for (int nb = 0; nb < 2; nb++)
                    cases[c](comm, me, size, (pattern_t)p, ip, nb);
}

static void thread_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size,
                               "WEFT_CHUNK_SIZE=1k,WEFT_TIMEOUT=60s", &comm));
    matrix(comm, rank, size);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void threads(int size)
{
    wf_test_run_threads(size, thread_rank, (void *)wf_test_unique("vcoll"));
}

WF_TEST(coll_vector_n1, 30) { threads(1); }
WF_TEST(coll_vector_n2, 60) { threads(2); }
WF_TEST(coll_vector_n3, 90) { threads(3); }
WF_TEST(coll_vector_n5, 120) { threads(5); }

static void proc_rank(int rank, int size, void *p)
{
    const char *const *a = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_rdv(a[0], a[1], rank, size,
                               "WEFT_CHUNK_SIZE=1k,WEFT_TIMEOUT=60s", &comm));
    matrix(comm, rank, size);
    ASSERT_OK(weft_comm_destroy(comm));
}

/* Processes: the shared-memory transport between them. */
WF_TEST(coll_vector_procs_n3, 120)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *a[2] = {wf_test_unique("vcollp"), addr};
    wf_test_run_procs(3, proc_rank, a);
    wf_test_stop_process(pid);
}
