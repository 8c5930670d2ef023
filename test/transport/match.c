/*
 * match.c - the matching layer every transport shares (transport/match.h),
 * on a context of its own with no transport under it: the test plays the
 * transport, handing it headers and payloads as they would arrive.
 *
 *  - transport_match_post_order_per_tag: receives of one tag take the
 *    messages of that tag in post order; other tags match independently.
 *  - transport_match_unexpected_then_posted: a message that arrives first
 *    waits for its receive, oldest first per tag; one still arriving when
 *    its receive is posted completes it when the rest comes; then the
 *    next message of the tag goes to a receive posted before it.
 *  - transport_match_truncation: a message longer than the receive
 *    completes it truncated, posted or unexpected, with the length sent.
 *  - transport_match_scan_unexpected: the scan visits peers in rank order
 *    and each peer's messages oldest first, skips claimed ones, stops
 *    where visit says, and counts every arrival.
 *  - transport_match_failed_peer: what a failed peer sent stays
 *    receivable; then posts get its failure, warned once; queued receives
 *    and messages in flight fail.
 *  - transport_match_pool_and_buffers: test() hands requests back to the
 *    pool, small messages live in their own allocation, large buffers
 *    come back from the pool; fini frees the rest (ASan checks).
 */
#include <string.h>

#include "match.h"
#include "test.h"
#include "tgroup.h"

typedef struct {
    wf_mreq_t m;
    int mine; /* a transport's own field after the head */
} t_req_t;

/* The matching state is not first in the peer, as in no transport. */
typedef struct {
    char desc[32];
    wf_mpeer_t q;
} t_peer_t;

typedef struct {
    wf_match_t m;
    t_peer_t peers[3];
} t_ctx_t;

static void ctx_open(t_ctx_t *c)
{
    memset(c, 0, sizeof(*c));
    wf_match_init(&c->m, "test", 0, 3, sizeof(wf_mmsg_t));
    WF_MATCH_PEERS(&c->m, c->peers, q);
    for (int i = 0; i < 3; i++) {
        snprintf(c->peers[i].desc, sizeof(c->peers[i].desc), "peer %d", i);
        c->peers[i].q.desc = c->peers[i].desc;
    }
}

static wf_mpeer_t *q_of(t_ctx_t *c, int peer)
{
    return &c->peers[peer].q;
}

static weft_status_t post(t_ctx_t *c, int peer, uint64_t tag, void *buf,
                          size_t cap, wf_mreq_t **r)
{
    return wf_match_irecv(&c->m, q_of(c, peer), false, sizeof(t_req_t), peer,
                          tag, buf, cap, r);
}

static weft_status_t test_req(t_ctx_t *c, wf_mreq_t *r, wf_treq_info_t *info)
{
    return wf_match_test((wf_tctx_t *)(void *)c, (wf_treq_t *)(void *)r,
                         info);
}

/* A header arrives: the transport takes the oldest posted receive of the
 * tag, else keeps the message; with `whole` the payload follows at once. */
static wf_mmsg_t *arrive(t_ctx_t *c, int peer, uint64_t tag, const char *data,
                         size_t len, bool whole)
{
    uint64_t sig[2] = {tag * 10, (uint64_t)peer};
    wf_mpeer_t *q = q_of(c, peer);
    wf_mreq_t *r = wf_match_take_posted(q, tag);
    wf_mmsg_t *msg = NULL;

    if (r) {
        memcpy(r->buf, data, WF_MIN(len, r->len));
    } else {
        msg = wf_match_unexp_new(&c->m, q, tag, sig, len, len);
        ASSERT_TRUE(msg != NULL);
        memcpy(msg->data, data, len);
    }
    if (whole)
        wf_match_arrived(&c->m, r, msg, len, sig);
    return msg;
}

static void expect_msg(t_ctx_t *c, wf_mreq_t *r, const char *buf,
                       const char *want, uint64_t tag, int peer)
{
    wf_treq_info_t info;

    ASSERT_OK(test_req(c, r, &info));
    ASSERT_EQ(info.len, strlen(want));
    ASSERT_TRUE(!info.truncated);
    ASSERT_EQ(info.sig[0], tag * 10);
    ASSERT_EQ(info.sig[1], (uint64_t)peer);
    ASSERT_TRUE(memcmp(buf, want, strlen(want)) == 0);
}

