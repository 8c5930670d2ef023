/*
 * store.h - the key/value store ranks meet through.
 *
 * A store is opened from a URI and a job id; keys live in the job's
 * namespace, so one server serves many jobs.  Implementations:
 *   HOST:PORT or tcp://HOST:PORT   client of a weft-rendezvous server
 *   file:///DIR                    a directory on a shared file system
 *   mem://NAME                     in-process, for ranks that are threads
 * wf_store_sub() derives a handle whose keys are prefixed (communicator
 * namespaces for weft_comm_split) and that shares the parent's connection.
 *
 * Blocking calls take a timeout in milliseconds (<= 0: no wait for get;
 * the server's own limits still apply).  Errors are logged once where they
 * are detected, naming the store (wf_store_describe) and the key.
 * A handle may be used by several threads; calls are serialised.
 */
#ifndef WF_STORE_H
#define WF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WF_STORE_KEY_MAX 256
#define WF_STORE_VALUE_MAX (64 * 1024)

typedef struct wf_store wf_store_t;

/* Opens a store.  `token` (NULL or "" for none) is the job's shared
 * secret, presented to a rendezvous server.  For tcp, connects with retries until timeout_ms and fails
 * with WEFT_ERR_TIMEOUT naming the address when nothing answers. */
weft_status_t wf_store_open(const char *uri, const char *job_id,
                            const char *token, int64_t timeout_ms,
                            wf_store_t **store);

/* Sets (replaces) key = value. */
weft_status_t wf_store_set(wf_store_t *store, const char *key,
                           const void *value, size_t len);

/* Sets key = value only if key does not exist.  *created tells whether this
 * call created it; when it did not, the existing value is copied to
 * existing (capacity cap, length *existing_len). */
weft_status_t wf_store_set_once(wf_store_t *store, const char *key,
                                const void *value, size_t len, bool *created,
                                void *existing, size_t cap,
                                size_t *existing_len);

/* Gets a value, waiting up to timeout_ms for the key to appear.  Fails with
 * WEFT_ERR_TIMEOUT (naming key and store) when it does not, and with
 * WEFT_ERR_INVALID_ARG when the value does not fit in cap. */
weft_status_t wf_store_get(wf_store_t *store, const char *key, void *value,
                           size_t cap, size_t *len, int64_t timeout_ms);

/* Waits until all keys exist. */
weft_status_t wf_store_wait(wf_store_t *store, const char *const *keys,
                            size_t nkeys, int64_t timeout_ms);

/* Sets "<prefix>/<rank>" and waits until the key of every rank of
 * `size` is there: a barrier through the store (prefix of a few words). */
weft_status_t wf_store_barrier(wf_store_t *store, const char *prefix,
                               int rank, int size, int64_t timeout_ms);

/* A communicator's timeout (WEFT_TIMEOUT, 0: no deadline) as the
 * timeout_ms of a store wait, where 0 would be a probe. */
static inline int64_t wf_store_wait_ms(int64_t timeout_ms)
{
    return timeout_ms > 0 ? timeout_ms : INT32_MAX;
}

/* Atomically adds delta to the integer stored at key (missing = 0) and
 * returns the new value. */
weft_status_t wf_store_add(wf_store_t *store, const char *key, int64_t delta,
                           int64_t *result);

/* A handle on the same store whose keys are prefixed with `prefix`. */
weft_status_t wf_store_sub(wf_store_t *parent, const char *prefix,
                           wf_store_t **child);

/* "127.0.0.1:29500 job myjob" or similar, for messages. */
const char *wf_store_describe(wf_store_t *store);

/* The local IP address this process uses to reach the store, when the store
 * is remote (tcp); false otherwise.  Used to pick the data interface. */
bool wf_store_local_ip(wf_store_t *store, char *ip, size_t len);

/* Releases the handle (the shared connection when the last handle goes).
 * Accepts NULL. */
void wf_store_close(wf_store_t *store);

#endif /* WF_STORE_H */
