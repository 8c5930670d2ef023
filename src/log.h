/*
 * log.h - the library's only way to print.
 *
 * WEFT_WARN(subsys, fmt, ...) and friends check the level and subsystem mask
 * before formatting, so a disabled line costs one load and one compare.
 * Lines carry "host:pid:tid [rank] LEVEL subsys: message".  The rank is the
 * calling thread's current rank (wf_log_set_rank), -1 prints as "-".
 *
 * Message style: lowercase, "peer 3 host h1", the observed fact, errno text
 * for every failed system call.  The function that first detects an error
 * logs it once; callers only propagate the status.
 */
#ifndef WF_LOG_H
#define WF_LOG_H

#include "weft.h"

/* Subsystems, filtered by WEFT_LOG_SUBSYS (comma list, or "all"). */
#define WF_LOG_SUBSYS_LIST(X)                                                  \
    X(INIT, "init")                                                            \
    X(COLL, "coll")                                                            \
    X(P2P, "p2p")                                                              \
    X(NET, "net")                                                              \
    X(RDV, "rdv")                                                              \
    X(ENV, "env")                                                              \
    X(SCHED, "sched")                                                          \
    X(TOOL, "tool")

typedef enum {
#define WF_SUBSYS_ENUM_(name, str) WF_SUBSYS_##name,
    WF_LOG_SUBSYS_LIST(WF_SUBSYS_ENUM_)
#undef WF_SUBSYS_ENUM_
    WF_SUBSYS_COUNT
} wf_subsys_t;

/* Current filter: a line is printed when level <= wf_log_level and the
 * subsystem's bit is in wf_log_mask.  Written by wf_log_setup, and again
 * by a communicator created with a WEFT_LOG override while other threads
 * log: read and written atomically (relaxed: a line logged under the old
 * filter is harmless). */
extern int wf_log_level;
extern unsigned wf_log_mask;

/* Reads WEFT_LOG, WEFT_LOG_SUBSYS and WEFT_LOG_FILE once (thread-safe,
 * idempotent).  Called by the macros, so no explicit call is needed. */
void wf_log_setup(void);
/* Re-reads the logging knobs; for tests and for weft_comm_create with a
 * `config` override of WEFT_LOG. */
void wf_log_reconfigure(const char *level, const char *subsys);

void wf_log_emit(weft_log_level_t level, wf_subsys_t subsys, const char *fmt,
                 ...) __attribute__((cold, format(printf, 3, 4)));
/* A warning or an error whole: setup, filter and print out of line, in a
 * function marked cold.  The compiler then takes every block that reports
 * bad input as unlikely and moves it out of the function's hot part: the
 * code run on every call stays dense (a small call's cost here is mostly
 * instruction-cache misses after each system call:
 * bench/results/2026-11-29-small-messages-third-pass.md). */
void wf_log_report(weft_log_level_t level, wf_subsys_t subsys,
                   const char *fmt, ...)
    __attribute__((cold, format(printf, 3, 4)));
/* Nonzero once wf_log_setup has run (acquire). */
extern int wf_log_ready;

/* The rank printed on this thread's lines; -1 for none. */
void wf_log_set_rank(int rank);
int wf_log_get_rank(void);

const char *wf_log_subsys_name(wf_subsys_t subsys);
/* Parses "warn", "info", ... ; returns -1 when unknown. */
int wf_log_level_parse(const char *text);

#define WF_LOG_ENABLED_(lvl, ss)                                               \
    ((lvl) <= __atomic_load_n(&wf_log_level, __ATOMIC_RELAXED) &&             \
     (__atomic_load_n(&wf_log_mask, __ATOMIC_RELAXED) & (1u << (ss))))

/* The levels below warn: arguments are evaluated only when the line is
 * printed (a trace line on a hot path costs a load and a test). */
#define WF_LOG_(lvl, ss, ...)                                                  \
    do {                                                                       \
        if (!__atomic_load_n(&wf_log_ready, __ATOMIC_ACQUIRE))                 \
            wf_log_setup();                                                    \
        if (WF_LOG_ENABLED_(lvl, WF_SUBSYS_##ss))                              \
            wf_log_emit(lvl, WF_SUBSYS_##ss, __VA_ARGS__);                     \
    } while (0)

#define WEFT_ERROR(ss, ...) wf_log_report(WEFT_LOG_ERROR, WF_SUBSYS_##ss, __VA_ARGS__)
#define WEFT_WARN(ss, ...) wf_log_report(WEFT_LOG_WARN, WF_SUBSYS_##ss, __VA_ARGS__)
#define WEFT_INFO(ss, ...) WF_LOG_(WEFT_LOG_INFO, ss, __VA_ARGS__)
#define WEFT_DEBUG(ss, ...) WF_LOG_(WEFT_LOG_DEBUG, ss, __VA_ARGS__)
#define WEFT_TRACE(ss, ...) WF_LOG_(WEFT_LOG_TRACE, ss, __VA_ARGS__)

/* Warn only the first time this line is reached in the process. */
#define WEFT_WARN_ONCE(ss, ...)                                                \
    do {                                                                       \
        static int wf_once_;                                                   \
        if (!__atomic_exchange_n(&wf_once_, 1, __ATOMIC_RELAXED))              \
            WEFT_WARN(ss, __VA_ARGS__);                                        \
    } while (0)

#endif /* WF_LOG_H */
