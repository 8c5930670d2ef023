/*
 * runner.c - the test runner: every registered test runs in its own child
 * process (and process group) with a timeout; the child's output is kept in
 * a temporary file and shown when the test fails or skips.  The last line is
 * "N passed, N failed, N skipped".
 *
 * Usage: weft-test [--build DIR] [--list] [--verbose] [--check-names]
 *                  [--skip SEL=REASON]... [--exclude SEL]... [SEL...]
 *   A SEL (selector) is a name prefix or a path:
 *     coll_allreduce_      the tests whose names start with it;
 *     coll/  test/coll     the tests registered from that folder of test/
 *                          (any argument with a '/' is a path);
 *     test/coll/test_split.c   the tests of that file.
 *   With no SEL every test runs; a SEL that selects no test is an error
 *   (exit 2), so a stale name fails loudly instead of running nothing.
 *   Tests run in the order of their files, then of their names.
 *   --exclude SEL leaves out the tests SEL selects (not run, not counted).
 *   --skip SEL=REASON reports the tests SEL selects as skipped with REASON
 *   instead of running them (a sanitizer run leaving out what it cannot
 *   check: mk/test.mk says which and why).
 *   --list prints the selected tests' names (with --verbose, each with its
 *   file); --verbose otherwise shows every test's output as it runs.
 *   --check-names checks that every test's name starts with its area's
 *   prefix, the name of the folder of test/ it is registered from and an
 *   underscore (test/coll/... -> coll_), and that no two tests share a
 *   name; it prints each offender with its file and exits 1 (make check
 *   runs it: scripts/check.sh).
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

/* The path of a test's file under test/ ("coll/test_colls.c"): __FILE__
 * as the makefile compiles it ("test/coll/test_colls.c"), or an absolute
 * or ./ path, cut after its last "test/" folder. */
static const char *rel_path(const char *path)
{
    while (strncmp(path, "./", 2) == 0)
        path += 2;
    if (strncmp(path, "test/", 5) == 0)
        return path + 5;
    const char *p = path, *last = NULL;
    while ((p = strstr(p, "/test/")) != NULL)
        last = p++;
    return last ? last + 6 : path;
}

/* The length of a test's area: the first folder of its rel_path ("coll");
 * 0 when the file is not in a folder of test/. */
static size_t area_len(const char *file)
{
    const char *rel = rel_path(file), *slash = strchr(rel, '/');
    return slash ? (size_t)(slash - rel) : 0;
}

/* Whether selector sel (up to n bytes) selects the test: a name prefix, or
 * with a '/' in it (or ending in ".c") a folder or file of test/. */
static bool sel_matches(const test_entry_t *t, const char *sel, size_t n)
{
    if (!memchr(sel, '/', n) && !(n > 2 && strncmp(sel + n - 2, ".c", 2) == 0))
        return strncmp(t->name, sel, n) == 0;
    char path[1024];
    if (n >= sizeof(path))
        return false;
    memcpy(path, sel, n);
    path[n] = 0;
    const char *want = rel_path(path);
    size_t len = strlen(want);
    while (len > 0 && want[len - 1] == '/')
        len--;
    const char *rel = rel_path(t->file);
    return len > 0 && strncmp(rel, want, len) == 0 &&
           (rel[len] == '/' || rel[len] == 0);
}

static bool any_matches(const test_entry_t *t, int n, char **sels)
{
    for (int i = 0; i < n; i++)
        if (sel_matches(t, sels[i], strlen(sels[i])))
            return true;
    return false;
}

/* The reason of the first --skip SEL=REASON selecting the test, or NULL. */
static const char *skip_reason(const test_entry_t *t, int nskips, char **skips)
{
    for (int i = 0; i < nskips; i++) {
        const char *eq = strchr(skips[i], '=');
        size_t n = eq ? (size_t)(eq - skips[i]) : strlen(skips[i]);
        if (sel_matches(t, skips[i], n))
            return eq ? eq + 1 : "skipped by --skip";
    }
    return NULL;
}

/* --check-names: every name starts with "<area>_" and is unique.  Returns
 * the number of offenders, each printed with its file. */
static int check_names(void)
{
    int bad = 0, areas = 0;
    for (int i = 0; i < ntests; i++) {
        const test_entry_t *t = &tests[i];
        size_t n = area_len(t->file);
        const char *area = rel_path(t->file);
        if (i == 0 || n != area_len(tests[i - 1].file) ||
            strncmp(area, rel_path(tests[i - 1].file), n) != 0)
            areas++;
        if (n == 0) {
            printf("check-names: test %s (%s) is not in a folder of test/\n",
                   t->name, t->file);
            bad++;
        } else if (strncmp(t->name, area, n) != 0 || t->name[n] != '_') {
            printf("check-names: test %s (%s) does not start with its "
                   "area's prefix %.*s_\n",
                   t->name, t->file, (int)n, area);
            bad++;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(t->name, tests[j].name) == 0) {
                printf("check-names: test %s is registered twice: %s and %s\n",
                       t->name, tests[j].file, t->file);
                bad++;
            }
    }
    if (bad)
        printf("check-names: %d of %d tests misnamed (a test's name starts "
               "with the name of its folder of test/ and '_')\n",
               bad, ntests);
    else
        printf("check-names: %d tests in %d areas, each named for its area\n",
               ntests, areas);
    return bad;
}

int main(int argc, char **argv)
{
    bool list = false, verbose = false, names = false;
    char *filters[256], *skips[256], *excludes[256];
    int nfilters = 0, nskips = 0, nexcludes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--build") == 0 && i + 1 < argc)
            wf_test_build_dir = argv[++i];
        else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc &&
                 nskips < 256)
            skips[nskips++] = argv[++i];
        else if (strcmp(argv[i], "--exclude") == 0 && i + 1 < argc &&
                 nexcludes < 256)
            excludes[nexcludes++] = argv[++i];
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (strcmp(argv[i], "--check-names") == 0)
            names = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "weft-test: unknown option %s (see the usage in "
                    "test/harness/runner.c)\n", argv[i]);
            return 2;
        } else if (nfilters < 256)
            filters[nfilters++] = argv[i];
    }
    const char *m = getenv("WF_TEST_TIMEOUT_MULT");
    double mult = m && atof(m) > 0 ? atof(m) : 1.0;
    signal(SIGPIPE, SIG_IGN);
    qsort(tests, (size_t)ntests, sizeof(tests[0]), cmp_tests);
    if (names)
        return check_names() ? 1 : 0;
    for (int f = 0; f < nfilters; f++) {
        int hits = 0;
        for (int i = 0; i < ntests && !hits; i++)
            hits = sel_matches(&tests[i], filters[f], strlen(filters[f]));
        if (!hits) {
            fprintf(stderr, "weft-test: '%s' selects no test (--list lists "
                    "them)\n", filters[f]);
            return 2;
        }
    }

    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ntests; i++) {
        if ((nfilters && !any_matches(&tests[i], nfilters, filters)) ||
            any_matches(&tests[i], nexcludes, excludes))
            continue;
        if (list) {
            if (verbose)
                printf("%-56s %s\n", tests[i].name, tests[i].file);
            else
                printf("%s\n", tests[i].name);
            continue;
        }
        const char *why = skip_reason(&tests[i], nskips, skips);
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
