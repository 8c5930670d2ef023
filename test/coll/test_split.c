/*
 * test_split.c - split and duplicated communicators, several collectives in
 * flight on one communicator, and collectives on two communicators at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static void split_rank(int rank, int size, void *p)
{
    weft_comm_t world, half, third = NULL;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &world));
    /* Colors by parity, keys reversed: new rank order is descending. */
    ASSERT_OK(weft_comm_split(world, rank % 2, -rank, &half));
    int r, s;
    ASSERT_OK(weft_comm_rank(half, &r));
    ASSERT_OK(weft_comm_size(half, &s));
    int members = (size - rank % 2 + 1) / 2;
    ASSERT_EQ(s, members);
    /* Ranks of my color in descending parent order. */
    int expect_rank = 0;
    for (int q = size - 1; q > rank; q--)
        if (q % 2 == rank % 2)
            expect_rank++;
    ASSERT_EQ(r, expect_rank);
    int64_t v = rank;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_INT64, WEFT_SUM, half));
    int64_t want = 0;
    for (int q = rank % 2; q < size; q += 2)
        want += q;
    ASSERT_EQ(v, want);
    /* WEFT_UNDEFINED: rank 0 stays out; the others form one group. */
    ASSERT_OK(weft_comm_split(world, rank == 0 ? WEFT_UNDEFINED : 7, 0,
                              &third));
    /* Collectives on two communicators at once: every rank on `half`,
     * ranks 1.. also on `third`. */
    weft_request_t ra = NULL, rb;
    int64_t x = 1, y = rank;
    ASSERT_OK(weft_iallreduce(&y, &y, 1, WEFT_INT64, WEFT_MAX, half, &rb));
    if (rank == 0) {
        ASSERT_TRUE(third == NULL);
    } else {
        ASSERT_OK(weft_comm_size(third, &s));
        ASSERT_EQ(s, size - 1);
        ASSERT_OK(weft_iallreduce(&x, &x, 1, WEFT_INT64, WEFT_SUM, third,
                                  &ra));
    }
    ASSERT_OK(weft_wait(rb));
    weft_request_free(rb);
    ASSERT_EQ(y, (size - 1) - ((size - 1 - rank) % 2));
    if (third) {
        ASSERT_OK(weft_wait(ra));
        weft_request_free(ra);
        ASSERT_EQ(x, size - 1);
        ASSERT_OK(weft_comm_destroy(third));
    }
    ASSERT_STATUS(weft_comm_split(world, -5, 0, &third),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_OK(weft_comm_destroy(half));
    /* The parent still works after its children are gone. */
    v = 1;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_INT64, WEFT_SUM, world));
    ASSERT_EQ(v, size);
    ASSERT_OK(weft_comm_destroy(world));
}

WF_TEST(coll_split_parity_and_undefined, 60)
{
    wf_test_run_threads(5, split_rank, (void *)wf_test_unique("split"));
}

/* weft_comm_dup: the same ranks in the same order, and a tag space of its
 * own: rank 0 sends on the parent first and on the duplicate second, with
 * the same tag, and rank 1 receives in the other order, so a shared tag
 * space would hand it the parent's value first.  Collectives on both at
 * once, and the duplicate outliving its parent. */
