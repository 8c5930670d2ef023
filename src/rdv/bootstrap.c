/*
 * bootstrap.c - the rank-record exchange (see bootstrap.h).
 */
#include "rdv/bootstrap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "transport.h"

#define RECORD_MAGIC 0x77667263u /* "wfrc" */
#define RECORD_VERSION 4 /* 4: addresses of up to 1024 bytes (the route) */

typedef struct {
    uint32_t magic;
    uint32_t version;
    int32_t rank;
    int32_t size;
    int32_t pid;
    uint32_t addr_len;
    char host[64];
    uint8_t addr[WF_TADDR_MAX];
    uint64_t node_key; /* wf_node_key(): which ranks share a machine */
} rank_record_t;

static weft_status_t check_record(const rank_record_t *rec, size_t len,
                                  int rank, wf_store_t *store)
{
    if (len != sizeof(*rec) || rec->magic != RECORD_MAGIC ||
        rec->version != RECORD_VERSION || rec->addr_len > WF_TADDR_MAX) {
        WEFT_WARN(INIT, "rank %d's record in %s is malformed (%zu bytes); "
                  "is another program using this job id?", rank,
                  wf_store_describe(store), len);
        return WEFT_ERR_MISMATCH;
    }
    return WEFT_OK;
}

static weft_status_t claim_rank(wf_store_t *store, const char *key,
                                const rank_record_t *mine)
{
    rank_record_t other;
    size_t len = 0;
    bool created = false;
    WEFT_CHECK(wf_store_set_once(store, key, mine, sizeof(*mine), &created,
                                 &other, sizeof(other), &len));
    if (created)
        return WEFT_OK;
    other.host[sizeof(other.host) - 1] = '\0';
    WEFT_WARN(INIT, "rank %d is claimed twice in %s: by %s pid %d and by "
              "this process (%s pid %d)", mine->rank,
              wf_store_describe(store),
              len == sizeof(other) ? other.host : "?",
              len == sizeof(other) ? other.pid : -1, mine->host, mine->pid);
    return WEFT_ERR_INVALID_USAGE;
}

static void record_init(rank_record_t *mine, int rank, int size)
{
    memset(mine, 0, sizeof(*mine));
    mine->magic = RECORD_MAGIC;
    mine->version = RECORD_VERSION;
    mine->rank = rank;
    mine->size = size;
    mine->pid = (int32_t)getpid();
    wf_strlcpy(mine->host, wf_hostname(), sizeof(mine->host));
    mine->node_key = wf_node_key();
}

/* Reads rank r's record under "<prefix>/<r>" and checks it against ours. */
static weft_status_t read_record(wf_store_t *store, const char *prefix, int r,
                                 const rank_record_t *mine, uint64_t deadline,
                                 int64_t timeout_ms, rank_record_t *rec)
{
    char key[32];
    size_t len = 0;
    snprintf(key, sizeof(key), "%s/%d", prefix, r);
    int64_t left = deadline ? wf_deadline_remaining_ms(deadline, -1) : 0;
    weft_status_t st = wf_store_get(store, key, rec, sizeof(*rec), &len,
                                    deadline ? WF_MAX(left, 1) : INT32_MAX);
    if (st == WEFT_ERR_TIMEOUT)
        WEFT_WARN(INIT, "rank %d did not join %s within %lld ms "
                  "(%d ranks expected)", r, wf_store_describe(store),
                  (long long)timeout_ms, mine->size);
    WEFT_CHECK(st);
    WEFT_CHECK(check_record(rec, len, r, store));
    rec->host[sizeof(rec->host) - 1] = '\0';
    if (rec->size != mine->size) {
        WEFT_WARN(INIT, "world size mismatch: rank %d (this process, %s) "
                  "has world size %d but rank %d (%s pid %d) has %d",
                  mine->rank, mine->host, mine->size, r, rec->host, rec->pid,
                  rec->size);
        return WEFT_ERR_MISMATCH;
    }
    return WEFT_OK;
}

weft_status_t wf_bootstrap_exchange(wf_store_t *store, int rank, int size,
                                    const void *addr, size_t addr_len,
                                    uint64_t node_key, int64_t timeout_ms,
                                    uint8_t *peer_addrs,
                                    size_t *peer_addr_lens,
                                    uint64_t *node_keys)
{
    rank_record_t mine;
    char key[32];
    record_init(&mine, rank, size);
    mine.node_key = node_key;
    mine.addr_len = (uint32_t)addr_len;
    memcpy(mine.addr, addr, addr_len);
    snprintf(key, sizeof(key), "rank/%d", rank);
    WEFT_CHECK(claim_rank(store, key, &mine));

    uint64_t deadline = wf_deadline_after(timeout_ms);
    for (int r = 0; r < size; r++) {
        rank_record_t rec;
        WEFT_CHECK(read_record(store, "rank", r, &mine, deadline, timeout_ms,
                               &rec));
        memcpy(peer_addrs + (size_t)r * WF_TADDR_MAX, rec.addr, rec.addr_len);
        peer_addr_lens[r] = rec.addr_len;
        node_keys[r] = rec.node_key;
    }
    return WEFT_OK;
}

/* The same record without the address, so a rank claimed twice or a
 * world size that differs is reported here already, as by the exchange. */
weft_status_t wf_bootstrap_node_rank(wf_store_t *store, int rank, int size,
                                     bool read, int64_t timeout_ms,
                                     int *local_rank, int *local_size)
{
    rank_record_t mine, rec;
    char key[32];
    record_init(&mine, rank, size);
    snprintf(key, sizeof(key), "node/%d", rank);
    WEFT_CHECK(claim_rank(store, key, &mine));
    if (!read)
        return WEFT_OK;
    uint64_t deadline = wf_deadline_after(timeout_ms);
    int lr = 0, ls = 0;
    for (int r = 0; r < size; r++) {
        WEFT_CHECK(read_record(store, "node", r, &mine, deadline, timeout_ms,
                               &rec));
        if (rec.node_key == mine.node_key) {
            lr += r < rank;
            ls++;
        }
    }
    *local_rank = lr;
    *local_size = ls;
    return WEFT_OK;
}

weft_status_t wf_bootstrap_ready(wf_store_t *store, int rank, int size,
                                 bool wait_all, int64_t timeout_ms)
{
    if (wait_all)
        return wf_store_barrier(store, "ready", rank, size,
                                wf_store_wait_ms(timeout_ms));
    char key[32];
    snprintf(key, sizeof(key), "ready/%d", rank);
    return wf_store_set(store, key, "1", 1);
}
