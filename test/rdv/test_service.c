/*
 * test_service.c - weft-rendezvous as a long-running service: the health
 * probe (weft_server_check and --check), --max-jobs, the key=value log
 * lines of job starts and ends, and a clean exit on SIGTERM with clients
 * still connected.  (A client host that vanishes is dropped by TCP
 * keepalive; that needs a link to cut: test/launchers/netns.sh.)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdv/store.h"
#include "test.h"

/* The whole file, NUL-terminated (fails the test when it is missing). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f != NULL);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* SIGTERM; the server must exit 0 within 5 s. */
static void stop_cleanly(int pid)
{
    int status = -1;
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) != pid; i++)
        usleep(10000);
    if (!WIFEXITED(status)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        wf_test_fail(__FILE__, __LINE__, "no exit within 5 s of SIGTERM");
    }
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

static void log_path(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/tmp/weft-service-%s-%d.log", what, (int)getpid());
}

WF_TEST(rdv_check_api, 30)
{
    weft_server_t srv;
    unsetenv("WEFT_TOKEN");
    unsetenv("WEFT_TOKEN_FILE");
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    char addr[128];
    snprintf(addr, sizeof(addr), "%s", weft_server_address(srv));
    ASSERT_OK(weft_server_check(addr, 2000));
    ASSERT_OK(weft_server_check(addr, 2000)); /* the probe's job is gone */
    ASSERT_OK(weft_server_stop(srv));
    /* Nothing listens there now: a timeout, within the time given. */
    double t0 = wf_test_now_s();
    ASSERT_STATUS(weft_server_check(addr, 500), WEFT_ERR_TIMEOUT);
    ASSERT_TRUE(wf_test_now_s() - t0 < 3.0);
    ASSERT_STATUS(weft_server_check("file:///tmp/x", 500),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_server_check("no-port", 500), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_server_check(NULL, 500), WEFT_ERR_INVALID_ARG);
}

/* A server with its own token: the probe needs it too. */
WF_TEST(rdv_check_token, 30)
{
    weft_server_t srv;
    char addr[128];
    setenv("WEFT_TOKEN", "service-secret", 1);
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    snprintf(addr, sizeof(addr), "%s", weft_server_address(srv));
    ASSERT_OK(weft_server_check(addr, 2000));
    unsetenv("WEFT_TOKEN");
    ASSERT_STATUS(weft_server_check(addr, 2000), WEFT_ERR_AUTH);
    setenv("WEFT_TOKEN", "another-secret", 1);
    ASSERT_STATUS(weft_server_check(addr, 2000), WEFT_ERR_AUTH);
    unsetenv("WEFT_TOKEN");
    ASSERT_OK(weft_server_stop(srv));
}

/* The binary: --check exits 0 and says so; 1 with the cause when nothing
 * serves; 2 for a bad address. */
WF_TEST(rdv_tool_check, 30)
{
    char addr[128], cmd[512], log[128];
    const char *tool = wf_test_tool("weft-rendezvous");
    log_path(log, sizeof(log), "check");
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    snprintf(cmd, sizeof(cmd), "%s --check %s > %s 2>&1", tool, addr, log);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 0);
    ASSERT_STR_CONTAINS(slurp(log), "serves");
    stop_cleanly(pid);
    snprintf(cmd, sizeof(cmd), "%s --check %s --timeout 1 > %s 2>&1", tool,
             addr, log);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 1);
    ASSERT_STR_CONTAINS(slurp(log), "does not serve: operation timed out");
    ASSERT_STR_CONTAINS(slurp(log), "Connection refused");
    snprintf(cmd, sizeof(cmd), "%s --check nonsense > %s 2>&1", tool, log);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof(cmd), "%s --check %s --timeout 0 > %s 2>&1", tool,
             addr, log);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    unlink(log);
}

/* --max-jobs 2: a third job is refused with a message naming the limit,
 * and admitted once a job has ended. */
