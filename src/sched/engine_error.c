/*
 * engine_error.c - the engine's sticky failure: the first error recorded
 * (here, or adopted from a peer's notice) fails every operation after it.
 * Every part of the engine reports through these and calls nothing back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "sched/engine_impl.h"

/* Records the first failure; returns whether this one was it. */
static bool record_error(wf_engine_t *e, weft_status_t status, int origin,
                         const char *msg)
{
    pthread_mutex_lock(&e->lock);
    bool first = e->error == WEFT_OK;
    if (first) {
        /* Atomic: wf_engine_error reads it without the lock. */
        __atomic_store_n(&e->error, status, __ATOMIC_RELEASE);
        e->error_origin = origin;
        wf_strlcpy(e->error_msg, msg, sizeof(e->error_msg));
    }
    pthread_mutex_unlock(&e->lock);
    if (first && e->board_post)
        e->board_post(e->board_arg, status, origin, msg);
    wf_engine_wake(e);
    return first;
}

void wf_engine_fail(wf_engine_t *e, weft_status_t status, const char *fmt,
                    ...)
{
    char msg[WF_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (record_error(e, status, -1, msg) && status != WEFT_ERR_ABORTED)
        WEFT_WARN(SCHED, "%s", msg);
}

void wf_engine_adopt(wf_engine_t *e, weft_status_t status, int origin,
                     const char *text)
{
    if (record_error(e, status, origin, text))
        WEFT_WARN(SCHED, "failure reported by rank %d: %s", origin, text);
}

weft_status_t wf_engine_error(wf_engine_t *e, const char **message)
{
    /* Every progress round asks; nearly always the answer is no error. */
    if (!message && __atomic_load_n(&e->error, __ATOMIC_ACQUIRE) == WEFT_OK)
        return WEFT_OK;
    pthread_mutex_lock(&e->lock);
    weft_status_t st = e->error;
    if (message)
        *message = st == WEFT_OK ? NULL : e->error_msg;
    pthread_mutex_unlock(&e->lock);
    return st;
}

weft_status_t wf_engine_error_copy(wf_engine_t *e, char *buf, size_t len,
                                   int *origin)
{
    pthread_mutex_lock(&e->lock);
    weft_status_t st = e->error;
    wf_strlcpy(buf, st == WEFT_OK ? "" : e->error_msg, len);
    *origin = st == WEFT_OK ? -1 : e->error_origin;
    pthread_mutex_unlock(&e->lock);
    return st;
}

int wf_failure_text(int rank, int origin, weft_status_t status,
                    const char *msg, char *buf, size_t len)
{
    if (origin >= 0) {
        wf_strlcpy(buf, msg, len);
        return origin;
    }
    size_t used = (size_t)snprintf(buf, len, "rank %d: ", rank);
    if (used < len)
        wf_strlcpy(buf + used, msg[0] ? msg : weft_strerror(status),
                   len - used);
    return rank;
}

int wf_engine_error_origin(wf_engine_t *e)
{
    pthread_mutex_lock(&e->lock);
    int origin = e->error == WEFT_OK ? -1 : e->error_origin;
    pthread_mutex_unlock(&e->lock);
    return origin;
}

void wf_engine_append_error(wf_engine_t *e, const char *text)
{
    pthread_mutex_lock(&e->lock);
    if (e->error != WEFT_OK) {
        size_t used = strlen(e->error_msg);
        wf_strlcpy(e->error_msg + used, text, sizeof(e->error_msg) - used);
    }
    pthread_mutex_unlock(&e->lock);
}
