/*
 * store_mem.c - "mem://NAME": an in-process store for ranks that are
 * threads of one process (tests, single-node runs without a server).
 *
 * A process-global registry holds one space per (name, job id), counted by
 * the handles open on it, so independent tests that happen to reuse a name
 * still get separate data once the earlier handles are closed; the space
 * and its keys go with its last handle, as a job does on the server.  One
 * registry lock serialises every call; waits sleep on the space's condition
 * variable, which every write broadcasts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "rdv/store_impl.h"

typedef struct mem_space {
    struct mem_space *next;
    char *name;
    char *job;
    int refs;
    wf_kv_t kv;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
} mem_space_t;

typedef struct {
    mem_space_t *space;
    char desc[512];
} mem_store_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_space_t *g_spaces;

/* ---- registry ---------------------------------------------------------- */

static void space_free(mem_space_t *sp)
{
    wf_kv_free(&sp->kv);
    pthread_cond_destroy(&sp->cond);
    free(sp->name);
    free(sp->job);
    free(sp);
}

static mem_space_t *space_create(const char *name, const char *job)
{
    mem_space_t *sp = calloc(1, sizeof(*sp));
    pthread_condattr_t attr;

    if (!sp)
        return NULL;
    sp->name = strdup(name);
    sp->job = strdup(job);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&sp->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0 || !sp->name || !sp->job) {
        if (rc == 0)
            pthread_cond_destroy(&sp->cond);
        free(sp->name);
        free(sp->job);
        free(sp);
        return NULL;
    }
    wf_kv_init(&sp->kv);
    return sp;
}

/* Finds or creates the space and takes a reference; g_lock held. */
static mem_space_t *space_get(const char *name, const char *job)
{
    mem_space_t *sp;

    for (sp = g_spaces; sp; sp = sp->next)
        if (!strcmp(sp->name, name) && !strcmp(sp->job, job))
            break;
    if (!sp) {
        sp = space_create(name, job);
        if (!sp)
            return NULL;
        sp->next = g_spaces;
        g_spaces = sp;
    }
    sp->refs++;
    return sp;
}

weft_status_t wf_store_mem_open(const char *rest, const char *job_id,
                                const char *desc, void **impl)
{
    if (!*rest) {
        WEFT_WARN(RDV, "store %s: mem:// needs a name, e.g. mem://test",
                  desc);
        return WEFT_ERR_INVALID_ARG;
    }
    mem_store_t *m = calloc(1, sizeof(*m));
    if (!m) {
        WEFT_WARN(RDV, "store %s: out of memory", desc);
        return WEFT_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&g_lock);
    m->space = space_get(rest, job_id);
    pthread_mutex_unlock(&g_lock);
    if (!m->space) {
        WEFT_WARN(RDV, "store %s: out of memory", desc);
        free(m);
        return WEFT_ERR_NO_MEMORY;
    }
    wf_strlcpy(m->desc, desc, sizeof(m->desc));
    *impl = m;
    return WEFT_OK;
}

static void mem_close(void *impl)
{
    mem_store_t *m = impl;

    pthread_mutex_lock(&g_lock);
    if (--m->space->refs == 0) {
        for (mem_space_t **pp = &g_spaces; *pp; pp = &(*pp)->next) {
            if (*pp == m->space) {
                *pp = m->space->next;
                break;
            }
        }
        space_free(m->space);
    }
    pthread_mutex_unlock(&g_lock);
    free(m);
}

/* ---- calls ------------------------------------------------------------- */

static weft_status_t mem_put(mem_store_t *m, const char *key,
                             const void *value, size_t len)
{
    if (wf_kv_put(&m->space->kv, key, strlen(key), value, len, NULL) !=
        WEFT_OK) {
        WEFT_WARN(RDV, "store %s: out of memory setting key '%s'", m->desc,
                  key);
        return WEFT_ERR_NO_MEMORY;
    }
    pthread_cond_broadcast(&m->space->cond);
    return WEFT_OK;
}

