/*
 * timeline.c - the process's timeline file (timeline.h).
 *
 * The file is Chrome's trace format in its JSON array form: "[", then one
 * event per line, then "]" when the timeline stops (at weft_timeline_stop
 * or at exit).  The array form is what lets the file be read after a
 * crash: Chrome and Perfetto accept it without its closing bracket, and
 * weft-timeline merge repairs it.  Each process is one track group ("pid"
 * is its rank), each communicator one track in it ("tid").
 *
 * Timestamps are the monotonic clock moved onto the wall clock once, when
 * the timeline starts, so that files of ranks on other machines line up as
 * well as their clocks agree.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "plan/coll.h"
#include "reduce/reduce.h"
#include "timeline.h"

/* Records the ring holds: at a million operations a second, the writer's
 * interval's worth; beyond that they are counted as dropped. */
#define WF_TIMELINE_RING 32768
/* How often the writer looks at the ring when nobody hurries it. */
#define WF_TIMELINE_WRITE_MS 100

int wf_timeline_on;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the writer: work, a flush, or stop */
    pthread_cond_t done; /* flushers: flushed up to their request */
    wf_timeline_rec_t *ring;
    uint64_t head, tail; /* records ever queued / taken */
    uint64_t dropped;    /* since the writer last said so */
    uint64_t flush_asked, flush_done;
    bool running, stop;
    pthread_t writer;
    FILE *file;
    char path[1024];
    int pid_track;       /* "pid" of the events: this process's rank */
    int64_t wall_offset_ns;
    uint32_t *named;     /* communicators whose track has its name */
    size_t nnamed, named_cap;
    bool first_event;
    bool fork_handlers;
} tl = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .first_event = true,
};

static int process_rank = -1; /* the first communicator's rank, for %r */
static uint32_t next_comm_id;

uint32_t wf_timeline_comm_id(void)
{
    return __atomic_add_fetch(&next_comm_id, 1, __ATOMIC_RELAXED);
}

/* ---- formatting (the writer thread only) --------------------------------- */

/* Microseconds of the wall clock with their nanoseconds, as Chrome's
 * "ts" takes them ("1796655797225461.250"), exact where a double is not. */
static void wall_us(uint64_t mono_ns, char *buf, size_t len)
{
    int64_t ns = (int64_t)mono_ns + tl.wall_offset_ns;
    snprintf(buf, len, "%lld.%03lld", (long long)(ns / 1000),
             (long long)(ns % 1000));
}

static void emit(const char *event)
{
    fputs(tl.first_event ? "" : ",\n", tl.file);
    fputs(event, tl.file);
    tl.first_event = false;
}

static void name_track(const wf_timeline_rec_t *r)
{
    for (size_t i = 0; i < tl.nnamed; i++)
        if (tl.named[i] == r->comm_id)
            return;
    if (tl.nnamed == tl.named_cap) {
        size_t cap = tl.named_cap ? 2 * tl.named_cap : 16;
        uint32_t *p = realloc(tl.named, cap * sizeof(*p));
        if (!p)
            return; /* the track stays unnamed: its events still show */
        tl.named = p;
        tl.named_cap = cap;
    }
    tl.named[tl.nnamed++] = r->comm_id;
    char ev[256];
    snprintf(ev, sizeof(ev), "{\"name\":\"thread_name\",\"ph\":\"M\","
             "\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"communicator %u: "
             "rank %d of %d\"}}", tl.pid_track, r->comm_id, r->comm_id,
             r->rank, r->size);
    emit(ev);
    snprintf(ev, sizeof(ev), "{\"name\":\"thread_sort_index\",\"ph\":\"M\","
             "\"pid\":%d,\"tid\":%u,\"args\":{\"sort_index\":%u}}",
             tl.pid_track, r->comm_id, r->comm_id);
    emit(ev);
}

static void write_record(const wf_timeline_rec_t *r)
{
    name_track(r);
    uint64_t dur = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
    char waited[96] = "";
    if (r->waited_on >= 0)
        snprintf(waited, sizeof(waited), ",\"waited_on\":%d,\"waited_us\":"
                 "%.3f", r->waited_on, (double)r->waited_ns / 1000.0);
    char ev[768], ts[32];
    wall_us(r->start_ns, ts, sizeof(ts));
    snprintf(ev, sizeof(ev), "{\"name\":\"%s\",\"cat\":\"weft\",\"ph\":\"X\","
             "\"pid\":%d,\"tid\":%u,\"ts\":%s,\"dur\":%.3f,\"args\":{"
             "\"op\":%llu,\"bytes\":%llu,\"dtype\":\"%s\",\"algorithm\":"
             "\"%s\",\"status\":\"%s\",\"rank\":%d,\"size\":%d%s}}",
             wf_coll_name((wf_coll_t)r->coll), tl.pid_track, r->comm_id, ts,
             (double)dur / 1000.0,
             (unsigned long long)r->seq, (unsigned long long)r->bytes,
             wf_dtype_name((weft_dtype_t)r->dtype), r->algo ? r->algo : "?",
             weft_status_name((weft_status_t)r->status), r->rank, r->size,
             waited);
    emit(ev);
}