WF_TEST(rdv_tool_max_jobs, 30)
{
    char addr[128], log[128];
    const char *args[] = {"--max-jobs", "2", NULL};
    wf_store_t *a, *b, *c;
    log_path(log, sizeof(log), "maxjobs");
    int pid = wf_test_start_rendezvous_with(addr, sizeof(addr), args, log);
    ASSERT_OK(wf_store_open(addr, "job-a", NULL, 2000, &a));
    ASSERT_OK(wf_store_set(a, "k", "1", 1));
    ASSERT_OK(wf_store_open(addr, "job-b", NULL, 2000, &b));
    ASSERT_OK(wf_store_set(b, "k", "1", 1));
    weft_status_t st = wf_store_open(addr, "job-c", NULL, 1000, &c);
    if (st == WEFT_OK) /* a lazily connecting store fails on first use */
        st = wf_store_set(c, "k", "1", 1), wf_store_close(c);
    ASSERT_TRUE(st != WEFT_OK);
    wf_store_close(a);
    /* job-a ends with its last client once the server has seen the close,
     * which it does asynchronously: ask again for up to 5 s. */
    st = WEFT_ERR_INTERNAL;
    for (int i = 0; i < 250 && st != WEFT_OK; i++) {
        usleep(20000);
        st = wf_store_open(addr, "job-c", NULL, 2000, &c);
        if (st == WEFT_OK && (st = wf_store_set(c, "k", "1", 1)) != WEFT_OK)
            wf_store_close(c);
    }
    ASSERT_OK(st);
    wf_store_close(b);
    wf_store_close(c);
    stop_cleanly(pid);
    const char *text = slurp(log);
    ASSERT_STR_CONTAINS(text, "cannot create job job-c: the server holds 2 "
                              "jobs, its limit (WEFT_RDV_MAX_JOBS)");
    ASSERT_STR_CONTAINS(text, "max_jobs=2");
    unlink(log);
}

WF_TEST(rdv_tool_max_jobs_args, 10)
{
    char cmd[512];
    const char *tool = wf_test_tool("weft-rendezvous");
    const char *bad[] = {"0", "-3", "x", "2x", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        snprintf(cmd, sizeof(cmd), "%s --listen 127.0.0.1:0 --max-jobs '%s' "
                 "2>/dev/null", tool, bad[i]);
        ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    }
}

/* One key=value line per event, and SIGTERM with a client still connected
 * (its job open) ends the server cleanly, saying what it left. */
WF_TEST(rdv_tool_log_and_sigterm, 30)
{
    char addr[128], log[128], line[192];
    wf_store_t *a, *b;
    log_path(log, sizeof(log), "log");
    unsetenv("WEFT_LOG");
    int pid = wf_test_start_rendezvous_with(addr, sizeof(addr), NULL, log);
    ASSERT_OK(wf_store_open(addr, "job-done", NULL, 2000, &a));
    ASSERT_OK(wf_store_set(a, "k1", "1", 1));
    ASSERT_OK(wf_store_set(a, "k2", "2", 1));
    wf_store_close(a);
    ASSERT_OK(wf_store_open(addr, "job-open", NULL, 2000, &b));
    ASSERT_OK(wf_store_set(b, "k", "1", 1));
    usleep(200000);
    stop_cleanly(pid);
    wf_store_close(b);
    const char *text = slurp(log);
    snprintf(line, sizeof(line), "event=listening address=%s ", addr);
    ASSERT_STR_CONTAINS(text, line);
    ASSERT_STR_CONTAINS(text, "event=job_start job=job-done peer=127.0.0.1:");
    ASSERT_STR_CONTAINS(text, "event=job_end job=job-done keys=2 "
                              "reason=last_client_left jobs=0");
    ASSERT_STR_CONTAINS(text, "event=job_start job=job-open ");
    ASSERT_STR_CONTAINS(text, "event=stopped address=");
    ASSERT_STR_CONTAINS(text, " jobs=1 conns=1");
    ASSERT_STR_CONTAINS(text, "weft-rendezvous stopped (signal 15)");
    unlink(log);
}
