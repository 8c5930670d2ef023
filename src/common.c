/*
 * common.c - small helpers shared by every module (time, hashing, host
 * name, errno text, host:port parsing, edit distance).
 */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t wf_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t wf_time_ms_coarse(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t wf_coarse_tick_ms(void)
{
    /* Every thread computes the same value: a racing first call only
     * stores it twice. */
    static uint64_t tick_ms;
    uint64_t t = __atomic_load_n(&tick_ms, __ATOMIC_RELAXED);
    if (WF_LIKELY(t))
        return t;
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0)
        res = (struct timespec){.tv_sec = 1}; /* unknown: assume a coarse one */
    uint64_t ns = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
    t = (ns + 999999u) / 1000000u + 1; /* +1: ms truncation of both reads */
    __atomic_store_n(&tick_ms, t, __ATOMIC_RELAXED);
    return t;
}

/* Milliseconds from `now` to `deadline`, capped at cap_ms (0 passed). */
static int remaining_from(uint64_t now, uint64_t deadline, int cap_ms)
{
    if (deadline == 0)
        return cap_ms;
    if (now >= deadline)
        return 0;
    uint64_t left = deadline - now;
    return cap_ms >= 0 && left > (uint64_t)cap_ms ? cap_ms : (int)left;
}

int wf_deadline_remaining_ms(uint64_t deadline, int cap_ms)
{
    return remaining_from(deadline ? wf_time_ms() : 0, deadline, cap_ms);
}

int wf_deadline_remaining_ms_cheap(uint64_t deadline, int cap_ms)
{
    return remaining_from(deadline ? wf_time_ms_coarse() : 0, deadline,
                          cap_ms);
}

uint64_t wf_hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static char hostname_buf[256];

static void hostname_init(void)
{
    if (gethostname(hostname_buf, sizeof(hostname_buf)) != 0)
        strcpy(hostname_buf, "unknown-host");
    hostname_buf[sizeof(hostname_buf) - 1] = '\0';
}

const char *wf_hostname(void)
{
    /* Written once: threads that raced to fill the buffer while another
     * read it were a data race (TSan, coll_matrix_threads_n13), even with
     * identical bytes. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, hostname_init);
    return hostname_buf;
}

uint64_t wf_node_key(void)
{
    /* The hostname alone can repeat (containers, cloned VMs) and the boot
     * id alone changes nothing between containers of one kernel, which do
     * share the machine: together they name it. */
    char id[256 + 64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(id, 64, f))
            id[0] = '\0';
        fclose(f);
    }
    size_t used = strlen(id);
    wf_strlcpy(id + used, wf_hostname(), sizeof(id) - used);
    return wf_hash64(id, strlen(id));
}

uint64_t wf_shared_memory_key(void)
{
    char id[96];
    struct stat st;
    unsigned long long ns = stat("/proc/self/ns/net", &st) == 0
                                ? (unsigned long long)st.st_ino
                                : 0;
    snprintf(id, sizeof(id), "%016llx/%llx",
             (unsigned long long)wf_node_key(), ns);
    return wf_hash64(id, strlen(id));
}

struct timespec wf_realtime_after_ms(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec +
                  (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    return ts;
}

void wf_sleep_ms(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int wf_online_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

const char *wf_errno_str(int err)
{
    static __thread char buf[128];
    /* GNU strerror_r may return a static string instead of filling buf. */
    const char *s = strerror_r(err, buf, sizeof(buf));
    return s ? s : "unknown error";
}

bool wf_strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return false;
    size_t len = strnlen(src, size);
    if (len == size) {
        memcpy(dst, src, size - 1);
        dst[size - 1] = '\0';
        return false;
    }
    memcpy(dst, src, len + 1);
    return true;
}

bool wf_parse_hostport(const char *text, char *host, size_t host_size,
                       int *port)
{
    const char *colon;
    size_t host_len;
    if (!text || !*text)
        return false;
    if (text[0] == '[') { /* [v6addr]:port */
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return false;
        host_len = (size_t)(close - text - 1);
        text++;
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || strchr(text, ':') != colon) /* bare v6 is ambiguous */
            return false;
        host_len = (size_t)(colon - text);
    }
    if (host_len == 0 || host_len >= host_size)
        return false;
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
        return false;
    memcpy(host, text, host_len);
    host[host_len] = '\0';
    *port = (int)p;
    return true;
}

int wf_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return INT_MAX;
    int row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

bool wf_array_room(void **array, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return true;
    uint32_t want = *cap ? *cap * 2 : 16;
    void *p = realloc(*array, (size_t)want * elem);
    if (!p)
        return false;
    *array = p;
    *cap = want;
    return true;
}