static void write_dropped(uint64_t n)
{
    char ev[256], ts[32];
    wall_us(wf_time_ns(), ts, sizeof(ts));
    snprintf(ev, sizeof(ev), "{\"name\":\"timeline dropped %llu operations "
             "(the writer fell behind)\",\"cat\":\"weft\",\"ph\":\"i\","
             "\"s\":\"p\",\"pid\":%d,\"tid\":0,\"ts\":%s}",
             (unsigned long long)n, tl.pid_track, ts);
    emit(ev);
}

/* ---- the writer ---------------------------------------------------------- */

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

static void *writer_main(void *arg)
{
    (void)arg;
    enum { BATCH = 1024 };
    wf_timeline_rec_t *batch = malloc(BATCH * sizeof(*batch));
    pthread_mutex_lock(&tl.lock);
    for (;;) {
        uint64_t queued = tl.head - tl.tail;
        if (queued == 0 && tl.flush_done < tl.flush_asked) {
            uint64_t asked = tl.flush_asked;
            pthread_mutex_unlock(&tl.lock);
            fflush(tl.file);
            pthread_mutex_lock(&tl.lock);
            tl.flush_done = asked;
            pthread_cond_broadcast(&tl.done);
            continue;
        }
        if (queued == 0 && tl.stop)
            break;
        if (queued < WF_TIMELINE_RING / 4 && !tl.stop &&
            tl.flush_done == tl.flush_asked) {
            struct timespec ts;
            deadline_in(&ts, WF_TIMELINE_WRITE_MS);
            pthread_cond_timedwait(&tl.wake, &tl.lock, &ts);
            queued = tl.head - tl.tail;
        }
        size_t n = 0;
        while (batch && n < BATCH && tl.tail < tl.head)
            batch[n++] = tl.ring[tl.tail++ % WF_TIMELINE_RING];
        uint64_t dropped = tl.dropped;
        tl.dropped = 0;
        pthread_mutex_unlock(&tl.lock);
        for (size_t i = 0; i < n; i++)
            write_record(&batch[i]);
        if (dropped)
            write_dropped(dropped);
        pthread_mutex_lock(&tl.lock);
        if (!batch) /* out of memory: records are dropped, not kept */
            tl.tail = tl.head;
    }
    pthread_mutex_unlock(&tl.lock);
    free(batch);
    return NULL;
}

/* ---- starting and stopping ----------------------------------------------- */

/* "%r" -> process_rank (or "pid<pid>" before any communicator), "%p" ->
 * pid, "%h" -> host name. */
static bool expand(const char *pattern, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p; p++) {
        int n = 0;
        if (p[0] == '%' && p[1] == 'r')
            n = process_rank >= 0
                    ? snprintf(out + o, len - o, "%d", process_rank)
                    : snprintf(out + o, len - o, "pid%d", (int)getpid());
        else if (p[0] == '%' && p[1] == 'p')
            n = snprintf(out + o, len - o, "%d", (int)getpid());
        else if (p[0] == '%' && p[1] == 'h')
            n = snprintf(out + o, len - o, "%s", wf_hostname());
        else
            n = snprintf(out + o, len - o, "%c", *p);
        if (n < 0 || (size_t)n >= len - o)
            return false;
        o += (size_t)n;
        if (p[0] == '%' && (p[1] == 'r' || p[1] == 'p' || p[1] == 'h'))
            p++;
    }
    return true;
}

/* At exit or when the library is unloaded: the file ends as valid JSON. */
__attribute__((destructor)) static void stop_at_exit(void)
{
    weft_timeline_stop();
}

/* A forked child has the parent's timeline state but not its writer
 * thread, and its FILE buffer holds the parent's unwritten bytes: it
 * starts with no timeline of its own (its first communicator may start
 * one), and never writes to the parent's file. */
static void before_fork(void) { pthread_mutex_lock(&tl.lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&tl.lock); }
static void after_fork_child(void)
{
    __atomic_store_n(&wf_timeline_on, 0, __ATOMIC_RELAXED);
    tl.running = false;
    tl.file = NULL; /* not closed: that would write the parent's buffer */
    tl.named = NULL;
    tl.nnamed = tl.named_cap = 0;
    process_rank = -1;
    pthread_mutex_unlock(&tl.lock);
}