static weft_status_t mem_set(void *impl, const char *key, const void *value,
                             size_t len)
{
    mem_store_t *m = impl;

    pthread_mutex_lock(&g_lock);
    weft_status_t st = mem_put(m, key, value, len);
    pthread_mutex_unlock(&g_lock);
    return st;
}

static weft_status_t mem_set_once(void *impl, const char *key,
                                  const void *value, size_t len,
                                  bool *created, void *existing, size_t cap,
                                  size_t *existing_len)
{
    mem_store_t *m = impl;
    weft_status_t st;

    pthread_mutex_lock(&g_lock);
    const wf_kv_entry_t *e = wf_kv_find(&m->space->kv, key, strlen(key));
    if (e) {
        st = wf_store_copy_value(m->desc, key, e->value, e->value_len,
                                 existing, cap, existing_len);
        if (st == WEFT_OK)
            *created = false;
    } else {
        st = mem_put(m, key, value, len);
        if (st == WEFT_OK)
            *created = true;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* Sleeps on the space until woken or the deadline (wf_time_ms) passes;
 * false once it has.  g_lock held. */
static bool mem_sleep(mem_store_t *m, uint64_t deadline)
{
    struct timespec ts;
    uint64_t now = wf_time_ms();

    if (now >= deadline)
        return false;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* At most an hour a sleep, so the arithmetic cannot overflow. */
    uint64_t ms = WF_MIN(deadline - now, (uint64_t)3600 * 1000);
    uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&m->space->cond, &g_lock, &ts);
    return true;
}

static weft_status_t mem_get(void *impl, const char *key, void *value,
                             size_t cap, size_t *len, int64_t timeout_ms)
{
    mem_store_t *m = impl;
    uint64_t deadline = wf_store_deadline(timeout_ms);
    weft_status_t st;

    pthread_mutex_lock(&g_lock);
    for (;;) {
        const wf_kv_entry_t *e = wf_kv_find(&m->space->kv, key, strlen(key));
        if (e) {
            st = wf_store_copy_value(m->desc, key, e->value, e->value_len,
                                     value, cap, len);
            break;
        }
        if (!mem_sleep(m, deadline)) {
            st = WEFT_ERR_TIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (st == WEFT_ERR_TIMEOUT)
        return wf_store_timeout(m->desc, key, timeout_ms);
    return st;
}

static weft_status_t mem_wait(void *impl, const char *const *keys,
                              size_t nkeys, int64_t timeout_ms)
{
    mem_store_t *m = impl;
    uint64_t deadline = wf_store_deadline(timeout_ms);
    size_t next = 0; /* keys never vanish: earlier ones stay present */
    bool timed_out = false;

    pthread_mutex_lock(&g_lock);
    while (next < nkeys && !timed_out) {
        if (wf_kv_find(&m->space->kv, keys[next], strlen(keys[next])))
            next++;
        else
            timed_out = !mem_sleep(m, deadline);
    }
    pthread_mutex_unlock(&g_lock);
    if (timed_out)
        return wf_store_timeout(m->desc, keys[next], timeout_ms);
    return WEFT_OK;
}

static weft_status_t mem_add(void *impl, const char *key, int64_t delta,
                             int64_t *result)
{
    mem_store_t *m = impl;
    int64_t v;

    pthread_mutex_lock(&g_lock);
    weft_status_t st = wf_kv_add(&m->space->kv, key, strlen(key), delta, &v,
                                 NULL);
    if (st == WEFT_OK)
        pthread_cond_broadcast(&m->space->cond);
    pthread_mutex_unlock(&g_lock);
    if (st != WEFT_OK) {
        WEFT_WARN(RDV, "store %s: add on key '%s' failed: %s", m->desc, key,
                  st == WEFT_ERR_NO_MEMORY
                      ? "out of memory"
                      : "value is not an integer or the sum overflows");
        return st;
    }
    *result = v;
    return WEFT_OK;
}

const wf_store_ops_t wf_store_mem_ops = {
    .scheme = "mem",
    .set = mem_set,
    .set_once = mem_set_once,
    .get = mem_get,
    .wait = mem_wait,
    .add = mem_add,
    .local_ip = NULL,
    .close = mem_close,
};
