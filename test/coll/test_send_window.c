/*
 * test_send_window.c - the engine's per-peer send window
 * (WEFT_MAX_INFLIGHT) and sends the receiver pulls.
 *
 * A single-copy send on one machine is a small notice; the receiver
 * reads the payload from the sender's memory whenever its receive is
 * posted.  It holds no transport buffer while it waits, so the window
 * must not hold it back: behind it, a ring's later chunks waited for
 * earlier ones the peer could not take yet.  Here the receiver's engine
 * is stopped (its progress lock held), so none of its notices can be
 * read or answered; with a window of one, all of the sender's notices
 * must still reach the transport.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "sched/engine_impl.h"
#include "tcp/tcp.h"
#include "test.h"

#define MSGS 4
#define MSG_FLOATS (64 * 1024) /* 256 KiB: single copy from 64 KiB */

typedef struct {
    const char *name;
    int receiver_stopped; /* rank 1 holds its progress lock */
    int notices_counted;  /* rank 0 is done looking */
    int notices;          /* single-copy sends rank 0's transport holds */
} window_case_t;

static void wait_flag(int *flag)
{
    double until = wf_test_now_s() + 20;
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
        ASSERT_TRUE(wf_test_now_s() < until);
}

/* Single-copy sends to `peer` that the transport has sent and that wait
 * for the reader's answer. */
static int pulled_sends_posted(weft_comm_t comm, int peer)
{
    wf_engine_t *e = comm->impl->engine;
    struct wf_tctx *tcp = (struct wf_tctx *)e->tctx;
    int n = 0;
    pthread_mutex_lock(&e->progress_lock);
    for (struct wf_treq *r = tcp->peers[peer].cma_sends; r; r = r->next)
        n++;
    pthread_mutex_unlock(&e->progress_lock);
    return n;
}

static void send_all(weft_comm_t comm, float *msgs[MSGS], window_case_t *w)
{
    weft_request_t req[MSGS];
    for (int m = 0; m < MSGS; m++)
        ASSERT_OK(weft_isend(msgs[m], MSG_FLOATS, WEFT_FLOAT32, 1, comm,
                             &req[m]));
    double until = wf_test_now_s() + 2;
    int n;
    while ((n = pulled_sends_posted(comm, 1)) < MSGS &&
           wf_test_now_s() < until)
        ;
    w->notices = n;
    __atomic_store_n(&w->notices_counted, 1, __ATOMIC_RELEASE);
    for (int m = 0; m < MSGS; m++)
        ASSERT_OK(weft_wait(req[m]));
}

static void receive_all(weft_comm_t comm, float *msgs[MSGS], window_case_t *w)
{
    wf_engine_t *e = comm->impl->engine;
    pthread_mutex_lock(&e->progress_lock);
    __atomic_store_n(&w->receiver_stopped, 1, __ATOMIC_RELEASE);
    wait_flag(&w->notices_counted);
    pthread_mutex_unlock(&e->progress_lock);
    for (int m = 0; m < MSGS; m++)
        ASSERT_OK(weft_recv(msgs[m], MSG_FLOATS, WEFT_FLOAT32, 0, comm));
    for (int m = 0; m < MSGS; m++)
        for (int i = 0; i < MSG_FLOATS; i++)
            ASSERT_TRUE(msgs[m][i] == (float)(m * MSG_FLOATS + i));
}

static void window_rank(int rank, int size, void *arg)
{
    window_case_t *w = arg;
    weft_comm_t comm;
    float *msgs[MSGS];
    for (int m = 0; m < MSGS; m++) {
        msgs[m] = malloc(MSG_FLOATS * sizeof(float));
        ASSERT_TRUE(msgs[m] != NULL);
        for (int i = 0; i < MSG_FLOATS; i++)
            msgs[m][i] = rank == 0 ? (float)(m * MSG_FLOATS + i) : -1.0f;
    }
    ASSERT_OK(wf_test_comm_mem(w->name, rank, size,
                               "WEFT_TRANSPORT=tcp,WEFT_MAX_INFLIGHT=1",
                               &comm));
    ASSERT_OK(weft_barrier(comm)); /* connected, single copy agreed */
    wf_engine_t *e = comm->impl->engine;
    uint64_t bytes_read;
    bool readable, ok;
    ASSERT_OK(wf_tcp_cma_stats((struct wf_tctx *)e->tctx, 1 - rank,
                               &bytes_read, NULL, &readable, &ok));
    ASSERT_TRUE(readable && ok);
    if (rank == 0) {
        wait_flag(&w->receiver_stopped);
        send_all(comm, msgs, w);
    } else {
        receive_all(comm, msgs, w);
    }
    ASSERT_OK(weft_comm_destroy(comm));
    for (int m = 0; m < MSGS; m++)
        free(msgs[m]);
}

WF_TEST(coll_send_window_skips_pulled_sends, 30)
{
    window_case_t w = {.name = wf_test_unique("window")};
    wf_test_run_threads(2, window_rank, &w);
    /* Before pulled sends left the window: 1. */
    ASSERT_EQ(w.notices, MSGS);
}
