/*
 * plan_cache.c - plans built once per call signature (plan_cache.h).
 *
 * A few dozen entries, looked up by a hash of the arguments and then
 * compared whole; a miss evicts the least recently used entry.  A linear
 * scan of the slots is shorter than anything it would save for the few
 * signatures a program repeats.
 */
#include "algo/plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

void wf_plan_cache_init(wf_plan_cache_t *cache, int entries)
{
    memset(cache, 0, sizeof(*cache));
    pthread_mutex_init(&cache->lock, NULL);
    if (entries <= 0)
        return;
    if (entries > WF_PLAN_CACHE_MAX_ENTRIES) {
        WEFT_WARN_ONCE(COLL, "WEFT_PLAN_CACHE=%d: keeping %d plans, the "
                       "most a linear lookup is meant for", entries,
                       WF_PLAN_CACHE_MAX_ENTRIES);
        entries = WF_PLAN_CACHE_MAX_ENTRIES;
    }
    cache->entry = calloc((size_t)entries, sizeof(*cache->entry));
    cache->used = calloc((size_t)entries, sizeof(*cache->used));
    if (!cache->entry || !cache->used) {
        WEFT_WARN(COLL, "out of memory for a cache of %d plans; every call "
                  "builds its own", entries);
        free(cache->entry);
        free(cache->used);
        cache->entry = NULL;
        cache->used = NULL;
        return;
    }
    cache->cap = entries;
}

void wf_plan_cache_fini(wf_plan_cache_t *cache)
{
    for (int i = 0; i < cache->cap; i++)
        wf_built_plan_release(cache->entry[i]);
    free(cache->entry);
    free(cache->used);
    pthread_mutex_destroy(&cache->lock);
    memset(cache, 0, sizeof(*cache));
}

/* FNV-1a over the argument words (a byte at a time cost 600
 * instructions a call).  The key is compared with memcmp, so the caller
 * zeroes the struct's padding; padding that differed anyway would only
 * cost a miss, never a wrong plan. */
static uint64_t args_hash(const wf_coll_args_t *args)
{
    _Static_assert(sizeof(*args) % sizeof(uint64_t) == 0,
                   "wf_coll_args_t hashes as whole words");
    uint64_t w[sizeof(*args) / sizeof(uint64_t)];
    memcpy(w, args, sizeof(w));
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < WF_ARRAY_LEN(w); i++)
        h = (h ^ w[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static weft_status_t build(const wf_coll_args_t *args, const char *algo_spec,
                           uint64_t hash, wf_built_plan_t **out)
{
    weft_status_t st;
    wf_built_plan_t *b = calloc(1, sizeof(*b));
    if (!b) {
        WEFT_WARN(COLL, "out of memory for the plan of a %s",
                  wf_coll_name(args->coll));
        return WEFT_ERR_NO_MEMORY;
    }
    b->refs = 1;
    b->args = *args;
    b->hash = hash;
    wf_plan_init(&b->plan, args->dtype, args->op, args->elem_size,
                 args->size);
    WEFT_CHECK_GOTO(wf_algo_select(args, algo_spec, &b->algo), st, err);
    b->algo_name = b->algo->name;
    b->algo_id = b->algo->id;
    WEFT_CHECK_GOTO(b->algo->build(args, &b->plan), st, err);
    st = wf_plan_index(&b->plan, &b->deps);
    if (st != WEFT_OK) {
        WEFT_WARN(COLL, "out of memory indexing the %s plan of %u steps",
                  b->algo->name, b->plan.nsteps);
        goto err;
    }
    wf_built_plan_measure(b);
    *out = b;
    return WEFT_OK;
err:
    wf_built_plan_release(b);
    return st;
}

static wf_built_plan_t *lookup(wf_plan_cache_t *cache,
                               const wf_coll_args_t *args, uint64_t hash)
{
    for (int i = 0; i < cache->cap; i++) {
        wf_built_plan_t *b = cache->entry[i];
        if (b && b->hash == hash && memcmp(&b->args, args, sizeof(*args)) == 0) {
            cache->used[i] = ++cache->tick;
            return b;
        }
    }
    return NULL;
}

/* Keeps `b` in a free slot or in place of the least recently used. */
static void insert(wf_plan_cache_t *cache, wf_built_plan_t *b)
{
    int victim = 0;
    for (int i = 0; i < cache->cap; i++) {
        if (!cache->entry[i]) {
            victim = i;
            break;
        }
        if (cache->used[i] < cache->used[victim])
            victim = i;
    }
    wf_built_plan_release(cache->entry[victim]);
    __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    cache->entry[victim] = b;
    cache->used[victim] = ++cache->tick;
}

weft_status_t wf_plan_cache_get(wf_plan_cache_t *cache,
                                const wf_coll_args_t *args,
                                const char *algo_spec, wf_built_plan_t **out)
{
    /* A vector collective's plan depends on the counts behind its
     * pointers, which the key does not hold: built every call. */
    if (wf_coll_is_vector(args->coll)) {
        weft_status_t st = build(args, algo_spec, 0, out);
        if (st == WEFT_OK) {
            (*out)->args.vcounts = (*out)->args.vdispls = NULL;
            (*out)->args.vscounts = (*out)->args.vsdispls = NULL;
        }
        return st;
    }
    uint64_t hash = args_hash(args);
    pthread_mutex_lock(&cache->lock);
    wf_built_plan_t *b = lookup(cache, args, hash);
    if (b) {
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
        cache->hits++;
        pthread_mutex_unlock(&cache->lock);
        *out = b;
        return WEFT_OK;
    }
    cache->misses++;
    pthread_mutex_unlock(&cache->lock);
    /* Built outside the lock: a large plan takes a while.  Two threads
     * that miss on one signature at once each build a copy; the cache keeps
     * the first, the second runs uncached. */
    weft_status_t st = build(args, algo_spec, hash, &b);
    if (st != WEFT_OK)
        return st;
    if (cache->cap && b->plan.nsteps <= WF_PLAN_CACHE_MAX_STEPS) {
        pthread_mutex_lock(&cache->lock);
        if (!lookup(cache, args, hash))
            insert(cache, b);
        pthread_mutex_unlock(&cache->lock);
    }
    *out = b;
    return WEFT_OK;
}
