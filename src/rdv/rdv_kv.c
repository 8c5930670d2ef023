/*
 * rdv_kv.c - the in-memory key/value table of the mem store and of each
 * job on the rendezvous server (store_impl.h).
 *
 * Not thread-safe: the mem store holds its lock, the server is single
 * threaded.  Tables only grow (no delete), so the chains never need
 * unlinking and a found entry stays valid until the table is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rdv/rdv_proto.h"
#include "rdv/store_impl.h"

#define KV_MIN_BUCKETS 64

void wf_kv_init(wf_kv_t *kv) { memset(kv, 0, sizeof(*kv)); }

void wf_kv_free(wf_kv_t *kv)
{
    for (size_t i = 0; i < kv->nbuckets; i++) {
        wf_kv_entry_t *e = kv->buckets[i];
        while (e) {
            wf_kv_entry_t *next = e->next;
            free(e->value);
            free(e);
            e = next;
        }
    }
    free(kv->buckets);
    memset(kv, 0, sizeof(*kv));
}

wf_kv_entry_t *wf_kv_find(const wf_kv_t *kv, const void *key, size_t key_len)
{
    if (kv->nbuckets == 0)
        return NULL;
    uint64_t h = wf_hash64(key, key_len);
    for (wf_kv_entry_t *e = kv->buckets[h & (kv->nbuckets - 1)]; e;
         e = e->next) {
        if (e->hash == h && e->key_len == key_len &&
            memcmp(e->key, key, key_len) == 0)
            return e;
    }
    return NULL;
}

/* Doubles the bucket array when the chains get long (load factor 2).  A
 * failed allocation keeps the old array: the table still works. */
static void kv_grow(wf_kv_t *kv)
{
    size_t n = kv->nbuckets ? kv->nbuckets * 2 : KV_MIN_BUCKETS;
    wf_kv_entry_t **b;

    if (kv->nbuckets && kv->count < kv->nbuckets * 2)
        return;
    b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < kv->nbuckets; i++) {
        wf_kv_entry_t *e = kv->buckets[i];
        while (e) {
            wf_kv_entry_t *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(kv->buckets);
    kv->buckets = b;
    kv->nbuckets = n;
}

static weft_status_t kv_replace(wf_kv_t *kv, wf_kv_entry_t *e,
                                const void *value, size_t value_len)
{
    /* malloc(0) may return NULL; keep one byte so NULL means failure. */
    uint8_t *copy = malloc(value_len ? value_len : 1);

    if (!copy)
        return WEFT_ERR_NO_MEMORY;
    if (value_len)
        memcpy(copy, value, value_len);
    kv->bytes = kv->bytes - e->value_len + value_len;
    free(e->value);
    e->value = copy;
    e->value_len = value_len;
    return WEFT_OK;
}

weft_status_t wf_kv_put(wf_kv_t *kv, const void *key, size_t key_len,
                        const void *value, size_t value_len, bool *created)
{
    wf_kv_entry_t *e = wf_kv_find(kv, key, key_len);

    if (e) {
        WEFT_CHECK(kv_replace(kv, e, value, value_len));
        if (created)
            *created = false;
        return WEFT_OK;
    }
    kv_grow(kv);
    if (kv->nbuckets == 0)
        return WEFT_ERR_NO_MEMORY;
    e = calloc(1, sizeof(*e) + key_len + 1);
    if (!e)
        return WEFT_ERR_NO_MEMORY;
    memcpy(e->key, key, key_len);
    e->key_len = key_len;
    e->hash = wf_hash64(key, key_len);
    if (kv_replace(kv, e, value, value_len) != WEFT_OK) {
        free(e);
        return WEFT_ERR_NO_MEMORY;
    }
    e->next = kv->buckets[e->hash & (kv->nbuckets - 1)];
    kv->buckets[e->hash & (kv->nbuckets - 1)] = e;
    kv->count++;
    kv->bytes += key_len;
    if (created)
        *created = true;
    return WEFT_OK;
}

weft_status_t wf_kv_add(wf_kv_t *kv, const void *key, size_t key_len,
                        int64_t delta, int64_t *result, bool *created)
{
    wf_kv_entry_t *e = wf_kv_find(kv, key, key_len);
    int64_t old = 0, sum;
    char text[24];

    if (e && !wf_rdv_counter_parse(e->value, e->value_len, &old))
        return WEFT_ERR_INVALID_ARG;
    if (!wf_rdv_counter_add(old, delta, &sum))
        return WEFT_ERR_INVALID_ARG;
    size_t n = wf_rdv_counter_format(sum, text);
    WEFT_CHECK(wf_kv_put(kv, key, key_len, text, n, created));
    *result = sum;
    return WEFT_OK;
}
