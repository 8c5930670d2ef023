/*
 * tgroup.h - helpers shared by the transport tests (tgroup.c).
 */
#ifndef WF_TGROUP_H
#define WF_TGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "test.h"
#include "transport.h"

#define TG_MAXR 4
#define TG_JOB_KEY 0x6a6f626b6579ull
#define TG_COMM_KEY 0x636f6d6d6b6579ull
#define TG_WAIT_MS 30000

/* WEFT_TCP_STREAMS of the contexts tg_make_cfg configures (1 unless
 * tg_each_transport runs a multi-stream pass); with several, messages of
 * TG_STRIPE_MIN bytes or more are striped. */
extern int tg_tcp_streams;
#define TG_STRIPE_MIN 4096
/* WEFT_TCP_CMA_MIN of those contexts: 0 (off) unless tg_each_transport
 * runs its single-copy pass, where every non-empty message is one. */
extern size_t tg_tcp_cma_min;
/* WEFT_SHM_CMA_MIN and WEFT_SHM_SLOTS of those contexts, as
 * tg_each_transport's shm passes set them: the defaults, every message
 * through the rings with few slots (the ring wraps, senders wait for
 * room), and every non-empty message a single copy. */
extern size_t tg_shm_cma_min;
extern int tg_shm_slots;

/* The job secret every context of a test group shares. */
extern const uint8_t tg_secret[32];

typedef struct {
    const wf_transport_ops_t *ops;
    int n;
    wf_tctx_t *ctx[TG_MAXR];
    uint8_t addr[TG_MAXR][WF_TADDR_MAX];
    size_t alen[TG_MAXR];
} tg_group_t;

uint64_t tg_now_ms(void);

/* A weft logger that echoes lines to stderr and keeps them for
 * assertions; tg_open installs it. */
void tg_log_capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line);
const char *tg_log_text(void);
void tg_log_clear(void);

/* A config for `rank` (below TG_MAXR) of `size` with the test keys; its
 * knobs are the environment's (make test-rdma sets the verbs ones) but
 * for the TCP ones, which tg_tcp_streams and tg_tcp_cma_min set. */
void tg_make_cfg(wf_tconfig_t *cfg, int rank, int size, const char *ifname,
                 int64_t timeout_ms);
/* The knobs snapshot of a cfg from tg_make_cfg, to change before the
 * context is created (one per rank: the next tg_make_cfg of that rank
 * overwrites it). */
wf_config_t *tg_knobs(wf_tconfig_t *cfg);
/* Creates context `r` from `cfg` and fetches its address. */
void tg_open_one(tg_group_t *g, int r, const wf_tconfig_t *cfg);
/* Creates `n` contexts on `ifname` with a connection timeout. */
void tg_open_ex(tg_group_t *g, const wf_transport_ops_t *ops, int n,
                const char *ifname, int64_t timeout_ms);
/* `n` TCP contexts on "lo", each config passed through adjust(cfg, rank,
 * arg) before its context is created. */
void tg_open_tcp_with(tg_group_t *g, int n, int64_t timeout_ms,
                      void (*adjust)(wf_tconfig_t *cfg, int rank, void *arg),
                      void *arg);
/* tg_open_ex on "lo" with a 10 s timeout. */
void tg_open(tg_group_t *g, const wf_transport_ops_t *ops, int n);
void tg_fini(tg_group_t *g, int r);
void tg_close(tg_group_t *g);

/* One progress() call on every live context. */
void tg_progress(tg_group_t *g);
/* Drives every context for `ms` milliseconds. */
void tg_spin(tg_group_t *g, int ms);
/* Context a connects to b (OK or INPROGRESS expected); _pair: both ways. */
void tg_connect(tg_group_t *g, int a, int b);
void tg_connect_pair(tg_group_t *g, int a, int b);
/* Waits for a request of context r; returns its final status.  Fails the
 * test after TG_WAIT_MS. */
weft_status_t tg_wait(tg_group_t *g, int r, wf_treq_t *req,
                      wf_treq_info_t *info);

/* A byte pattern that depends on position and seed. */
void tg_fill(uint8_t *buf, size_t len, unsigned seed);
bool tg_check(const uint8_t *buf, size_t len, unsigned seed);
/* Sends `len` bytes from `from` to `to` and checks what arrives. */
void tg_xfer(tg_group_t *g, int from, int to, uint64_t tag, size_t len);

/* Runs fn for every compiled-in transport. */
void tg_each_transport(void (*fn)(const wf_transport_ops_t *ops));

bool tg_fd_readable(int fd, int ms);

#endif /* WF_TGROUP_H */
