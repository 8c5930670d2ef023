/*
 * store.c - the wf_store_* entry points of store.h: URI dispatch, argument
 * checks, key prefixes of wf_store_sub and the shared backend reference.
 *
 * A handle is a prefix plus a pointer to the backend instance it shares
 * with its parent and children; the instance (a tcp connection pool, a
 * directory, a mem registry entry) goes when the last handle is closed, in
 * any order.  Backends never see prefixes or invalid arguments.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "rdv/rdv_proto.h"
#include "rdv/store_impl.h"

/* "URI job ID" (URI cut at 120 bytes), then " prefix 'P'". */
#define BASE_DESC_MAX 400
#define DESC_MAX (BASE_DESC_MAX + WF_STORE_KEY_MAX + 16)

typedef struct {
    const wf_store_ops_t *ops;
    void *impl;
    int refs; /* atomic: handles sharing this instance */
    char desc[BASE_DESC_MAX];
} store_shared_t;

struct wf_store {
    store_shared_t *shared;
    size_t prefix_len;
    char prefix[WF_STORE_KEY_MAX + 1];
    char desc[DESC_MAX];
};

/* ---- helpers for the backends ------------------------------------------ */

weft_status_t wf_store_copy_value(const char *desc, const char *key,
                                  const void *src, size_t n, void *dst,
                                  size_t cap, size_t *len)
{
    if (dst == NULL && cap == 0) { /* the caller only wants the length */
        if (len)
            *len = n;
        return WEFT_OK;
    }
    if (n > cap || dst == NULL) {
        WEFT_WARN(RDV, "store %s: value of key '%s' has %zu bytes, more "
                       "than the %zu-byte buffer", desc, key, n, cap);
        return WEFT_ERR_INVALID_ARG;
    }
    if (n)
        memcpy(dst, src, n);
    if (len)
        *len = n;
    return WEFT_OK;
}

uint64_t wf_store_deadline(int64_t timeout_ms)
{
    const int64_t cap = (int64_t)1 << 40; /* about 35 years */

    return wf_time_ms() + (uint64_t)WF_MIN(WF_MAX(timeout_ms, 0), cap);
}

bool wf_store_backoff(uint64_t deadline, int *delay_ms, int max_ms)
{
    uint64_t now = wf_time_ms();

    if (now >= deadline)
        return false;
    wf_sleep_ms(WF_MIN((uint64_t)*delay_ms, deadline - now));
    *delay_ms = WF_MIN(*delay_ms * 2, max_ms);
    return true;
}

weft_status_t wf_store_timeout(const char *desc, const char *key,
                               int64_t timeout_ms)
{
    /* A zero timeout is a probe: a missing key is an answer, not a fault. */
    if (timeout_ms <= 0)
        WEFT_DEBUG(RDV, "store %s: key '%s' is not there", desc, key);
    else
        WEFT_WARN(RDV, "store %s: key '%s' did not appear within %lld ms",
                  desc, key, (long long)timeout_ms);
    return WEFT_ERR_TIMEOUT;
}

/* ---- open / sub / close ------------------------------------------------ */

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Picks the backend from the URI and opens it. */
static weft_status_t open_backend(const char *uri, const char *job_id,
                                  const char *token,
                                  int64_t timeout_ms, const char *desc,
                                  store_shared_t *sh)
{
    if (has_prefix(uri, "mem://")) {
        sh->ops = &wf_store_mem_ops;
        return wf_store_mem_open(uri + 6, job_id, desc, &sh->impl);
    }
    if (has_prefix(uri, "file://")) {
        sh->ops = &wf_store_file_ops;
        return wf_store_file_open(uri + 7, job_id, desc, &sh->impl);
    }
    if (strstr(uri, "://") && !has_prefix(uri, "tcp://")) {
        WEFT_WARN(RDV, "store '%s': unknown scheme (use HOST:PORT, "
                       "tcp://HOST:PORT, file:///DIR or mem://NAME)", uri);
        return WEFT_ERR_INVALID_ARG;
    }
    sh->ops = &wf_store_tcp_ops;
    return wf_store_tcp_open(has_prefix(uri, "tcp://") ? uri + 6 : uri,
                             job_id, token, timeout_ms, desc, &sh->impl);
}