WF_TEST(transport_match_post_order_per_tag, 10)
{
    t_ctx_t c;
    char a[3][8] = {{0}}, b[2][8] = {{0}};
    wf_mreq_t *ra[3], *rb[2];

    ctx_open(&c);
    for (int i = 0; i < 3; i++)
        ASSERT_STATUS(post(&c, 1, 7, a[i], 8, &ra[i]), WEFT_INPROGRESS);
    for (int i = 0; i < 2; i++)
        ASSERT_STATUS(post(&c, 1, 9, b[i], 8, &rb[i]), WEFT_INPROGRESS);
    /* Interleaved tags, and one on another peer that none waits for. */
    arrive(&c, 1, 9, "b0", 2, true);
    arrive(&c, 1, 7, "a0", 2, true);
    arrive(&c, 2, 7, "x", 1, true);
    arrive(&c, 1, 7, "a1", 2, true);
    ASSERT_STATUS(test_req(&c, ra[2], NULL), WEFT_INPROGRESS);
    arrive(&c, 1, 9, "b1", 2, true);
    arrive(&c, 1, 7, "a2", 2, true);
    for (int i = 0; i < 3; i++) {
        char want[3] = {'a', (char)('0' + i), 0};
        expect_msg(&c, ra[i], a[i], want, 7, 1);
    }
    for (int i = 0; i < 2; i++) {
        char want[3] = {'b', (char)('0' + i), 0};
        expect_msg(&c, rb[i], b[i], want, 9, 1);
    }
    /* Peer 2's message was kept: nothing of peer 1 took it. */
    ASSERT_EQ(c.m.unexp_arrivals, 1);
    ASSERT_TRUE(q_of(&c, 2)->unexp && !q_of(&c, 1)->unexp);
    ASSERT_TRUE(!q_of(&c, 1)->posted && !q_of(&c, 1)->posted_tail);
    wf_match_fini(&c.m);
}

WF_TEST(transport_match_unexpected_then_posted, 10)
{
    t_ctx_t c;
    char buf[4][8] = {{0}};
    wf_mreq_t *r[4];

    ctx_open(&c);
    arrive(&c, 1, 5, "one", 3, true);
    arrive(&c, 1, 6, "six", 3, true);
    wf_mmsg_t *late = arrive(&c, 1, 5, "two", 3, false); /* still coming */
    /* Tag 6 first: tags are independent. */
    ASSERT_OK(post(&c, 1, 6, buf[0], 8, &r[0]));
    expect_msg(&c, r[0], buf[0], "six", 6, 1);
    ASSERT_OK(post(&c, 1, 5, buf[1], 8, &r[1]));
    expect_msg(&c, r[1], buf[1], "one", 5, 1);
    /* The second of tag 5 is claimed before its payload is whole. */
    ASSERT_STATUS(post(&c, 1, 5, buf[2], 8, &r[2]), WEFT_INPROGRESS);
    ASSERT_TRUE(late->waiter == r[2] && !q_of(&c, 1)->unexp);
    ASSERT_TRUE(!q_of(&c, 1)->posted); /* claimed: not queued */
    ASSERT_STATUS(test_req(&c, r[2], NULL), WEFT_INPROGRESS);
    uint64_t sig[2] = {50, 1};
    wf_match_arrived(&c.m, NULL, late, 3, sig);
    expect_msg(&c, r[2], buf[2], "two", 5, 1);
    /* Nothing kept now: the next receive waits, the next header is its. */
    ASSERT_STATUS(post(&c, 1, 5, buf[3], 8, &r[3]), WEFT_INPROGRESS);
    arrive(&c, 1, 5, "three", 5, true);
    expect_msg(&c, r[3], buf[3], "three", 5, 1);
    ASSERT_EQ(c.m.unexp_arrivals, 3);
    wf_match_fini(&c.m);
}

WF_TEST(transport_match_truncation, 10)
{
    t_ctx_t c;
    char small[4] = {0}, small2[4] = {0}, big[32] = {0};
    wf_mreq_t *r;
    wf_treq_info_t info;

    ctx_open(&c);
    /* Posted: the buffer gets what fits. */
    ASSERT_STATUS(post(&c, 2, 1, small, 4, &r), WEFT_INPROGRESS);
    arrive(&c, 2, 1, "truncated", 9, true);
    ASSERT_OK(test_req(&c, r, &info));
    ASSERT_EQ(info.len, 9);
    ASSERT_TRUE(info.truncated);
    ASSERT_TRUE(memcmp(small, "trun", 4) == 0);
    /* Unexpected: the same. */
    arrive(&c, 2, 1, "truncated", 9, true);
    ASSERT_OK(post(&c, 2, 1, small2, 4, &r));
    ASSERT_OK(test_req(&c, r, &info));
    ASSERT_EQ(info.len, 9);
    ASSERT_TRUE(info.truncated);
    ASSERT_TRUE(memcmp(small2, "trun", 4) == 0);
    /* A larger buffer: whole, not truncated; a zero-length message. */
    arrive(&c, 2, 1, "fits", 4, true);
    ASSERT_OK(post(&c, 2, 1, big, sizeof(big), &r));
    ASSERT_OK(test_req(&c, r, &info));
    ASSERT_EQ(info.len, 4);
    ASSERT_TRUE(!info.truncated);
    arrive(&c, 2, 1, "", 0, true);
    ASSERT_OK(post(&c, 2, 1, NULL, 0, &r));
    ASSERT_OK(test_req(&c, r, &info));
    ASSERT_EQ(info.len, 0);
    ASSERT_TRUE(!info.truncated);
    wf_match_fini(&c.m);
}

