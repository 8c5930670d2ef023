/*
 * bootstrap.h - joining a communicator through the store: every rank
 * publishes a record (world size, host, pid, transport address) under
 * "rank/<r>" with set-once semantics, then reads every other rank's record.
 * Two processes claiming one rank, and ranks that disagree on the world
 * size, are reported here with both sides named.
 */
#ifndef WF_BOOTSTRAP_H
#define WF_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdv/store.h"
#include "weft.h"

weft_status_t wf_bootstrap_exchange(wf_store_t *store, int rank, int size,
                                    const void *addr, size_t addr_len,
                                    int64_t timeout_ms, uint8_t *peer_addrs,
                                    size_t *peer_addr_lens);

/* Marks this rank as done with the exchange.  With wait_all (the rank that
 * hosts the rendezvous server in-process) waits until every rank is, so the
 * server is not stopped under a rank that still reads records. */
weft_status_t wf_bootstrap_ready(wf_store_t *store, int rank, int size,
                                 bool wait_all, int64_t timeout_ms);

#endif /* WF_BOOTSTRAP_H */