static weft_status_t start_locked(const char *pattern)
{
    if (tl.running) {
        WEFT_WARN(INIT, "weft_timeline_start(%s): a timeline is already "
                  "being written to %s; stop it first", pattern, tl.path);
        return WEFT_ERR_INVALID_USAGE;
    }
    if (!expand(pattern, tl.path, sizeof(tl.path))) {
        WEFT_WARN(INIT, "timeline: the path %s is too long", pattern);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!tl.ring && !(tl.ring = malloc(WF_TIMELINE_RING * sizeof(*tl.ring))))
        return WEFT_ERR_NO_MEMORY;
    tl.file = fopen(tl.path, "w");
    if (!tl.file) {
        WEFT_WARN(INIT, "timeline: cannot write %s: %s", tl.path,
                  strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    struct timespec wall, mono;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    tl.wall_offset_ns = ((int64_t)wall.tv_sec - (int64_t)mono.tv_sec) *
                            1000000000LL +
                        (wall.tv_nsec - mono.tv_nsec);
    tl.pid_track = process_rank >= 0 ? process_rank : (int)getpid();
    tl.head = tl.tail = tl.dropped = 0;
    tl.flush_asked = tl.flush_done = 0;
    tl.nnamed = 0;
    tl.stop = false;
    tl.first_event = true;
    fputs("[\n", tl.file);
    char ev[512];
    snprintf(ev, sizeof(ev), "{\"name\":\"process_name\",\"ph\":\"M\","
             "\"pid\":%d,\"args\":{\"name\":\"rank %d (%s, pid %d)\"}}",
             tl.pid_track, process_rank, wf_hostname(), (int)getpid());
    emit(ev);
    snprintf(ev, sizeof(ev), "{\"name\":\"process_sort_index\",\"ph\":\"M\","
             "\"pid\":%d,\"args\":{\"sort_index\":%d}}", tl.pid_track,
             tl.pid_track);
    emit(ev);
    int err = pthread_create(&tl.writer, NULL, writer_main, NULL);
    if (err) {
        fclose(tl.file);
        tl.file = NULL;
        WEFT_WARN(INIT, "timeline: cannot start its writer thread: %s",
                  strerror(err));
        return WEFT_ERR_SYSTEM;
    }
    tl.running = true;
    if (!tl.fork_handlers)
        tl.fork_handlers = pthread_atfork(before_fork, after_fork_parent,
                                          after_fork_child) == 0;
    __atomic_store_n(&wf_timeline_on, 1, __ATOMIC_RELEASE);
    WEFT_INFO(INIT, "timeline: writing every operation to %s", tl.path);
    return WEFT_OK;
}

WEFT_API weft_status_t weft_timeline_start(const char *path)
{
    if (!path || !*path) {
        WEFT_WARN(INIT, "weft_timeline_start: the path is %s",
                  path ? "empty" : "NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&tl.lock);
    weft_status_t st = start_locked(path);
    pthread_mutex_unlock(&tl.lock);
    return st;
}

WEFT_API weft_status_t weft_timeline_stop(void)
{
    pthread_mutex_lock(&tl.lock);
    if (!tl.running) {
        pthread_mutex_unlock(&tl.lock);
        return WEFT_OK;
    }
    __atomic_store_n(&wf_timeline_on, 0, __ATOMIC_RELEASE);
    tl.stop = true;
    pthread_cond_signal(&tl.wake);
    pthread_mutex_unlock(&tl.lock);
    pthread_join(tl.writer, NULL);
    pthread_mutex_lock(&tl.lock);
    fputs("\n]\n", tl.file);
    int bad = ferror(tl.file) | fclose(tl.file);
    tl.file = NULL;
    tl.running = false;
    /* Flushers still waiting have nothing left to wait for. */
    tl.flush_done = tl.flush_asked;
    pthread_cond_broadcast(&tl.done);
    pthread_mutex_unlock(&tl.lock);
    if (bad) {
        WEFT_WARN(INIT, "timeline: writing %s failed (disk full?)", tl.path);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

weft_status_t wf_timeline_comm_created(const char *pattern, int rank)
{
    pthread_mutex_lock(&tl.lock);
    if (process_rank < 0)
        process_rank = rank;
    weft_status_t st = WEFT_OK;
    if (pattern && *pattern && !tl.running)
        st = start_locked(pattern);
    pthread_mutex_unlock(&tl.lock);
    return st;
}

/* ---- the engines' side --------------------------------------------------- */

void wf_timeline_record(const wf_timeline_rec_t *rec)
{
    pthread_mutex_lock(&tl.lock);
    if (!tl.running) {
        pthread_mutex_unlock(&tl.lock);
        return;
    }
    if (tl.head - tl.tail >= WF_TIMELINE_RING) {
        tl.dropped++;
    } else {
        tl.ring[tl.head++ % WF_TIMELINE_RING] = *rec;
        if (tl.head - tl.tail == WF_TIMELINE_RING / 4)
            pthread_cond_signal(&tl.wake);
    }
    pthread_mutex_unlock(&tl.lock);
}

void wf_timeline_flush(void)
{
    pthread_mutex_lock(&tl.lock);
    if (tl.running) {
        uint64_t mine = ++tl.flush_asked;
        pthread_cond_signal(&tl.wake);
        while (tl.running && tl.flush_done < mine)
            pthread_cond_wait(&tl.done, &tl.lock);
    }
    pthread_mutex_unlock(&tl.lock);
}
