/*
 * ib_fake.h - a fake verbs provider that joins two verbs contexts of this
 * process, for the tests that drive the transport without a device
 * (ib_stripe.c, ib_rndv.c).
 *
 * The real wf_ib_qp_create/wf_ib_qp_connect build the QPs (so the INFO
 * blob is encoded and decoded for real), the real isend/irecv/progress move
 * the messages.  The fake "wire" keeps each QP's work requests in order, as
 * RC does, but delivers the next one of a QP picked at random (seeded by
 * fk_rng; fk_lazy biases the pick), so fragments of one message and headers
 * of the next overtake each other across QPs.  SEND, RDMA WRITE and RDMA
 * READ are carried; a SEND that finds no posted receive sets fk_rnr.
 * Each side may have several rails (protection domains with a CQ each);
 * like an HCA, the fake refuses a local or remote key that belongs to
 * another protection domain than the QP's or does not cover the range.
 */
#ifndef WF_TEST_IB_FAKE_H
#define WF_TEST_IB_FAKE_H

#include "test.h"

#if defined(WF_HAVE_IB)

#include "ib/ib.h"

/* Two contexts, side 0 and side 1, each with the other as its peer. */
typedef struct {
    wf_tctx_t ctx[2];
    wf_ib_peer_t peers[2][2];
} fk_pair_t;

enum { FK_LAZY_NONE, FK_LAZY_OTHERS, FK_LAZY_FIRST };

extern uint64_t fk_rng;      /* the wire's random state */
extern int fk_lazy;          /* FK_LAZY_*: see wire_step in ib_fake.c */
extern bool fk_rnr;          /* a SEND found no posted receive */
extern unsigned fk_nwire;    /* work requests on the wire */
/* The next RDMA READ delivered fails with this status (0: none), as when
 * the peer's QP is gone. */
extern enum ibv_wc_status fk_fail_read;
extern unsigned long fk_reads; /* RDMA READs delivered since pair_open */
/* While set, RDMA READs stay on the wire (and so does what a QP posted
 * after one: RC order). */
extern bool fk_hold_reads;
/* Called with the destination of every RDMA READ delivered (or NULL). */
extern void (*fk_on_read)(const char *local, uint32_t len);
/* Each side's zero-copy threshold (ctx->zcopy_min) at pair_open. */
extern size_t fk_zcopy_min;
/* Each side's cfg.topo_numa at pair_open: where its slot memory goes
 * (-1, the default: no topology, unbound). */
extern int fk_topo_numa;

/* Payload bytes each side sent on each rail (SENDs by the sender, READs
 * by the side read from), and work requests refused for a key that is
 * not its QP's rail's or does not cover the range. */
extern uint64_t fk_rail_bytes[2][WF_IB_RAILS_MAX];
extern unsigned long fk_key_errors;

/* Builds both sides with `qps[side]` QPs and connects them; returns the
 * status of the connect of side 0 (the one that checks side 1's INFO). */
weft_status_t fk_pair_open(fk_pair_t *w, const int qps[2]);
/* The same with `rails[side]` rails on each side (each its own protection
 * domain and CQ); the pair uses the smaller count. */
weft_status_t fk_pair_open_rails(fk_pair_t *w, const int qps[2],
                                 const int rails[2]);
void fk_pair_close(fk_pair_t *w);
/* Delivers one work request; false when the wire is empty. */
bool fk_wire_step(void);
/* The registrations of side `s` still alive (rendezvous leaks). */
size_t fk_regs(const fk_pair_t *w, int s);

#endif
#endif /* WF_TEST_IB_FAKE_H */
