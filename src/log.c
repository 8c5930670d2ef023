/*
 * log.c - formatting and delivery of log lines.
 *
 * The filter (level, subsystem mask) is read from WEFT_LOG / WEFT_LOG_SUBSYS
 * once per process; lines go to the installed logger, or to WEFT_LOG_FILE
 * (with %h and %p expanded), or to stderr.
 */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "config.h"

int wf_log_level = WEFT_LOG_WARN;
unsigned wf_log_mask = ~0u;

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_log_fn log_fn;
static void *log_ctx;
static FILE *log_file;
static __thread int log_rank = -1;

static const char *const subsys_names[] = {
#define WF_SUBSYS_NAME_(name, str) str,
    WF_LOG_SUBSYS_LIST(WF_SUBSYS_NAME_)
#undef WF_SUBSYS_NAME_
};

static const char *const level_names[] = {"none", "error", "warn",
                                          "info", "debug", "trace"};

int wf_log_level_parse(const char *text)
{
    for (size_t i = 0; i < WF_ARRAY_LEN(level_names); i++)
        if (strcasecmp(text, level_names[i]) == 0)
            return (int)i;
    if (strcasecmp(text, "warning") == 0)
        return WEFT_LOG_WARN;
    return -1;
}

const char *wf_log_subsys_name(wf_subsys_t subsys)
{
    return subsys < WF_SUBSYS_COUNT ? subsys_names[subsys] : "?";
}

static unsigned parse_subsys(const char *text)
{
    char buf[256];
    unsigned mask = 0;
    wf_strlcpy(buf, text, sizeof(buf));
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(tok, "all") == 0)
            return ~0u;
        for (int i = 0; i < WF_SUBSYS_COUNT; i++)
            if (strcasecmp(tok, subsys_names[i]) == 0)
                mask |= 1u << i;
    }
    return mask;
}

/* "%h" -> host name, "%p" -> pid. */
static void expand_path(const char *pattern, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
            int n = p[1] == 'h'
                        ? snprintf(out + o, len - o, "%s", wf_hostname())
                        : snprintf(out + o, len - o, "%d", (int)getpid());
            o += n > 0 ? (size_t)n : 0;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

void wf_log_reconfigure(const char *level, const char *subsys)
{
    if (level && *level) {
        int lvl = wf_log_level_parse(level);
        if (lvl >= 0)
            __atomic_store_n(&wf_log_level, lvl, __ATOMIC_RELAXED);
    }
    if (subsys && *subsys)
        __atomic_store_n(&wf_log_mask, parse_subsys(subsys),
                         __ATOMIC_RELAXED);
}

static void log_setup_once(void)
{
    const char *file = wf_env_get("WEFT_LOG_FILE");
    const char *level = wf_env_get("WEFT_LOG");
    wf_log_reconfigure(level, wf_env_get("WEFT_LOG_SUBSYS"));
    if (file && *file) {
        char path[512];
        expand_path(file, path, sizeof(path));
        log_file = fopen(path, "a");
    }
    if (level && *level && wf_log_level_parse(level) < 0)
        fprintf(log_file ? log_file : stderr,
                "weft: WEFT_LOG=%s is not a level (none error warn info "
                "debug trace); using warn\n",
                level);
}

int wf_log_ready;

void wf_log_setup(void)
{
    pthread_once(&log_once, log_setup_once);
    __atomic_store_n(&wf_log_ready, 1, __ATOMIC_RELEASE);
}

void wf_log_set_rank(int rank) { log_rank = rank; }
int wf_log_get_rank(void) { return log_rank; }

static void log_vemit(weft_log_level_t level, wf_subsys_t subsys,
                      const char *fmt, va_list ap)
{
    int saved_errno = errno;
    char line[2048];
    char rank[16] = "-";
    if (log_rank >= 0)
        snprintf(rank, sizeof(rank), "%d", log_rank);
    int n = snprintf(line, sizeof(line), "%s:%d:%ld [%s] weft %s %s: ",
                     wf_hostname(), (int)getpid(), (long)syscall(SYS_gettid),
                     rank, level <= WEFT_LOG_TRACE ? level_names[level] : "?",
                     wf_log_subsys_name(subsys));
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);

    pthread_mutex_lock(&log_lock);
    if (log_fn) {
        log_fn(log_ctx, level, wf_log_subsys_name(subsys), line);
    } else {
        FILE *out = log_file ? log_file : stderr;
        fprintf(out, "%s\n", line);
        fflush(out);
    }
    pthread_mutex_unlock(&log_lock);
    errno = saved_errno;
}

void wf_log_emit(weft_log_level_t level, wf_subsys_t subsys, const char *fmt,
                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vemit(level, subsys, fmt, ap);
    va_end(ap);
}

void wf_log_report(weft_log_level_t level, wf_subsys_t subsys,
                   const char *fmt, ...)
{
    if (!__atomic_load_n(&wf_log_ready, __ATOMIC_ACQUIRE)) {
        int saved_errno = errno; /* the setup may open the log file */
        wf_log_setup();
        errno = saved_errno;
    }
    if (!WF_LOG_ENABLED_((int)level, subsys))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vemit(level, subsys, fmt, ap);
    va_end(ap);
}

WEFT_API weft_status_t weft_set_logger(weft_log_fn fn, void *ctx)
{
    wf_log_setup();
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_ctx = ctx;
    pthread_mutex_unlock(&log_lock);
    return WEFT_OK;
}