weft_status_t wf_store_open(const char *uri, const char *job_id,
                            const char *token, int64_t timeout_ms,
                            wf_store_t **store)
{
    weft_status_t st;

    if (!uri || !*uri || !job_id || !wf_rdv_job_id_ok(job_id, strlen(job_id)) ||
        !store) {
        WEFT_WARN(RDV, "store open: invalid arguments (uri '%s', job id "
                       "'%s' of 1 to %d printable ASCII bytes, store %p)",
                  uri ? uri : "(null)", job_id ? job_id : "(null)",
                  WF_RDV_JOB_MAX, (void *)store);
        return WEFT_ERR_INVALID_ARG;
    }
    wf_store_t *s = calloc(1, sizeof(*s));
    store_shared_t *sh = calloc(1, sizeof(*sh));
    if (!s || !sh) {
        WEFT_WARN(RDV, "store %s: out of memory", uri);
        st = WEFT_ERR_NO_MEMORY;
        goto err_free;
    }
    snprintf(sh->desc, sizeof(sh->desc), "%.120s job %s", uri, job_id);
    wf_strlcpy(s->desc, sh->desc, sizeof(s->desc));
    WEFT_CHECK_GOTO(open_backend(uri, job_id, token ? token : "", timeout_ms,
                                 sh->desc, sh), st,
                    err_free);
    sh->refs = 1;
    s->shared = sh;
    WEFT_DEBUG(RDV, "store %s opened", s->desc);
    *store = s;
    return WEFT_OK;
err_free:
    free(sh);
    free(s);
    return st;
}

weft_status_t wf_store_sub(wf_store_t *parent, const char *prefix,
                           wf_store_t **child)
{
    if (!parent || !prefix || !child) {
        WEFT_WARN(RDV, "store sub: NULL argument");
        return WEFT_ERR_INVALID_ARG;
    }
    size_t n = strlen(prefix);
    /* Leave room for at least one byte of key. */
    if (parent->prefix_len + n >= WF_STORE_KEY_MAX) {
        WEFT_WARN(RDV, "store %s: prefix '%s' makes keys longer than %d "
                       "bytes", parent->desc, prefix, WF_STORE_KEY_MAX);
        return WEFT_ERR_INVALID_ARG;
    }
    wf_store_t *s = calloc(1, sizeof(*s));
    if (!s) {
        WEFT_WARN(RDV, "store %s: out of memory", parent->desc);
        return WEFT_ERR_NO_MEMORY;
    }
    memcpy(s->prefix, parent->prefix, parent->prefix_len);
    memcpy(s->prefix + parent->prefix_len, prefix, n + 1);
    s->prefix_len = parent->prefix_len + n;
    s->shared = parent->shared;
    __atomic_add_fetch(&s->shared->refs, 1, __ATOMIC_RELAXED);
    snprintf(s->desc, sizeof(s->desc), "%s prefix '%s'", s->shared->desc,
             s->prefix);
    *child = s;
    return WEFT_OK;
}

void wf_store_close(wf_store_t *store)
{
    if (!store)
        return;
    store_shared_t *sh = store->shared;
    if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        sh->ops->close(sh->impl);
        free(sh);
    }
    free(store);
}

const char *wf_store_describe(wf_store_t *store)
{
    return store ? store->desc : "(no store)";
}

bool wf_store_local_ip(wf_store_t *store, char *ip, size_t len)
{
    if (!store || !ip || len == 0 || !store->shared->ops->local_ip)
        return false;
    return store->shared->ops->local_ip(store->shared->impl, ip, len);
}

/* ---- key/value calls ---------------------------------------------------- */

/* Builds prefix + key into full (WF_STORE_KEY_MAX + 1 bytes). */
static weft_status_t full_key(wf_store_t *s, const char *op, const char *key,
                              char *full)
{
    if (!s) {
        WEFT_WARN(RDV, "store %s: NULL store", op);
        return WEFT_ERR_INVALID_ARG;
    }
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || s->prefix_len + n > WF_STORE_KEY_MAX) {
        WEFT_WARN(RDV, "store %s: %s: key '%s' must have 1 to %zu bytes",
                  s->desc, op, key ? key : "(null)",
                  WF_STORE_KEY_MAX - s->prefix_len);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(full, s->prefix, s->prefix_len);
    memcpy(full + s->prefix_len, key, n + 1);
    return WEFT_OK;
}

