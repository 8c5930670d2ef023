/*
 * bootstrap.h - joining a communicator through the store: every rank
 * publishes a record (world size, host, pid, transport address) under
 * "rank/<r>" with set-once semantics, then reads every other rank's record.
 * Two processes claiming one rank, and ranks that disagree on the world
 * size, are reported here with both sides named.  Each record also carries
 * the rank's node key (hostname and boot id), which tells the ranks that
 * share a machine.
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
                                    uint64_t node_key, int64_t timeout_ms,
                                    uint8_t *peer_addrs,
                                    size_t *peer_addr_lens,
                                    uint64_t *node_keys);

/* This rank's place among the ranks on its machine, known before the
 * transport opens (the topology's NIC choice depends on it, and the
 * transport's address on that choice): every rank publishes its node key
 * under "node/<r>"; with `read`, reads every rank's and counts.  Without,
 * *local_rank and *local_size are left alone. */
weft_status_t wf_bootstrap_node_rank(wf_store_t *store, int rank, int size,
                                     bool read, int64_t timeout_ms,
                                     int *local_rank, int *local_size);

/* Marks this rank as done with the exchange.  With wait_all (the rank that
 * hosts the rendezvous server in-process) waits until every rank is, so the
 * server is not stopped under a rank that still reads records. */
weft_status_t wf_bootstrap_ready(wf_store_t *store, int rank, int size,
                                 bool wait_all, int64_t timeout_ms);

/* The job's data-plane secret (job_secret.c): with a token, derived from
 * it (it never travels); without one, a random secret that the job's first
 * rank creates in the store (set-once) and every rank reads back, so all
 * ranks of the job share it and nobody outside the store has it.
 * docs/design.md ("Trust model") says who can read it. */
weft_status_t wf_bootstrap_secret(wf_store_t *store, const char *job_id,
                                  const char *token, uint8_t secret[32]);

/* weft_server_start with an explicit token (NULL: the configured one), for
 * the rank that hosts the server with the token it was given by API. */
weft_status_t wf_rdv_server_start(const char *listen, const char *token,
                                  weft_server_t *server);

#endif /* WF_BOOTSTRAP_H */
