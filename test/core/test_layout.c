/*
 * test_layout.c - local, node and cross ranks (src/comm_layout.c) against
 * a brute-force reference over random machine layouts, and
 * weft_comm_query on a live communicator.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "test.h"

/* The definitions, rank by rank, in quadratic time. */
static void reference(const uint64_t *keys, int size, int rank, int out[6])
{
    int local = 0, local_size = 0, node = 0, nodes = 0, mine = rank;
    for (int r = rank - 1; r >= 0; r--) /* my machine's lowest rank */
        if (keys[r] == keys[rank])
            mine = r;
    for (int r = 0; r < size; r++) {
        bool first = true; /* is r the lowest rank of its machine? */
        for (int q = 0; q < r; q++)
            first &= keys[q] != keys[r];
        nodes += first;
        node += first && r < mine;
        local += keys[r] == keys[rank] && r < rank;
        local_size += keys[r] == keys[rank];
    }
    int cross = 0, cross_size = 0;
    for (int r = 0; r < size; r++) {
        int lr = 0;
        for (int q = 0; q < r; q++)
            lr += keys[q] == keys[r];
        cross += lr == local && r < rank;
        cross_size += lr == local;
    }
    int v[6] = {local, local_size, node, nodes, cross, cross_size};
    memcpy(out, v, sizeof(v));
}

static void check_layout(const uint64_t *keys, int size)
{
    for (int rank = 0; rank < size; rank++) {
        wf_comm_impl_t c;
        memset(&c, 0, sizeof(c));
        c.rank = rank;
        c.size = size;
        ASSERT_OK(wf_comm_layout(&c, keys));
        int want[6];
        reference(keys, size, rank, want);
        int got[6] = {c.local_rank, c.local_size, c.node, c.nodes,
                      c.cross_rank, c.cross_size};
        for (int i = 0; i < 6; i++)
            if (got[i] != want[i])
                wf_test_fail(__FILE__, __LINE__, "rank %d of %d: attribute "
                             "%d is %d, want %d", rank, size, i, got[i],
                             want[i]);
    }
}

WF_TEST(core_layout_matches_the_definitions, 30)
{
    /* Two machines of two, in blocks. */
    uint64_t blocks[4] = {7, 7, 9, 9};
    check_layout(blocks, 4);
    /* Interleaved and uneven: A B A A B C. */
    uint64_t uneven[6] = {1, 2, 1, 1, 2, 3};
    check_layout(uneven, 6);
    wf_comm_impl_t c;
    memset(&c, 0, sizeof(c));
    c.rank = 4, c.size = 6;
    ASSERT_OK(wf_comm_layout(&c, uneven));
    ASSERT_EQ(c.local_rank, 1);
    ASSERT_EQ(c.node, 1);
    ASSERT_EQ(c.nodes, 3);
    ASSERT_EQ(c.cross_rank, 1); /* local rank 1: ranks 2 and 4 */
    ASSERT_EQ(c.cross_size, 2);
    /* One machine, and one rank per machine. */
    uint64_t one[5] = {4, 4, 4, 4, 4}, each[5] = {5, 4, 3, 2, 1};
    check_layout(one, 5);
    check_layout(each, 5);
    /* Random layouts, keys that collide in the hash table's low bits. */
    unsigned seed = 12345;
    for (int t = 0; t < 50; t++) {
        int size = 1 + (int)(rand_r(&seed) % 97);
        int machines = 1 + (int)(rand_r(&seed) % 9);
        uint64_t keys[97];
        for (int r = 0; r < size; r++)
            keys[r] = (uint64_t)(rand_r(&seed) % (unsigned)machines) << 40;
        check_layout(keys, size);
    }
}

static void query_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    int want[6] = {rank, size, 0, 1, 0, 1}, v = -1;
    for (int a = WEFT_COMM_LOCAL_RANK; a <= WEFT_COMM_CROSS_SIZE; a++) {
        ASSERT_OK(weft_comm_query(comm, (weft_comm_attr_t)a, &v));
        ASSERT_EQ(v, want[a]);
    }
    ASSERT_STATUS(weft_comm_query(comm, (weft_comm_attr_t)6, &v),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_comm_query(comm, WEFT_COMM_NODE, NULL),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_comm_query(NULL, WEFT_COMM_NODE, &v),
                  WEFT_ERR_INVALID_ARG);
    /* A split has its own layout: ranks 0 and 2, and rank 1 alone. */
    weft_comm_t half;
    ASSERT_OK(weft_comm_split(comm, rank % 2, rank, &half));
    ASSERT_OK(weft_comm_query(half, WEFT_COMM_LOCAL_RANK, &v));
    ASSERT_EQ(v, rank / 2);
    ASSERT_OK(weft_comm_query(half, WEFT_COMM_LOCAL_SIZE, &v));
    ASSERT_EQ(v, rank % 2 ? 1 : 2);
    weft_comm_destroy(half);
    weft_comm_destroy(comm);
}

WF_TEST(core_layout_query_one_machine, 30)
{
    wf_test_run_threads(3, query_rank, (void *)wf_test_unique("layout"));
}