typedef struct {
    int n, stop_at;
    int peer[8];
    uint64_t tag[8];
} t_seen_t;

static bool note(void *arg, int peer, uint64_t tag, const uint64_t sig[2])
{
    t_seen_t *s = arg;

    ASSERT_EQ(sig[0], tag * 10);
    s->peer[s->n] = peer;
    s->tag[s->n++] = tag;
    return s->n == s->stop_at;
}

WF_TEST(transport_match_scan_unexpected, 10)
{
    t_ctx_t c;
    char buf[8];
    wf_mreq_t *r;
    t_seen_t seen = {0};

    ctx_open(&c);
    ASSERT_EQ(wf_match_scan_unexpected((wf_tctx_t *)(void *)&c, NULL, NULL),
              0);
    arrive(&c, 2, 21, "a", 1, true);
    arrive(&c, 1, 11, "b", 1, true);
    arrive(&c, 2, 22, "c", 1, true);
    arrive(&c, 1, 12, "d", 1, false); /* incomplete: still listed */
    wf_mmsg_t *claimed = arrive(&c, 1, 13, "e", 1, false);
    /* Claimed by a receive: no longer unexpected. */
    ASSERT_STATUS(post(&c, 1, 13, buf, sizeof(buf), &r), WEFT_INPROGRESS);
    seen.stop_at = -1;
    ASSERT_EQ(wf_match_scan_unexpected((wf_tctx_t *)(void *)&c, note, &seen),
              5);
    ASSERT_EQ(seen.n, 4);
    const int want_peer[4] = {1, 1, 2, 2};
    const uint64_t want_tag[4] = {11, 12, 21, 22};
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(seen.peer[i], want_peer[i]);
        ASSERT_EQ(seen.tag[i], want_tag[i]);
    }
    /* visit returning true ends the scan there. */
    memset(&seen, 0, sizeof(seen));
    seen.stop_at = 3;
    ASSERT_EQ(wf_match_scan_unexpected((wf_tctx_t *)(void *)&c, note, &seen),
              5);
    ASSERT_EQ(seen.n, 3);
    ASSERT_EQ(seen.tag[2], 21);
    /* Taking one leaves the counter: it counts arrivals, not what waits. */
    ASSERT_OK(post(&c, 2, 21, buf, sizeof(buf), &r));
    ASSERT_OK(test_req(&c, r, NULL));
    ASSERT_EQ(wf_match_scan_unexpected((wf_tctx_t *)(void *)&c, NULL, NULL),
              5);
    /* A claimed message still arriving is the transport's to free (it
     * is in no list), its receive the layer's. */
    wf_match_msg_free(&c.m, claimed);
    wf_match_fini(&c.m);
}

static weft_status_t fail_peer(t_ctx_t *c, int peer, bool quiet,
                               const char *fmt, ...)
{
    va_list ap;
    wf_mpeer_t *q = q_of(c, peer);

    q->fail_unreported = quiet;
    va_start(ap, fmt);
    wf_match_fail_note(&c->m, q, WEFT_ERR_REMOTE, fmt, ap);
    va_end(ap);
    wf_match_fail_posted(q, WEFT_ERR_REMOTE);
    return q->fail_status;
}