static weft_status_t check_value(wf_store_t *s, const char *key,
                                 const void *value, size_t len)
{
    if (len > WF_STORE_VALUE_MAX || (len && !value)) {
        WEFT_WARN(RDV, "store %s: value of key '%s' must have at most %d "
                       "bytes (got %zu%s)", s->desc, key, WF_STORE_VALUE_MAX,
                  len, value ? "" : ", NULL pointer");
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

weft_status_t wf_store_set(wf_store_t *store, const char *key,
                           const void *value, size_t len)
{
    char full[WF_STORE_KEY_MAX + 1];

    WEFT_CHECK(full_key(store, "set", key, full));
    WEFT_CHECK(check_value(store, key, value, len));
    return store->shared->ops->set(store->shared->impl, full, value, len);
}

weft_status_t wf_store_set_once(wf_store_t *store, const char *key,
                                const void *value, size_t len, bool *created,
                                void *existing, size_t cap,
                                size_t *existing_len)
{
    char full[WF_STORE_KEY_MAX + 1];

    WEFT_CHECK(full_key(store, "set_once", key, full));
    WEFT_CHECK(check_value(store, key, value, len));
    if (!created) {
        WEFT_WARN(RDV, "store %s: set_once of key '%s': created is NULL",
                  store->desc, key);
        return WEFT_ERR_INVALID_ARG;
    }
    return store->shared->ops->set_once(store->shared->impl, full, value, len,
                                        created, existing, cap,
                                        existing_len);
}

weft_status_t wf_store_get(wf_store_t *store, const char *key, void *value,
                           size_t cap, size_t *len, int64_t timeout_ms)
{
    char full[WF_STORE_KEY_MAX + 1];

    WEFT_CHECK(full_key(store, "get", key, full));
    return store->shared->ops->get(store->shared->impl, full, value, cap, len,
                                   timeout_ms);
}

weft_status_t wf_store_wait(wf_store_t *store, const char *const *keys,
                            size_t nkeys, int64_t timeout_ms)
{
    weft_status_t st = WEFT_OK;

    if (!store || (nkeys && !keys)) {
        WEFT_WARN(RDV, "store %s: wait: NULL argument",
                  wf_store_describe(store));
        return WEFT_ERR_INVALID_ARG;
    }
    if (nkeys == 0)
        return WEFT_OK;
    /* One block: the pointer array, then the prefixed keys. */
    char **full = malloc(nkeys * (sizeof(char *) + WF_STORE_KEY_MAX + 1));
    if (!full) {
        WEFT_WARN(RDV, "store %s: wait on %zu keys: out of memory",
                  store->desc, nkeys);
        return WEFT_ERR_NO_MEMORY;
    }
    char *text = (char *)(full + nkeys);
    for (size_t i = 0; i < nkeys; i++) {
        full[i] = text + i * (WF_STORE_KEY_MAX + 1);
        WEFT_CHECK_GOTO(full_key(store, "wait", keys[i], full[i]), st, out);
    }
    st = store->shared->ops->wait(store->shared->impl,
                                  (const char *const *)full, nkeys,
                                  timeout_ms);
out:
    free(full);
    return st;
}

weft_status_t wf_store_barrier(wf_store_t *store, const char *prefix,
                               int rank, int size, int64_t timeout_ms)
{
    char key[64];
    snprintf(key, sizeof(key), "%s/%d", prefix, rank);
    WEFT_CHECK(wf_store_set(store, key, "1", 1));
    char (*names)[64] = calloc((size_t)size, sizeof(*names));
    const char **keys = calloc((size_t)size, sizeof(*keys));
    weft_status_t st = WEFT_ERR_NO_MEMORY;
    if (names && keys) {
        for (int r = 0; r < size; r++) {
            snprintf(names[r], sizeof(names[r]), "%s/%d", prefix, r);
            keys[r] = names[r];
        }
        st = wf_store_wait(store, keys, (size_t)size, timeout_ms);
    } else {
        WEFT_WARN(INIT, "out of memory waiting for %d ranks", size);
    }
    free(names);
    free(keys);
    return st;
}

weft_status_t wf_store_add(wf_store_t *store, const char *key, int64_t delta,
                           int64_t *result)
{
    char full[WF_STORE_KEY_MAX + 1];

    WEFT_CHECK(full_key(store, "add", key, full));
    if (!result) {
        WEFT_WARN(RDV, "store %s: add of key '%s': result is NULL",
                  store->desc, key);
        return WEFT_ERR_INVALID_ARG;
    }
    return store->shared->ops->add(store->shared->impl, full, delta, result);
}
