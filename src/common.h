/*
 * common.h - helpers every module may use: status propagation, time,
 * allocation, small string utilities.  Depends only on weft.h and log.h.
 */
#ifndef WF_COMMON_H
#define WF_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "log.h"
#include "weft.h"

/* Propagate a failing status to the caller (the callee already logged). */
#define WEFT_CHECK(call)                                                       \
    do {                                                                       \
        weft_status_t wf_st_ = (call);                                         \
        if (wf_st_ < 0)                                                        \
            return wf_st_;                                                     \
    } while (0)

/* Store a failing status in `status` and jump to the cleanup label. */
#define WEFT_CHECK_GOTO(call, status, label)                                   \
    do {                                                                       \
        (status) = (call);                                                     \
        if ((status) < 0)                                                      \
            goto label;                                                        \
    } while (0)

#define WF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WF_MAX(a, b) ((a) > (b) ? (a) : (b))
#define WF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A hint inside a polling loop that this core is waiting (x86 PAUSE):
 * less power, and a sibling hyperthread gets the pipeline. */
static inline void wf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
#define WF_UNUSED __attribute__((unused))
#define WF_LIKELY(x) __builtin_expect(!!(x), 1)
#define WF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t wf_time_ns(void);
static inline uint64_t wf_time_ms(void) { return wf_time_ns() / 1000000u; }

/* Deadline helpers: a deadline is an absolute wf_time_ms() value; 0 means
 * none. */
static inline uint64_t wf_deadline_from(uint64_t now_ms, int64_t timeout_ms)
{
    return timeout_ms <= 0 ? 0 : now_ms + (uint64_t)timeout_ms;
}
static inline uint64_t wf_deadline_after(int64_t timeout_ms)
{
    return timeout_ms <= 0 ? 0 : wf_deadline_from(wf_time_ms(), timeout_ms);
}
static inline bool wf_deadline_passed(uint64_t deadline)
{
    return deadline != 0 && wf_time_ms() >= deadline;
}
/* CLOCK_MONOTONIC_COARSE in milliseconds: the same timeline as
 * wf_time_ms(), read in a few nanoseconds where a VM's clock takes tens,
 * but up to a tick (wf_coarse_tick_ms) behind it.  For the per-call
 * bookkeeping that may be late by that much (history, stall checks). */
uint64_t wf_time_ms_coarse(void);
/* The coarse clock's resolution, rounded up to whole milliseconds. */
uint64_t wf_coarse_tick_ms(void);
/* wf_deadline_passed's answer, reading the precise clock only within a
 * tick of the deadline (never early; late only while the coarse clock
 * lags by more than its tick).  For checks made on every progress round. */
static inline bool wf_deadline_passed_cheap(uint64_t deadline)
{
    return deadline != 0 &&
           wf_time_ms_coarse() + wf_coarse_tick_ms() >= deadline &&
           wf_time_ms() >= deadline;
}
/* Milliseconds left before `deadline`, capped at `cap_ms` (for poll). */
int wf_deadline_remaining_ms(uint64_t deadline, int cap_ms);
/* The same by the coarse clock: up to a tick more than is left.  For a
 * poll timeout computed on every progress round, where the deadline
 * itself is checked by wf_deadline_passed_cheap. */
int wf_deadline_remaining_ms_cheap(uint64_t deadline, int cap_ms);

/* 64-bit FNV-1a hash of a string; used to turn job ids into wire keys. */
uint64_t wf_hash64(const void *data, size_t len);

/* The host name of this machine (cached, never NULL). */
const char *wf_hostname(void);
/* Identifies this machine (hostname and boot id): equal for the ranks that
 * share it. */
uint64_t wf_node_key(void);
/* wf_node_key and the network namespace: equal for the ranks that meet in
 * shared memory (the shared-memory transport's sockets and the node
 * collectives' segment are reached within one namespace, which is also
 * what lets tests' namespaces stand in for hosts). */
uint64_t wf_shared_memory_key(void);
/* CPUs this process may run on (its affinity mask). */
int wf_online_cores(void);
/* Sleeps ms milliseconds (a signal may cut it short). */
void wf_sleep_ms(uint64_t ms);

/* CLOCK_REALTIME `ms` from now, for pthread_cond_timedwait and
 * pthread_timedjoin_np, which take absolute wall-clock times. */
struct timespec wf_realtime_after_ms(int64_t ms);

/* Makes room for one more element in a growable array of `elem`-byte
 * elements holding `n` of *cap (doubling, from 16).  False when out of
 * memory (the array is unchanged). */
bool wf_array_room(void **array, uint32_t *cap, uint32_t n, size_t elem);

/* strerror_r into a per-thread buffer. */
const char *wf_errno_str(int err);

/* Safe string copy; always terminates; returns false on truncation. */
bool wf_strlcpy(char *dst, const char *src, size_t size);

/* Parses "HOST:PORT", "[V6ADDR]:PORT" into host and port; false when
 * malformed. */
bool wf_parse_hostport(const char *text, char *host, size_t host_size,
                       int *port);

/* Edit distance, used for did-you-mean suggestions. */
int wf_edit_distance(const char *a, const char *b);

#endif /* WF_COMMON_H */
