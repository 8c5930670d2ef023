/*
 * store_impl.h - what the store backends (store_tcp.c, store_file.c,
 * store_mem.c) provide to store.c, and the in-memory key/value table
 * (rdv_kv.c) that the mem store and the rendezvous server share.
 *
 * store.c validates arguments, applies the key prefix of wf_store_sub and
 * counts references; a backend sees full keys that are non-empty and at
 * most WF_STORE_KEY_MAX bytes, and values of at most WF_STORE_VALUE_MAX
 * bytes.  Backends log their own errors (naming `desc`) once.
 */
#ifndef WF_STORE_IMPL_H
#define WF_STORE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdv/store.h"

typedef struct wf_store_ops {
    const char *scheme; /* "tcp", "file", "mem" */
    weft_status_t (*set)(void *impl, const char *key, const void *value,
                         size_t len);
    weft_status_t (*set_once)(void *impl, const char *key, const void *value,
                              size_t len, bool *created, void *existing,
                              size_t cap, size_t *existing_len);
    weft_status_t (*get)(void *impl, const char *key, void *value, size_t cap,
                         size_t *len, int64_t timeout_ms);
    weft_status_t (*wait)(void *impl, const char *const *keys, size_t nkeys,
                          int64_t timeout_ms);
    weft_status_t (*add)(void *impl, const char *key, int64_t delta,
                         int64_t *result);
    bool (*local_ip)(void *impl, char *ip, size_t len);
    void (*close)(void *impl);
} wf_store_ops_t;

/* Backend constructors: `rest` is the URI without its scheme ("HOST:PORT",
 * "/DIR", "NAME"); `desc` a description for messages (copied). */
weft_status_t wf_store_tcp_open(const char *rest, const char *job_id,
                                const char *token,
                                int64_t timeout_ms, const char *desc,
                                void **impl);
weft_status_t wf_store_file_open(const char *rest, const char *job_id,
                                 const char *desc, void **impl);
weft_status_t wf_store_mem_open(const char *rest, const char *job_id,
                                const char *desc, void **impl);

extern const wf_store_ops_t wf_store_tcp_ops;
extern const wf_store_ops_t wf_store_file_ops;
extern const wf_store_ops_t wf_store_mem_ops;

/* Copies a value into a caller buffer with the store.h contract: fails with
 * WEFT_ERR_INVALID_ARG (logged, naming key and store) when it does not
 * fit; *len is written only on success. */
weft_status_t wf_store_copy_value(const char *desc, const char *key,
                                  const void *src, size_t n, void *dst,
                                  size_t cap, size_t *len);

/* The wf_time_ms() deadline of a blocking call; <= 0 means "now" and huge
 * timeouts saturate instead of wrapping. */
uint64_t wf_store_deadline(int64_t timeout_ms);

/* Sleeps *delay_ms (at most until the deadline) and doubles it up to
 * max_ms, for polling and connect retries; false, without sleeping, once
 * the deadline has passed. */
bool wf_store_backoff(uint64_t deadline, int *delay_ms, int max_ms);

/* Logs and returns WEFT_ERR_TIMEOUT for a key that did not appear. */
weft_status_t wf_store_timeout(const char *desc, const char *key,
                               int64_t timeout_ms);

/* ---- key/value table ---------------------------------------------------- */

typedef struct wf_kv_entry {
    struct wf_kv_entry *next;
    uint64_t hash;
    uint8_t *value;
    size_t value_len;
    size_t key_len;
    char key[]; /* key_len bytes and a terminator */
} wf_kv_entry_t;

/* A chained hash table of byte-string keys.  Keys are never deleted: the
 * whole table goes when its job (or mem store) does. */
typedef struct {
    wf_kv_entry_t **buckets;
    size_t nbuckets;
    size_t count;
    size_t bytes; /* keys + values, for limits and debug output */
} wf_kv_t;

void wf_kv_init(wf_kv_t *kv);
void wf_kv_free(wf_kv_t *kv);
wf_kv_entry_t *wf_kv_find(const wf_kv_t *kv, const void *key, size_t key_len);
/* Sets key = value (replacing).  *created (may be NULL) tells whether the
 * key is new.  WEFT_ERR_NO_MEMORY leaves the table unchanged. */
weft_status_t wf_kv_put(wf_kv_t *kv, const void *key, size_t key_len,
                        const void *value, size_t value_len, bool *created);
/* ADD semantics: the value is decimal text, missing = 0.  Fails with
 * WEFT_ERR_INVALID_ARG when the value is not an integer or the sum
 * overflows (not logged: callers name the store). */
weft_status_t wf_kv_add(wf_kv_t *kv, const void *key, size_t key_len,
                        int64_t delta, int64_t *result, bool *created);

#endif /* WF_STORE_IMPL_H */
