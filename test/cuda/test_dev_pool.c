/*
 * test_dev_pool.c - the engine's staging and scratch pool
 * (src/dev/dev_pool.c) on the fake device layer: what a reservation
 * covers, that reserved buffers serve their owner alone and in their
 * role, that a miss is reported rather than allocated, and that released
 * buffers serve anyone.
 */
#include <pthread.h>

#include "dev/dev_pool.h"
#include "dev_fake.h"
#include "test.h"

/* Two receives (100 KiB and 1 KiB) and five sends of up to 300 KiB to one
 * peer, with 16 KiB of scratch. */
static void build_plan(wf_plan_t *plan)
{
    wf_plan_init(plan, WEFT_FLOAT32, WEFT_SUM, 4, 2);
    wf_plan_recv(plan, 1, 0, wf_bref(WF_BUF_RECV, 0), 100 << 10, WF_NO_DEP,
                 WF_NO_DEP, WF_NO_DEP);
    wf_plan_recv(plan, 1, 1, wf_bref(WF_BUF_RECV, 0), 1 << 10, WF_NO_DEP,
                 WF_NO_DEP, WF_NO_DEP);
    for (uint32_t k = 0; k < 5; k++)
        wf_plan_send(plan, 1, 2 + k, wf_bref(WF_BUF_SEND, 0),
                     k == 3 ? 300 << 10 : 8 << 10, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
    plan->scratch_bytes = 16 << 10;
    ASSERT_TRUE(!plan->failed);
}

WF_TEST(cuda_dev_pool_reservation_serves_its_owner, 30)
{
    wf_dev_use_fake(true);
    const wf_dev_ops_t *ops = &wf_fake_dev_ops;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    wf_plan_t plan;
    build_plan(&plan);
    wf_dev_pool_t *p = wf_dev_pool_new(ops, 0);
    ASSERT_TRUE(p);
    int owner, other;
    /* A window of 2 sends per peer: 2 receive and 2 send buffers. */
    ASSERT_OK(wf_dev_pool_reserve(p, &lock, &owner, &plan, 2));

    void *r1, *r2, *s1, *s2, *x;
    const char *why = NULL;
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_RECV, 100 << 10,
                                       &r1, &why));
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_RECV, 1 << 10,
                                       &r2, &why));
    /* The receives' buffers are spent; a third is a miss, not a new one. */
    ASSERT_STATUS(wf_dev_pool_staging_take(p, &owner, WF_STAGE_RECV, 1,
                                           &x, &why),
                  WEFT_ERR_INTERNAL);
    ASSERT_STR_CONTAINS(why, "no reserved staging buffer");
    /* Sends take the send buffers, each big enough for the largest. */
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 300 << 10,
                                       &s1, &why));
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 8 << 10,
                                       &s2, &why));
    ASSERT_STATUS(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 8,
                                           &x, &why),
                  WEFT_ERR_INTERNAL);
    ASSERT_TRUE(r1 != r2 && s1 != s2 && r1 != s1 && r2 != s2);
    /* A given-back send buffer serves the next send. */
    wf_dev_pool_staging_give(p, s2);
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 300 << 10,
                                       &x, &why));
    ASSERT_TRUE(x == s2);

    /* Another request without a reservation gets a new buffer, never the
     * owner's idle ones. */
    wf_dev_pool_staging_give(p, r2);
    void *o1;
    ASSERT_OK(wf_dev_pool_staging_take(p, &other, WF_STAGE_RECV, 1 << 10,
                                       &o1, &why));
    ASSERT_TRUE(o1 != r2);

    /* The reserved scratch, once; then a miss. */
    void *sc;
    uint64_t cap = 0;
    ASSERT_OK(wf_dev_pool_scratch_take(p, &owner, 16 << 10, &sc, &cap,
                                       &why));
    ASSERT_TRUE(cap >= 16 << 10);
    void *sc2;
    ASSERT_STATUS(wf_dev_pool_scratch_take(p, &owner, 16 << 10, &sc2, &cap,
                                           &why),
                  WEFT_ERR_INTERNAL);
    ASSERT_STR_CONTAINS(why, "no reserved device scratch");
    wf_dev_pool_scratch_give(p, sc, 16 << 10);

    /* Released: the owner's buffers and the scratch serve anyone. */
    wf_dev_pool_staging_give(p, r1);
    wf_dev_pool_staging_give(p, x);
    wf_dev_pool_staging_give(p, s1);
    wf_dev_pool_release(p, &owner);
    void *any;
    ASSERT_OK(wf_dev_pool_staging_take(p, &other, WF_STAGE_RECV, 100 << 10,
                                       &any, &why));
    ASSERT_TRUE(any == r1); /* the best fit */
    ASSERT_OK(wf_dev_pool_scratch_take(p, &other, 8 << 10, &sc2, &cap,
                                       &why));
    ASSERT_TRUE(sc2 == sc);

    /* A second reservation reuses the idle buffers: no new slab. */
    wf_dev_pool_staging_give(p, any);
    wf_dev_pool_staging_give(p, o1);
    wf_dev_pool_scratch_give(p, sc2, cap);
    ASSERT_OK(wf_dev_pool_reserve(p, &lock, &owner, &plan, 2));
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 300 << 10,
                                       &x, &why));
    ASSERT_TRUE(x == s1 || x == s2);
    wf_dev_pool_free(p);
    wf_plan_free(&plan);
}

/* Two peers with different largest sends and a window of one: a small
 * send to peer 1 may take the buffer reserved with peer 2 in mind, and
 * peer 1's next large send must still find one (buffers sized per peer
 * left it none: WEFT_ERR_INTERNAL). */
WF_TEST(cuda_dev_pool_send_buffers_fit_every_peer, 30)
{
    wf_dev_use_fake(true);
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    wf_plan_t plan;
    wf_plan_init(&plan, WEFT_FLOAT32, WEFT_SUM, 4, 3);
    static const struct { int peer; size_t bytes; } sends[] = {
        {1, 256 << 10}, {1, 8 << 10}, {1, 256 << 10}, {2, 64 << 10}};
    for (uint32_t k = 0; k < 4; k++)
        wf_plan_send(&plan, sends[k].peer, k, wf_bref(WF_BUF_SEND, 0),
                     sends[k].bytes, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    ASSERT_TRUE(!plan.failed);
    wf_dev_pool_t *p = wf_dev_pool_new(&wf_fake_dev_ops, 0);
    ASSERT_TRUE(p);
    int owner;
    ASSERT_OK(wf_dev_pool_reserve(p, &lock, &owner, &plan, 1));
    void *a, *b, *c;
    const char *why = NULL;
    /* Peer 1's first send, done; its small one and peer 2's in flight;
     * then the small one done and peer 1's last, large send. */
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 256 << 10,
                                       &a, &why));
    wf_dev_pool_staging_give(p, a);
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 8 << 10,
                                       &a, &why));
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 64 << 10,
                                       &b, &why));
    wf_dev_pool_staging_give(p, a);
    ASSERT_OK(wf_dev_pool_staging_take(p, &owner, WF_STAGE_SEND, 256 << 10,
                                       &c, &why));
    wf_dev_pool_staging_give(p, b);
    wf_dev_pool_staging_give(p, c);
    wf_dev_pool_release(p, &owner);
    wf_dev_pool_free(p);
    wf_plan_free(&plan);
}