static void dup_rank(int rank, int size, void *p)
{
    weft_comm_t world, dup;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &world));
    ASSERT_STATUS(weft_comm_dup(world, NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(weft_comm_dup(world, &dup));
    int r, s;
    ASSERT_OK(weft_comm_rank(dup, &r));
    ASSERT_OK(weft_comm_size(dup, &s));
    ASSERT_EQ(r, rank);
    ASSERT_EQ(s, size);
    int32_t on_world = 111, on_dup = 222, got_first = 0, got_second = 0;
    if (rank == 0) {
        weft_request_t a, b;
        ASSERT_OK(weft_isend_tag(&on_world, 1, WEFT_INT32, 1, 5, world, &a));
        ASSERT_OK(weft_isend_tag(&on_dup, 1, WEFT_INT32, 1, 5, dup, &b));
        ASSERT_OK(weft_wait(a));
        ASSERT_OK(weft_wait(b));
        weft_request_free(a);
        weft_request_free(b);
    } else if (rank == 1) {
        ASSERT_OK(weft_recv_tag(&got_first, 1, WEFT_INT32, 0, 5, dup, NULL));
        ASSERT_OK(weft_recv_tag(&got_second, 1, WEFT_INT32, 0, 5, world,
                                NULL));
        ASSERT_EQ(got_first, 222);
        ASSERT_EQ(got_second, 111);
    }
    weft_request_t ra, rb;
    int64_t x = rank, y = 1;
    ASSERT_OK(weft_iallreduce(&x, &x, 1, WEFT_INT64, WEFT_SUM, world, &ra));
    ASSERT_OK(weft_iallreduce(&y, &y, 1, WEFT_INT64, WEFT_SUM, dup, &rb));
    ASSERT_OK(weft_wait(rb));
    ASSERT_OK(weft_wait(ra));
    weft_request_free(ra);
    weft_request_free(rb);
    ASSERT_EQ(x, (int64_t)size * (size - 1) / 2);
    ASSERT_EQ(y, size);
    ASSERT_OK(weft_comm_destroy(world));
    y = rank;
    ASSERT_OK(weft_allreduce(&y, &y, 1, WEFT_INT64, WEFT_MAX, dup));
    ASSERT_EQ(y, size - 1);
    ASSERT_OK(weft_comm_destroy(dup));
}

WF_TEST(coll_dup_same_ranks_own_tags, 60)
{
    wf_test_run_threads(3, dup_rank, (void *)wf_test_unique("dup"));
}

/* Different collectives in flight on one communicator at once. */
static void inflight_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_CHUNK_SIZE=1k", &comm));
    enum { N = 3000 };
    float *ar = malloc(N * 4), *bc = malloc(N * 4);
    int32_t *ag = malloc((size_t)size * N * 4), mine[N];
    int32_t *a2a_s = malloc((size_t)size * 4), *a2a_r = malloc((size_t)size * 4);
    for (int i = 0; i < N; i++) {
        ar[i] = (float)(rank + i % 5);
        bc[i] = rank == 1 % size ? (float)(i % 7) : -1.0f;
        mine[i] = rank * 100000 + i;
    }
    for (int q = 0; q < size; q++)
        a2a_s[q] = rank * 1000 + q;
    weft_request_t req[5];
    ASSERT_OK(weft_iallreduce(ar, ar, N, WEFT_FLOAT32, WEFT_SUM, comm,
                              &req[0]));
    ASSERT_OK(weft_ibroadcast(bc, bc, N, WEFT_FLOAT32, 1 % size, comm,
                              &req[1]));
    ASSERT_OK(weft_iallgather(mine, ag, N, WEFT_INT32, comm, &req[2]));
    ASSERT_OK(weft_ialltoall(a2a_s, a2a_r, 1, WEFT_INT32, comm, &req[3]));
    ASSERT_OK(weft_ibarrier(comm, &req[4]));
    for (int k = 4; k >= 0; k--) {
        weft_status_t st = weft_wait(req[k]);
        if (st != WEFT_OK) {
            const char *msg = NULL;
            weft_comm_get_error(comm, &msg);
            wf_test_fail(__FILE__, __LINE__, "request %d: %s (%s)", k,
                         weft_strerror(st), msg ? msg : "");
        }
        weft_request_free(req[k]);
    }
    for (int i = 0; i < N; i++) {
        ASSERT_TRUE(ar[i] == (float)(size * (i % 5) + size * (size - 1) / 2));
        ASSERT_TRUE(bc[i] == (float)(i % 7));
        for (int q = 0; q < size; q++)
            ASSERT_EQ(ag[(size_t)q * N + i], q * 100000 + i);
    }
    for (int q = 0; q < size; q++)
        ASSERT_EQ(a2a_r[q], q * 1000 + rank);
    free(ar), free(bc), free(ag), free(a2a_s), free(a2a_r);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_inflight_mixed_collectives, 60)
{
    wf_test_run_threads(4, inflight_rank, (void *)wf_test_unique("mix"));
}