WF_TEST(transport_match_failed_peer, 10)
{
    t_ctx_t c;
    char buf[3][8] = {{0}};
    wf_mreq_t *queued, *r, *claimed;

    weft_set_logger(tg_log_capture, NULL);
    tg_log_clear();
    ctx_open(&c);
    arrive(&c, 1, 3, "bye", 3, true);
    wf_mmsg_t *half = arrive(&c, 1, 4, "half", 4, false);
    ASSERT_STATUS(post(&c, 1, 4, buf[1], 8, &claimed), WEFT_INPROGRESS);
    ASSERT_STATUS(post(&c, 1, 8, buf[0], 8, &queued), WEFT_INPROGRESS);
    ASSERT_STATUS(fail_peer(&c, 1, true, "gone (%d)", 42), WEFT_ERR_REMOTE);
    /* The half-read message is lost with its receive. */
    wf_match_drop(&c.m, q_of(&c, 1), NULL, half, WEFT_ERR_REMOTE);
    ASSERT_STATUS(test_req(&c, claimed, NULL), WEFT_ERR_REMOTE);
    ASSERT_STATUS(test_req(&c, queued, NULL), WEFT_ERR_REMOTE);
    ASSERT_TRUE(strstr(tg_log_text(), "gone (42)") == NULL); /* quiet */
    /* What it sent whole before it left is still delivered. */
    ASSERT_OK(wf_match_irecv(&c.m, q_of(&c, 1), true, sizeof(t_req_t), 1, 3,
                             buf[2], 8, &r));
    expect_msg(&c, r, buf[2], "bye", 3, 1);
    /* Then the failure, warned at the first post that meets it. */
    ASSERT_STATUS(wf_match_irecv(&c.m, q_of(&c, 1), true, sizeof(t_req_t), 1,
                                 3, buf[2], 8, &r),
                  WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(tg_log_text(), "test: peer 1: gone (42)");
    ASSERT_STATUS(wf_match_peer_failed(&c.m, q_of(&c, 1)), WEFT_ERR_REMOTE);
    /* Peers that are none. */
    ASSERT_STATUS(wf_match_peer_check(&c.m, 0), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_match_peer_check(&c.m, 3), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(wf_match_peer_check(&c.m, 2));
    wf_match_fini(&c.m);
    weft_set_logger(NULL, NULL);
}

static int released;

static void count_release(wf_match_t *m, wf_mreq_t *r)
{
    (void)m;
    ASSERT_EQ(((t_req_t *)r)->mine, 77);
    released++;
}

WF_TEST(transport_match_pool_and_buffers, 10)
{
    t_ctx_t c;
    static char big[WF_MATCH_SPARE_MIN], got[WF_MATCH_SPARE_MIN];
    wf_mreq_t *r, *again;

    ctx_open(&c);
    c.m.release = count_release;
    released = 0;
    /* A request that holds something goes through the hook, once. */
    r = wf_match_req_new(&c.m, sizeof(t_req_t), 1, 1, NULL, 0);
    ((t_req_t *)r)->mine = 77;
    r->holds = true;
    wf_match_sent(r);
    ASSERT_OK(test_req(&c, r, NULL));
    ASSERT_EQ(released, 1);
    again = wf_match_req_new(&c.m, sizeof(t_req_t), 1, 1, NULL, 0);
    ASSERT_TRUE(!again->holds && ((t_req_t *)again)->mine == 0); /* zeroed */
#if WF_MATCH_SPARE_REQS > 0
    ASSERT_TRUE(again == r); /* from the pool */
#endif
    wf_match_req_free(&c.m, again);
    ASSERT_EQ(released, 1);
    /* Small: one allocation; from WF_MATCH_BLOCK_MAX: a buffer of its
     * own, which the pool keeps for the next one. */
    wf_mmsg_t *m = arrive(&c, 2, 1, "tiny", 4, true);
    ASSERT_TRUE(m->in_block);
    memset(big, 'x', sizeof(big));
    m = arrive(&c, 2, 2, big, sizeof(big), true);
    ASSERT_TRUE(!m->in_block && m->cap == sizeof(big));
    char *data = m->data;
    ASSERT_OK(post(&c, 2, 2, got, sizeof(got), &r));
    ASSERT_OK(test_req(&c, r, NULL));
    ASSERT_TRUE(memcmp(got, big, sizeof(big)) == 0);
    ASSERT_EQ(c.m.nspare, 1);
    ASSERT_EQ(c.m.spare_bytes, sizeof(big));
    m = arrive(&c, 2, 3, big, sizeof(big), true);
    ASSERT_TRUE(m->data == data); /* the kept buffer */
    ASSERT_EQ(c.m.nspare, 0);
    /* A remote message has no buffer until the transport reads it. */
    uint64_t sig[2] = {0, 0};
    m = wf_match_unexp_new_remote(&c.m, q_of(&c, 2), 4, sig, 1 << 20);
    ASSERT_TRUE(m->remote && !m->data && !m->complete);
    wf_match_fini(&c.m); /* the tiny, the big and the remote ones */
    ASSERT_EQ(c.m.nspare, 0);
    ASSERT_TRUE(!c.m.all && !c.m.spare_reqs);
}
