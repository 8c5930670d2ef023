/*
 * test.h - the plain C test harness.
 *
 * WF_TEST(name, timeout_s) { ... } defines a test and registers it.  The
 * runner (runner.c) runs every test in its own child process with its
 * timeout, so a crash or a hang fails one test, not the suite.  Inside a test:
 *   ASSERT_TRUE(cond), ASSERT_EQ(a, b) (integers), ASSERT_OK(status),
 *   ASSERT_STATUS(status, expected), ASSERT_STR_CONTAINS(haystack, needle),
 *   WF_SKIP("reason") to skip (counted as skipped, reason printed).
 * A failed assertion prints file:line and the values and exits the child.
 */
#ifndef WF_TEST_H
#define WF_TEST_H

#define WF_TEST_MAX(a, b) ((a) > (b) ? (a) : (b))

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

typedef void (*wf_test_fn)(void);

void wf_test_register(const char *name, const char *file, int timeout_s,
                      wf_test_fn fn);

#define WF_TEST(name, timeout_s)                                               \
    static void wf_test_body_##name(void);                                     \
    __attribute__((constructor)) static void wf_test_reg_##name(void)          \
    {                                                                          \
        wf_test_register(#name, __FILE__, timeout_s, wf_test_body_##name);     \
    }                                                                          \
    static void wf_test_body_##name(void)

/* Exit code the runner reads as "skipped"; the reason goes to stdout. */
#define WF_TEST_SKIP_CODE 77

#define WF_SKIP(...)                                                           \
    do {                                                                       \
        printf("SKIP: ");                                                      \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
        fflush(stdout);                                                        \
        exit(WF_TEST_SKIP_CODE);                                               \
    } while (0)

void wf_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

#define ASSERT_TRUE(c)                                                         \
    do {                                                                       \
        if (!(c))                                                              \
            wf_test_fail(__FILE__, __LINE__, "assertion failed: %s", #c);      \
    } while (0)

#define ASSERT_EQ(a, b)                                                        \
    do {                                                                       \
        long long wf_a_ = (long long)(a), wf_b_ = (long long)(b);              \
        if (wf_a_ != wf_b_)                                                    \
            wf_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, \
                         wf_a_, wf_b_);                                        \
    } while (0)

#define ASSERT_STATUS(st, expected)                                            \
    do {                                                                       \
        weft_status_t wf_s_ = (st), wf_e_ = (expected);                        \
        if (wf_s_ != wf_e_)                                                    \
            wf_test_fail(__FILE__, __LINE__, "%s: got %s (%s), expected %s",   \
                         #st, weft_status_name(wf_s_), weft_strerror(wf_s_),   \
                         weft_status_name(wf_e_));                             \
    } while (0)

#define ASSERT_OK(st) ASSERT_STATUS(st, WEFT_OK)

#define ASSERT_STR_CONTAINS(hay, needle)                                       \
    do {                                                                       \
        const char *wf_h_ = (hay), *wf_n_ = (needle);                          \
        if (!wf_h_ || !strstr(wf_h_, wf_n_))                                   \
            wf_test_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"", \
                         wf_h_ ? wf_h_ : "(null)", wf_n_);                     \
    } while (0)

/* ---- multi-rank helpers (harness/ranks.c) ------------------------------ */

typedef void (*wf_rank_fn)(int rank, int size, void *arg);

/* Runs fn(rank, size, arg) in `size` threads of this process and joins
 * them.  A failed assertion in any thread fails the test. */
void wf_test_run_threads(int size, wf_rank_fn fn, void *arg);

/* Runs fn(rank, size, arg) in `size` forked processes and waits for them;
 * fails the test if any child fails or crashes. */
void wf_test_run_procs(int size, wf_rank_fn fn, void *arg);

/* Creates a communicator over loopback with extra config overrides (may be
 * NULL): job `job` at `rendezvous` (processes as ranks: a server from
 * wf_test_start_rendezvous), or, _mem, for a thread-rank over the
 * in-memory store "mem://<name>". */
weft_status_t wf_test_comm_rdv(const char *job, const char *rendezvous,
                               int rank, int size, const char *config,
                               weft_comm_t *comm);
weft_status_t wf_test_comm_mem(const char *name, int rank, int size,
                               const char *config, weft_comm_t *comm);

/* A unique name for this test run (pid + counter), for stores and job ids. */
const char *wf_test_unique(const char *base);

/* Sends this process's log lines to a buffer, emptied first (logcap.c);
 * wf_test_log_text() returns it once the ranks are joined. */
void wf_test_log_capture(void);
const char *wf_test_log_text(void);

/* Seconds on the monotonic clock, for tests that time an operation. */
double wf_test_now_s(void);

/* Runs a shell command (stderr merged into stdout); returns its exit code
 * and its output in *out (malloc'd) (cmd.c). */
int wf_test_run_cmd(const char *cmd, char **out);

/* Path of a built tool, e.g. wf_test_tool("weft-rendezvous"). */
const char *wf_test_tool(const char *name);

/* Starts build/bin/weft-rendezvous on 127.0.0.1 with a free port as a child
 * process; writes "127.0.0.1:PORT" into addr.  Returns the child pid. */
int wf_test_start_rendezvous(char *addr, size_t len);
/* The same with extra arguments (NULL-terminated list, may be NULL) and,
 * when log is not NULL, stdout and stderr going to that file. */
int wf_test_start_rendezvous_with(char *addr, size_t len,
                                  const char *const *args, const char *log);
void wf_test_stop_process(int pid);

#endif /* WF_TEST_H */
