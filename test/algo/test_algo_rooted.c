/*
 * test_algo_rooted.c - the rooted collectives (broadcast tree, ring, sag,
 * linear; reduce tree, rsg, ring, linear; gather tree, scatter tree): the
 * simulator matrix for each, odd sizes and chunkings beyond it, and
 * closed-form properties of their plans (who sends how much, every byte
 * received exactly once).  How well auto chooses among them is
 * test/select/test_select_grid.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "sim.h"
#include "test.h"

static const wf_algo_t *const rooted[] = {
    &wf_algo_bcast_tree,  &wf_algo_bcast_ring,   &wf_algo_bcast_sag,
    &wf_algo_bcast_linear, &wf_algo_reduce_tree, &wf_algo_reduce_rsg,
    &wf_algo_reduce_ring, &wf_algo_reduce_linear, &wf_algo_gather_tree,
    &wf_algo_scatter_tree,
};
#define NROOTED (sizeof(rooted) / sizeof(rooted[0]))

/* One test per algorithm, so a failure names it and each has its own
 * timeout. */
#define SIM_TEST(sym)                                                          \
    WF_TEST(algo_rooted_sim_##sym, 300) { wf_sim_matrix(&wf_algo_##sym, 9); }
SIM_TEST(bcast_tree)
SIM_TEST(bcast_ring)
SIM_TEST(bcast_sag)
SIM_TEST(bcast_linear)
SIM_TEST(reduce_tree)
SIM_TEST(reduce_rsg)
SIM_TEST(reduce_ring)
SIM_TEST(reduce_linear)
SIM_TEST(gather_tree)
SIM_TEST(scatter_tree)

/* Sizes, roots and chunkings the standard matrix does not reach: 32 and
 * 33 ranks, every root of 6, chunks that are not a multiple of the
 * element size, and many chunks per slot ring. */
WF_TEST(algo_rooted_sim_extra, 300)
{
    static const int sizes[] = {6, 11, 32, 33};
    static const size_t counts[] = {3, 64, 1000};
    static const size_t chunks[] = {6, 40, 1 << 20};
    unsigned seed = 1;
    for (size_t k = 0; k < NROOTED; k++)
        for (size_t si = 0; si < 4; si++)
            for (int root = 0; root < sizes[si];
                 root += sizes[si] > 6 ? 7 : 1)
                for (size_t ci = 0; ci < 3; ci++)
                    for (int ip = 0; ip < 2; ip++) {
                        wf_sim_case_t c = {
                            .coll = rooted[k]->coll, .size = sizes[si],
                            .count = counts[ci], .dtype = WEFT_FLOAT32,
                            .op = ci == 1 ? WEFT_AVG : WEFT_SUM,
                            .root = root, .in_place = ip,
                            .chunk_bytes = chunks[(ci + si) % 3]};
                        ASSERT_TRUE(wf_sim_check(rooted[k], &c, seed++));
                    }
}

/* Plans of every rank of one call. */
typedef struct {
    wf_plan_t plan[64];
    wf_coll_args_t args[64];
    int n;
} plans_t;

static void build_all(plans_t *p, const wf_algo_t *algo, wf_coll_t coll,
                      int n, size_t count, int root, size_t chunk)
{
    ASSERT_TRUE(n <= 64);
    p->n = n;
    for (int r = 0; r < n; r++) {
        wf_coll_args_t *a = &p->args[r];
        *a = (wf_coll_args_t){.coll = coll, .count = count,
                              .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                              .elem_size = 4, .peer = -1, .root = root,
                              .rank = r, .size = n, .chunk_bytes = chunk};
        uint64_t sb, rb;
        wf_coll_buffer_bytes(a, &sb, &rb);
        wf_plan_init(&p->plan[r], a->dtype, a->op, 4, n);
        ASSERT_OK(algo->build(a, &p->plan[r]));
        ASSERT_OK(wf_plan_validate(&p->plan[r], n, sb, rb));
    }
}

/* Rank r's plan of the chain broadcast of `count` floats from rank 0 on
 * n ranks, with the links the cost model is told about. */
static void build_chain(plans_t *p, int n, size_t count, int link_mbps,
                        int local_size)
{
    p->n = n;
    for (int r = 0; r < n; r++) {
        wf_coll_args_t *a = &p->args[r];
        *a = (wf_coll_args_t){.coll = WF_COLL_BROADCAST, .count = count,
                              .dtype = WEFT_FLOAT32, .elem_size = 4,
                              .peer = -1, .rank = r, .size = n,
                              .chunk_bytes = 256 << 10,
                              .local_size = local_size,
                              .link_mbps = link_mbps};
        uint64_t sb, rb;
        wf_coll_buffer_bytes(a, &sb, &rb);
        wf_plan_init(&p->plan[r], a->dtype, a->op, 4, n);
        ASSERT_OK(wf_algo_bcast_ring.build(a, &p->plan[r]));
        ASSERT_OK(wf_plan_validate(&p->plan[r], n, sb, rb));
    }
}

static void free_all(plans_t *p)
{
    for (int r = 0; r < p->n; r++)
        wf_plan_free(&p->plan[r]);
}

/* Messages and bytes rank r sends (kind WF_STEP_SEND) or receives. */
static void traffic(const plans_t *p, int r, int kind, uint64_t *msgs,
                    uint64_t *bytes)
{
    *msgs = *bytes = 0;
    for (uint32_t i = 0; i < p->plan[r].nsteps; i++)
        if (p->plan[r].steps[i].kind == kind) {
            (*msgs)++;
            *bytes += p->plan[r].steps[i].count;
        }
}

/* Every byte of rank r's receive buffer [0, len) is written by exactly one
 * receive. */
static void expect_received_once(const plans_t *p, int r, uint64_t len)
{
    unsigned char *hit = calloc(len + 1, 1);
    for (uint32_t i = 0; i < p->plan[r].nsteps; i++) {
        const wf_step_t *s = &p->plan[r].steps[i];
        if (s->kind != WF_STEP_RECV || s->dst.buf != WF_BUF_RECV)
            continue;
        for (uint64_t b = 0; b < s->count; b++)
            hit[s->dst.off + b]++;
    }
    for (uint64_t b = 0; b < len; b++)
        if (hit[b] != 1)
            wf_test_fail(__FILE__, __LINE__, "rank %d: byte %llu received "
                         "%d times", r, (unsigned long long)b, hit[b]);
    free(hit);
}

WF_TEST(algo_rooted_bcast_closed_form, 60)
{
    static const int sizes[] = {2, 5, 8, 13, 16, 33};
    for (size_t si = 0; si < 6; si++) {
        int n = sizes[si], root = n / 2, L = wf_ceil_log2(n);
        size_t count = 1000, chunk = 256; /* 16 chunks of 64 elements */
        uint64_t bytes = count * 4, nc = 16, m, b;
        plans_t p;
        build_all(&p, &wf_algo_bcast_tree, WF_COLL_BROADCAST, n, count, root,
                  chunk);
        traffic(&p, root, WF_STEP_SEND, &m, &b);
        ASSERT_EQ(m, (uint64_t)L * nc); /* every chunk to L children */
        ASSERT_EQ(b, (uint64_t)L * bytes);
        for (int r = 0; r < n; r++)
            if (r != root) {
                traffic(&p, r, WF_STEP_RECV, &m, &b);
                ASSERT_EQ(m, nc);
                expect_received_once(&p, r, bytes);
            }
        free_all(&p);
        build_all(&p, &wf_algo_bcast_ring, WF_COLL_BROADCAST, n, count, root,
                  chunk);
        for (int r = 0; r < n; r++) {
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            /* The last rank of the chain, root-1, sends nothing. */
            ASSERT_EQ(b, r == (root + n - 1) % n ? 0 : bytes);
            if (r != root)
                expect_received_once(&p, r, bytes);
        }
        free_all(&p);
        build_all(&p, &wf_algo_bcast_sag, WF_COLL_BROADCAST, n, count, root,
                  chunk);
        for (int r = 0; r < n; r++) {
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            /* Scatter plus allgather: at most 2 (n-1)/n of the buffer
             * (plus rounding of uneven segments). */
            ASSERT_TRUE(b <= 2 * (uint64_t)(n - 1) * (bytes / n + 4));
            if (r != root)
                expect_received_once(&p, r, bytes);
        }
        traffic(&p, root, WF_STEP_RECV, &m, &b);
        ASSERT_EQ(m, 0);
        free_all(&p);
        /* linear: the root sends every chunk to each of the n - 1 others,
         * who receive it from the root and send nothing. */
        build_all(&p, &wf_algo_bcast_linear, WF_COLL_BROADCAST, n, count,
                  root, chunk);
        traffic(&p, root, WF_STEP_SEND, &m, &b);
        ASSERT_EQ(m, (uint64_t)(n - 1) * nc);
        ASSERT_EQ(b, (uint64_t)(n - 1) * bytes);
        for (int r = 0; r < n; r++) {
            if (r == root)
                continue;
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            ASSERT_EQ(m, 0);
            traffic(&p, r, WF_STEP_RECV, &m, &b);
            ASSERT_EQ(m, nc);
            for (uint32_t i = 0; i < p.plan[r].nsteps; i++)
                if (p.plan[r].steps[i].kind == WF_STEP_RECV)
                    ASSERT_EQ(p.plan[r].steps[i].peer, root);
            expect_received_once(&p, r, bytes);
        }
        free_all(&p);
    }
}

/* Out of place, a broadcast root copies its send buffer into its receive
 * buffer piece by piece, each piece after a send that reads the same
 * bytes, and every byte exactly once.  One copy of the whole buffer with
 * no dependency ran before any send: the chain's root started sending
 * 6.5 ms late at 64 MiB over 5 Gbit/s links. */
WF_TEST(algo_rooted_bcast_root_copies_follow_sends, 60)
{
    static const wf_algo_t *const bcasts[] = {
        &wf_algo_bcast_tree, &wf_algo_bcast_ring, &wf_algo_bcast_sag,
        &wf_algo_bcast_linear};
    static const int sizes[] = {2, 3, 5, 8};
    for (size_t k = 0; k < 4; k++)
        for (size_t si = 0; si < 4; si++) {
            int n = sizes[si], root = n - 1;
            size_t count = 1000; /* 16 chunks of 256 bytes, the last short */
            uint64_t bytes = count * 4;
            plans_t p;
            build_all(&p, bcasts[k], WF_COLL_BROADCAST, n, count, root, 256);
            const wf_plan_t *plan = &p.plan[root];
            unsigned char *hit = calloc(bytes, 1);
            for (uint32_t i = 0; i < plan->nsteps; i++) {
                const wf_step_t *s = &plan->steps[i];
                if (s->kind != WF_STEP_COPY || s->count == 0)
                    continue;
                ASSERT_EQ(s->dst.buf, WF_BUF_RECV);
                ASSERT_EQ(s->src.buf, WF_BUF_SEND);
                ASSERT_EQ(s->dst.off, s->src.off);
                const wf_step_t *d = s->deps[0] == WF_NO_DEP
                                         ? NULL
                                         : &plan->steps[s->deps[0]];
                if (!d || d->kind != WF_STEP_SEND ||
                    d->src.buf != WF_BUF_SEND || d->src.off != s->src.off ||
                    d->count != s->count)
                    wf_test_fail(__FILE__, __LINE__, "%s on %d ranks: the "
                                 "root's copy of bytes %llu+%llu does not "
                                 "follow their send", bcasts[k]->name, n,
                                 (unsigned long long)s->src.off,
                                 (unsigned long long)s->count);
                for (uint64_t b = 0; b < s->count; b++)
                    hit[s->dst.off + b]++;
            }
            for (uint64_t b = 0; b < bytes; b++)
                if (hit[b] != 1)
                    wf_test_fail(__FILE__, __LINE__, "%s on %d ranks: byte "
                                 "%llu copied %d times", bcasts[k]->name, n,
                                 (unsigned long long)b, hit[b]);
            free(hit);
            free_all(&p);
        }
}

WF_TEST(algo_rooted_reduce_closed_form, 60)
{
    static const int sizes[] = {2, 5, 8, 13, 16, 33};
    for (size_t si = 0; si < 6; si++) {
        int n = sizes[si], root = n - 1, L = wf_ceil_log2(n);
        size_t count = 1000, chunk = 256;
        uint64_t bytes = count * 4, nc = 16, m, b;
        plans_t p;
        build_all(&p, &wf_algo_reduce_tree, WF_COLL_REDUCE, n, count, root,
                  chunk);
        traffic(&p, root, WF_STEP_RECV, &m, &b);
        ASSERT_EQ(m, (uint64_t)L * nc);
        ASSERT_EQ(b, (uint64_t)L * bytes);
        for (int r = 0; r < n; r++) {
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            ASSERT_EQ(b, r == root ? 0 : bytes); /* once, to the parent */
            /* Scratch: slot rings, independent of the message size. */
            ASSERT_TRUE(p.plan[r].scratch_bytes <=
                        (uint64_t)(L + 1) * 8 * chunk);
        }
        free_all(&p);
        build_all(&p, &wf_algo_reduce_rsg, WF_COLL_REDUCE, n, count, root,
                  chunk);
        uint64_t seg = (bytes + 4 * n - 1) / (4 * n) * 4;
        for (int r = 0; r < n; r++) {
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            /* n-1 segments in the ring, then its own to the root. */
            ASSERT_TRUE(b <= (uint64_t)(r == root ? n - 1 : n) * seg);
            ASSERT_TRUE(p.plan[r].scratch_bytes <= 2 * seg);
        }
        traffic(&p, root, WF_STEP_RECV, &m, &b);
        ASSERT_TRUE(b <= 2 * (uint64_t)(n - 1) * seg);
        free_all(&p);
        /* linear: every other rank sends its whole vector to the root
         * and receives nothing; the root receives and reduces n - 1
         * vectors, its own the first operand, into two slots per peer.
         * The cost terms' own work is exactly the root's. */
        build_all(&p, &wf_algo_reduce_linear, WF_COLL_REDUCE, n, count,
                  root, chunk);
        traffic(&p, root, WF_STEP_RECV, &m, &b);
        ASSERT_EQ(m, (uint64_t)(n - 1) * nc);
        ASSERT_EQ(b, (uint64_t)(n - 1) * bytes);
        wf_cost_terms_t t;
        wf_algo_reduce_linear.cost_terms(&p.args[root], &t);
        ASSERT_EQ((uint64_t)t.own_messages, m);
        ASSERT_EQ((uint64_t)t.own_bytes, b);
        ASSERT_EQ((uint64_t)t.own_reduced, b);
        traffic(&p, root, WF_STEP_REDUCE, &m, &b);
        ASSERT_EQ(m, (uint64_t)(n - 1) * nc);
        traffic(&p, root, WF_STEP_SEND, &m, &b);
        ASSERT_EQ(m, 0);
        ASSERT_EQ(p.plan[root].scratch_bytes, (uint64_t)(n - 1) * 2 * chunk);
        for (int r = 0; r < n - 1; r++) {
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            ASSERT_EQ(m, nc);
            ASSERT_EQ(b, bytes);
            traffic(&p, r, WF_STEP_RECV, &m, &b);
            ASSERT_EQ(m, 0);
            for (uint32_t i = 0; i < p.plan[r].nsteps; i++)
                ASSERT_EQ(p.plan[r].steps[i].peer, root);
        }
        free_all(&p);
    }
}

/* rsg's last reduce-scatter step receives a large segment into 16 slots
 * of one chunk, reduced while they are in cache, as the reduce-scatters
 * do (bench/results/2026-11-28-reducescatter-chunk-slots.md);
 * the root out of place still receives straight into its buffer. */
WF_TEST(algo_rooted_rsg_chunk_slots, 30)
{
    const size_t chunk = 1024, seg = 32 * chunk; /* 32 chunks a segment */
    for (int n = 2; n <= 4; n += 2) {
        plans_t p;
        build_all(&p, &wf_algo_reduce_rsg, WF_COLL_REDUCE, n,
                  (size_t)n * seg / 4, 0, chunk);
        ASSERT_EQ(p.plan[0].scratch_bytes, 0);
        for (int r = 1; r < n; r++)
            ASSERT_EQ(p.plan[r].scratch_bytes, 2 * seg + 16 * chunk);
        free_all(&p);
    }
}

WF_TEST(algo_rooted_gather_scatter_closed_form, 60)
{
    for (int n = 2; n <= 33; n++)
        for (int root = 0; root < n; root += 3) {
            size_t count = 5;
            uint64_t blk = count * 4, m, b, total = 0;
            plans_t p;
            build_all(&p, &wf_algo_gather_tree, WF_COLL_GATHER, n, count,
                      root, 64);
            traffic(&p, root, WF_STEP_RECV, &m, &b);
            ASSERT_EQ(b, (uint64_t)(n - 1) * blk); /* all others, once */
            ASSERT_TRUE(m <= (uint64_t)wf_ceil_log2(n) + 1);
            for (int r = 0; r < n; r++) {
                traffic(&p, r, WF_STEP_SEND, &m, &b);
                total += m;
                ASSERT_TRUE(m <= (r == root ? 0u : 2u));
            }
            ASSERT_TRUE(total <= (uint64_t)n); /* n-1, one split at most */
            free_all(&p);
            build_all(&p, &wf_algo_scatter_tree, WF_COLL_SCATTER, n, count,
                      root, 64);
            traffic(&p, root, WF_STEP_SEND, &m, &b);
            ASSERT_EQ(b, (uint64_t)(n - 1) * blk);
            for (int r = 0; r < n; r++) {
                /* Each rank receives its whole subtree once. */
                int sub = wf_rtree_subtree(wf_rtree_vrank(r, root, n), n);
                traffic(&p, r, WF_STEP_RECV, &m, &b);
                ASSERT_EQ(b, r == root ? 0 : (uint64_t)sub * blk);
            }
            free_all(&p);
        }
}

/* The chain cuts a medium message into chunks far below WEFT_CHUNK_SIZE
 * where its n-2 hops of pipeline fill cost more than the extra messages
 * (a 1 Gbit/s network: 64 KiB on 4 ranks in 8 chunks of 8 KiB, and then it
 * is cheaper than the binomial tree, which sends the whole buffer twice
 * from the root), and keeps WEFT_CHUNK_SIZE on one machine, where a
 * message costs more than a copy.  Measured on 4 shaped namespaces at
 * 1 Gbit/s (make bench-netns): the chain 91-99% of the link at 64 KiB to
 * 1 MiB, the tree 40-50%, and auto picked the tree or sag there before. */
WF_TEST(algo_bcast_chain_chunk_follows_the_link, 30)
{
    plans_t p;
    uint64_t m, b, bytes = 64 << 10;

    build_chain(&p, 4, bytes / 4, 1000, 1);
    traffic(&p, 0, WF_STEP_SEND, &m, &b);
    ASSERT_TRUE(m >= 5 && m <= 8);
    ASSERT_EQ(b, bytes);
    for (int r = 1; r < 4; r++)
        expect_received_once(&p, r, bytes);
    ASSERT_TRUE(wf_algo_bcast_ring.cost(&p.args[0]) <
                wf_algo_bcast_tree.cost(&p.args[0]));
    free_all(&p);

    build_chain(&p, 4, bytes / 4, 0, 4); /* every rank on this machine */
    traffic(&p, 0, WF_STEP_SEND, &m, &b);
    ASSERT_EQ(m, 1);
    free_all(&p);

    build_chain(&p, 2, bytes / 4, 1000, 1); /* no fill to shorten */
    traffic(&p, 0, WF_STEP_SEND, &m, &b);
    ASSERT_EQ(m, 1);
    free_all(&p);

    /* Never below WF_CHAIN_MIN_CHUNK (8 KiB), never above the chunk size. */
    build_chain(&p, 64, (1 << 20) / 4, 10, 1);
    traffic(&p, 0, WF_STEP_SEND, &m, &b);
    ASSERT_EQ(m, 128);
    free_all(&p);
    build_chain(&p, 64, (64 << 20) / 4, 100000, 1);
    traffic(&p, 0, WF_STEP_SEND, &m, &b);
    ASSERT_EQ(m, 256);
    free_all(&p);
}

/* The chain reduce: every rank but the root sends the whole vector once,
 * to its predecessor in the chain, and every rank but the last receives
 * it once, from its successor, and reduces every chunk of it once; the
 * scratch stays two slot rings of 8 chunks whatever the size. */
WF_TEST(algo_rooted_reduce_ring_closed_form, 60)
{
    static const int sizes[] = {2, 3, 5, 8, 13, 33};
    for (size_t si = 0; si < 6; si++) {
        int n = sizes[si], root = si % 2 ? 1 : n - 1;
        size_t count = 1000, chunk = 256;
        uint64_t bytes = count * 4, nc = 16, m, b;
        plans_t p;
        build_all(&p, &wf_algo_reduce_ring, WF_COLL_REDUCE, n, count, root,
                  chunk);
        for (int r = 0; r < n; r++) {
            int vr = wf_rtree_vrank(r, root, n);
            int pred = wf_rtree_rank(vr - 1 + n, root, n);
            int succ = wf_rtree_rank(vr + 1, root, n);
            traffic(&p, r, WF_STEP_SEND, &m, &b);
            ASSERT_EQ(m, vr == 0 ? 0 : nc);
            ASSERT_EQ(b, vr == 0 ? 0 : bytes);
            traffic(&p, r, WF_STEP_RECV, &m, &b);
            ASSERT_EQ(m, vr == n - 1 ? 0 : nc);
            ASSERT_EQ(b, vr == n - 1 ? 0 : bytes);
            traffic(&p, r, WF_STEP_REDUCE, &m, &b);
            ASSERT_EQ(m, vr == n - 1 ? 0 : nc);
            for (uint32_t i = 0; i < p.plan[r].nsteps; i++) {
                const wf_step_t *st = &p.plan[r].steps[i];
                if (st->kind == WF_STEP_SEND)
                    ASSERT_EQ(st->peer, pred);
                else if (st->kind == WF_STEP_RECV)
                    ASSERT_EQ(st->peer, succ);
            }
            ASSERT_TRUE(p.plan[r].scratch_bytes <= 2 * 8 * chunk);
        }
        free_all(&p);
    }
}
