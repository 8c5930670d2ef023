/*
 * runner.c - the test runner: every registered test runs in its own child
 * process (and process group) with a timeout; the child's output is kept in
 * a temporary file and shown when the test fails or skips.  The last line is
 * "N passed, N failed, N skipped".
 *
 * Usage: weft-test [--build DIR] [--list] [--verbose]
 *                  [--skip PREFIX=REASON]... [PREFIX...]
 *   PREFIX selects tests whose name starts with it (all when none given).
 *   --skip reports the tests starting with PREFIX as skipped with REASON
 *   instead of running them (a sanitizer run leaving out what it cannot
 *   check: mk/test.mk says which and why).
 *   WF_TEST_TIMEOUT_MULT multiplies every timeout (slow machines, sanitizers).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS 2048

typedef struct {
    const char *name;
    const char *file;
    int timeout_s;
    wf_test_fn fn;
} test_entry_t;

static test_entry_t tests[MAX_TESTS];
static int ntests;
const char *wf_test_build_dir = "build";

void wf_test_register(const char *name, const char *file, int timeout_s,
                      wf_test_fn fn)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests (raise MAX_TESTS)\n");
        exit(2);
    }
    tests[ntests++] = (test_entry_t){name, file, timeout_s, fn};
}

void wf_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

static int cmp_tests(const void *a, const void *b)
{
    const test_entry_t *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_tail(FILE *log, long max)
{
    fseek(log, 0, SEEK_END);
    long size = ftell(log);
    fseek(log, size > max ? size - max : 0, SEEK_SET);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), log)) > 0)
        fwrite(buf, 1, n, stdout);
}

static void print_skip_reason(FILE *log)
{
    char line[1024];
    rewind(log);
    while (fgets(line, sizeof(line), log))
        if (strncmp(line, "SKIP: ", 6) == 0) {
            printf("      %s", line + 6);
            return;
        }
    printf("      (no reason given)\n");
}

/* Runs one test in a child; returns 0 pass, 1 fail, 2 skip. */
static int run_one(const test_entry_t *t, double mult, bool verbose)
{
    FILE *log = tmpfile();
    if (!log) {
        perror("tmpfile");
        return 1;
    }
    fflush(stdout);
    double start = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (!verbose) {
            dup2(fileno(log), STDOUT_FILENO);
            dup2(fileno(log), STDERR_FILENO);
        }
        t->fn();
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    setpgid(pid, pid);
    double limit = t->timeout_s * mult;
    int status = 0;
    bool timed_out = false;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() - start > limit) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = true;
            break;
        }
        usleep(2000);
    }
    kill(-pid, SIGKILL); /* leftovers of the test: helpers, servers */
    double took = now_s() - start;
    int result;
    if (timed_out) {
        printf("FAIL  %s (timed out after %.0f s)\n", t->name, limit);
        result = 1;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("ok    %s (%.2f s)\n", t->name, took);
        result = 0;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == WF_TEST_SKIP_CODE) {
        printf("skip  %s\n", t->name);
        print_skip_reason(log);
        result = 2;
    } else {
        if (WIFSIGNALED(status))
            printf("FAIL  %s (signal %d: %s)\n", t->name, WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
        else
            printf("FAIL  %s (exit %d)\n", t->name, WEXITSTATUS(status));
        result = 1;
    }
    if (result == 1) {
        printf("----- output of %s (%s) -----\n", t->name, t->file);
        print_tail(log, 6000);
        printf("----- end of %s -----\n", t->name);
    }
    fclose(log);
    return result;
}

static bool selected(const char *name, int nfilters, char **filters)
{
    if (nfilters == 0)
        return true;
    for (int i = 0; i < nfilters; i++)
        if (strncmp(name, filters[i], strlen(filters[i])) == 0)
            return true;
    return false;
}

/* The reason of the first --skip PREFIX=REASON matching name, or NULL. */
static const char *skip_reason(const char *name, int nskips, char **skips)
{
    for (int i = 0; i < nskips; i++) {
        const char *eq = strchr(skips[i], '=');
        size_t n = eq ? (size_t)(eq - skips[i]) : strlen(skips[i]);
        if (strncmp(name, skips[i], n) == 0)
            return eq ? eq + 1 : "skipped by --skip";
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bool list = false, verbose = false;
    char *filters[256], *skips[256];
    int nfilters = 0, nskips = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--build") == 0 && i + 1 < argc)
            wf_test_build_dir = argv[++i];
        else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc &&
                 nskips < 256)
            skips[nskips++] = argv[++i];
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (nfilters < 256)
            filters[nfilters++] = argv[i];
    }
    const char *m = getenv("WF_TEST_TIMEOUT_MULT");
    double mult = m && atof(m) > 0 ? atof(m) : 1.0;
    signal(SIGPIPE, SIG_IGN);
    qsort(tests, (size_t)ntests, sizeof(tests[0]), cmp_tests);

    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ntests; i++) {
        if (!selected(tests[i].name, nfilters, filters))
            continue;
        if (list) {
            printf("%s\n", tests[i].name);
            continue;
        }
        const char *why = skip_reason(tests[i].name, nskips, skips);
        if (why) {
            printf("skip  %s\n      %s\n", tests[i].name, why);
            fflush(stdout);
            skipped++;
            continue;
        }
        int r = run_one(&tests[i], mult, verbose);
        passed += r == 0;
        failed += r == 1;
        skipped += r == 2;
    }
    if (list)
        return 0;
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
