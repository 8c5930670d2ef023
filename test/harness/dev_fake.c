/*
 * dev_fake.c - a device layer without a GPU, for the tests.
 *
 * "Device" memory is host memory registered here, and a stream is a worker
 * thread that runs the work enqueued on it in order, so the engine's
 * device path (staging, reductions on the device, events, stream order)
 * runs end to end in multi-rank tests on any machine.
 *
 * To catch host code that touches device memory directly (which a real GPU
 * punishes with a crash, and a plain fake would let pass), fake device
 * memory holds its bytes scrambled (XOR WF_FAKE_KEY): only the fake's own
 * copies and reductions unscramble them.  A transport that sends straight
 * from a device buffer, or a host reduction run on one, produces garbage
 * that the tests' element-wise checks see.  Tests fill and read device
 * buffers through wf_fake_dev_write/read.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reduce/reduce.h"
#include "dev_fake.h"

#define WF_FAKE_KEY 0x5a

/* ---- the registry of fake allocations --------------------------------- */

typedef struct region {
    struct region *next;
    char *base;
    size_t len;
    wf_memtype_t type;
} region_t;

static region_t *regions;
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;

static void *region_add(size_t bytes, wf_memtype_t type)
{
    region_t *r = malloc(sizeof(*r));
    char *p = malloc(bytes ? bytes : 1);
    if (!r || !p) {
        free(r);
        free(p);
        return NULL;
    }
    *r = (region_t){.base = p, .len = bytes ? bytes : 1, .type = type};
    pthread_mutex_lock(&regions_lock);
    r->next = regions;
    regions = r;
    pthread_mutex_unlock(&regions_lock);
    return p;
}

static void region_remove(void *ptr)
{
    region_t *r = NULL;
    pthread_mutex_lock(&regions_lock);
    for (region_t **link = &regions; *link; link = &(*link)->next)
        if ((*link)->base == ptr) {
            r = *link;
            *link = r->next;
            break;
        }
    pthread_mutex_unlock(&regions_lock);
    if (r)
        free(r->base);
    free(r);
}

static wf_memtype_t fake_memtype(const void *ptr, int *device)
{
    wf_memtype_t t = WF_MEM_HOST;
    const char *p = ptr;
    pthread_mutex_lock(&regions_lock);
    for (region_t *r = regions; r; r = r->next)
        if (p >= r->base && p < r->base + r->len) {
            t = r->type;
            break;
        }
    pthread_mutex_unlock(&regions_lock);
    if (device)
        *device = t == WF_MEM_DEVICE ? 0 : -1;
    return t;
}

static bool on_device(const void *p)
{
    return fake_memtype(p, NULL) == WF_MEM_DEVICE;
}

void *wf_fake_dev_alloc(size_t bytes)
{
    return region_add(bytes, WF_MEM_DEVICE);
}

void wf_fake_dev_free(void *ptr) { region_remove(ptr); }

static void scramble(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)(src[i] ^ WF_FAKE_KEY);
}

void wf_fake_dev_write(void *dst, const void *src, size_t bytes)
{
    scramble(dst, src, bytes);
}

void wf_fake_dev_read(void *dst, const void *src, size_t bytes)
{
    scramble(dst, src, bytes);
}

/* Copies as a GPU would: bytes keep their meaning across the boundary. */
static void fake_copy_now(void *dst, const void *src, size_t bytes)
{
    bool d = on_device(dst), s = on_device(src);
    if (d == s)
        memmove(dst, src, bytes);
    else
        scramble(dst, src, bytes);
}

/* ---- streams: a worker thread each ----------------------------------- */

/* Destroying an event that a stream's record or wait still refers to is
 * legal in CUDA (its resources go once the work is done); here each such
 * work item holds a reference, and the last one frees the event. */
typedef struct fake_event {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long recorded, reached;
    int refs; /* the owner's, until destroyed, plus queued work's */
} fake_event_t;

/* Events created and not yet freed, for the tests. */
static long live_events;

long wf_fake_live_events(void)
{
    return __atomic_load_n(&live_events, __ATOMIC_RELAXED);
}

static void event_hold(fake_event_t *ev)
{
    pthread_mutex_lock(&ev->lock);
    ev->refs++;
    pthread_mutex_unlock(&ev->lock);
}

static void event_release(fake_event_t *ev)
{
    pthread_mutex_lock(&ev->lock);
    bool last = --ev->refs == 0;
    pthread_mutex_unlock(&ev->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&ev->lock);
    pthread_cond_destroy(&ev->cond);
    free(ev);
    __atomic_sub_fetch(&live_events, 1, __ATOMIC_RELAXED);
}

typedef enum {
    W_COPY, W_REDUCE, W_AVG, W_MARK, W_WAIT, W_FUNC, W_FLAG
} work_kind_t;

typedef struct work {
    struct work *next;
    work_kind_t kind;
    void *dst;
    const void *a, *b;
    size_t n;
    weft_dtype_t dtype;
    weft_op_t op;
    int divisor;
    fake_event_t *event;
    unsigned long mark;
    void (*fn)(void *);
    void *arg;
    const volatile uint32_t *flag;
} work_t;

typedef struct fake_stream {
    struct fake_stream *next_stream; /* all_streams */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    work_t *head, *tail;
    bool running; /* a work item taken off the queue is running */
    bool stop;
    bool capturing; /* wf_fake_stream_capture */
} fake_stream_t;

/* Every stream, for the implicit synchronization of allocations. */
static fake_stream_t *all_streams;
static pthread_mutex_t all_streams_lock = PTHREAD_MUTEX_INITIALIZER;

/* A device reduction: unscramble the operands, reduce with the host table
 * (the real kernels give its results bit for bit), scramble the result. */
static void fake_reduce_now(const work_t *w)
{
    size_t bytes = w->n * wf_dtype_size(w->dtype);
    char *a = malloc(bytes ? bytes : 1), *b = malloc(bytes ? bytes : 1);
    if (!a || !b)
        abort(); /* a test helper: no way to report it */
    scramble(a, w->a, bytes);
    scramble(b, w->b, bytes);
    wf_reduce(a, a, b, w->n, w->dtype, w->op);
    scramble(w->dst, a, bytes);
    free(a);
    free(b);
}

static void fake_avg_now(const work_t *w)
{
    size_t bytes = w->n * wf_dtype_size(w->dtype);
    char *t = malloc(bytes ? bytes : 1);
    if (!t)
        abort();
    scramble(t, w->dst, bytes);
    wf_reduce_avg_finish(t, w->n, w->dtype, w->divisor);
    scramble(w->dst, t, bytes);
    free(t);
}

static void event_reach(fake_event_t *ev, unsigned long mark)
{
    pthread_mutex_lock(&ev->lock);
    if (ev->reached < mark)
        ev->reached = mark;
    pthread_cond_broadcast(&ev->cond);
    pthread_mutex_unlock(&ev->lock);
}

static void event_wait(fake_event_t *ev, unsigned long mark)
{
    pthread_mutex_lock(&ev->lock);
    while (ev->reached < mark)
        pthread_cond_wait(&ev->cond, &ev->lock);
    pthread_mutex_unlock(&ev->lock);
}

/* Every copy takes this long first (wf_fake_slow_copies). */
static unsigned copy_delay_us;

void wf_fake_slow_copies(unsigned us)
{
    __atomic_store_n(&copy_delay_us, us, __ATOMIC_RELAXED);
}

static void run(work_t *w)
{
    unsigned delay_us;
    switch (w->kind) {
    case W_COPY:
        if ((delay_us = __atomic_load_n(&copy_delay_us, __ATOMIC_RELAXED)))
            nanosleep(&(struct timespec){.tv_nsec = (long)delay_us * 1000},
                      NULL);
        fake_copy_now(w->dst, w->a, w->n);
        break;
    case W_REDUCE: fake_reduce_now(w); break;
    case W_AVG: fake_avg_now(w); break;
    case W_MARK:
        event_reach(w->event, w->mark);
        event_release(w->event);
        break;
    case W_WAIT:
        event_wait(w->event, w->mark);
        event_release(w->event);
        break;
    case W_FUNC: w->fn(w->arg); break;
    case W_FLAG:
        /* A GPU polls the word; so does the fake stream. */
        while (!__atomic_load_n(w->flag, __ATOMIC_ACQUIRE))
            nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
        break;
    }
}

static void *stream_main(void *arg)
{
    fake_stream_t *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head)
            break; /* stopped and drained */
        work_t *w = s->head;
        s->head = w->next;
        if (!s->head)
            s->tail = NULL;
        s->running = true;
        pthread_mutex_unlock(&s->lock);
        run(w);
        free(w);
        pthread_mutex_lock(&s->lock);
        s->running = false;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static weft_status_t enqueue(wf_dev_stream_t stream, const work_t *tmpl)
{
    fake_stream_t *s = stream;
    work_t *w = malloc(sizeof(*w));
    if (!w)
        return WEFT_ERR_NO_MEMORY;
    *w = *tmpl;
    w->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return WEFT_OK;
}

static weft_status_t fake_stream_create(wf_dev_stream_t *stream)
{
    fake_stream_t *s = calloc(1, sizeof(*s));
    if (!s)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        free(s);
        return WEFT_ERR_SYSTEM;
    }
    pthread_mutex_lock(&all_streams_lock);
    s->next_stream = all_streams;
    all_streams = s;
    pthread_mutex_unlock(&all_streams_lock);
    *stream = s;
    return WEFT_OK;
}

/* Like cudaStreamDestroy: work already enqueued still runs. */
static void fake_stream_destroy(wf_dev_stream_t stream)
{
    fake_stream_t *s = stream;
    if (!s)
        return;
    pthread_mutex_lock(&all_streams_lock);
    for (fake_stream_t **link = &all_streams; *link;
         link = &(*link)->next_stream)
        if (*link == s) {
            *link = s->next_stream;
            break;
        }
    pthread_mutex_unlock(&all_streams_lock);
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

static weft_status_t fake_event_create(wf_dev_event_t *event)
{
    fake_event_t *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_init(&ev->lock, NULL);
    pthread_cond_init(&ev->cond, NULL);
    ev->refs = 1;
    __atomic_add_fetch(&live_events, 1, __ATOMIC_RELAXED);
    *event = ev;
    return WEFT_OK;
}

static void fake_event_destroy(wf_dev_event_t event)
{
    if (event)
        event_release(event);
}

/* A record or wait of `ev`, which holds the event until it has run. */
static weft_status_t enqueue_on_event(wf_dev_stream_t stream,
                                      work_kind_t kind, fake_event_t *ev,
                                      unsigned long mark)
{
    event_hold(ev);
    weft_status_t st = enqueue(stream, &(work_t){.kind = kind, .event = ev,
                                                 .mark = mark});
    if (st != WEFT_OK)
        event_release(ev);
    return st;
}

static weft_status_t fake_event_record(wf_dev_event_t event,
                                       wf_dev_stream_t stream)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&ev->lock);
    unsigned long mark = ++ev->recorded;
    pthread_mutex_unlock(&ev->lock);
    return enqueue_on_event(stream, W_MARK, ev, mark);
}

static weft_status_t fake_event_query(wf_dev_event_t event)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&ev->lock);
    bool done = ev->reached >= ev->recorded;
    pthread_mutex_unlock(&ev->lock);
    return done ? WEFT_OK : WEFT_INPROGRESS;
}

static weft_status_t fake_stream_wait_event(wf_dev_stream_t stream,
                                            wf_dev_event_t event)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&ev->lock);
    unsigned long mark = ev->recorded;
    pthread_mutex_unlock(&ev->lock);
    return enqueue_on_event(stream, W_WAIT, ev, mark);
}

static weft_status_t fake_host_func(wf_dev_stream_t stream,
                                    void (*fn)(void *), void *arg)
{
    return enqueue(stream, &(work_t){.kind = W_FUNC, .fn = fn, .arg = arg});
}

static weft_status_t fake_stream_wait_flag(wf_dev_stream_t stream,
                                           const volatile uint32_t *flag)
{
    return enqueue(stream, &(work_t){.kind = W_FLAG, .flag = flag});
}

static weft_status_t fake_copy(void *dst, const void *src, size_t bytes,
                               wf_dev_stream_t stream)
{
    return enqueue(stream, &(work_t){.kind = W_COPY, .dst = dst, .a = src,
                                     .n = bytes});
}

static bool implicit_sync(const char *call);

/* Kernels loaded, per dtype: the reductions by op (WEFT_AVG sums with
 * WEFT_SUM's), then the divide of WEFT_AVG's end. */
#define KERNEL_DIVIDE WEFT_OP_COUNT
static bool kernel_loaded[WEFT_DTYPE_COUNT][WEFT_OP_COUNT + 1];
static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;

/* A kernel's first launch when prepare_device has not loaded it: as with
 * CUDA's lazy loading, the launch first waits for the device's queue to
 * drain (implicit_sync, which gives up after 10 s where a GPU hangs). */
static bool kernel_load(weft_dtype_t dtype, int kernel)
{
    if ((unsigned)dtype >= WEFT_DTYPE_COUNT)
        return true; /* the stream fails the work itself */
    pthread_mutex_lock(&kernel_lock);
    bool loaded = kernel_loaded[dtype][kernel];
    pthread_mutex_unlock(&kernel_lock);
    if (loaded)
        return true;
    if (!implicit_sync("a reduction kernel's first launch (lazy loading)"))
        return false;
    pthread_mutex_lock(&kernel_lock);
    kernel_loaded[dtype][kernel] = true;
    pthread_mutex_unlock(&kernel_lock);
    return true;
}

static weft_status_t fake_prepare_device(int device)
{
    if (device != 0 && device != -1)
        return WEFT_ERR_CUDA;
    pthread_mutex_lock(&kernel_lock);
    for (int d = 0; d < WEFT_DTYPE_COUNT; d++)
        for (int k = 0; k <= KERNEL_DIVIDE; k++)
            kernel_loaded[d][k] = true;
    pthread_mutex_unlock(&kernel_lock);
    return WEFT_OK;
}

static weft_status_t fake_reduce(void *dst, const void *a, const void *b,
                                 size_t n, weft_dtype_t dtype, weft_op_t op,
                                 wf_dev_stream_t stream)
{
    if ((unsigned)op < WEFT_OP_COUNT &&
        !kernel_load(dtype, op == WEFT_AVG ? WEFT_SUM : (int)op))
        return WEFT_ERR_CUDA;
    return enqueue(stream, &(work_t){.kind = W_REDUCE, .dst = dst, .a = a,
                                     .b = b, .n = n, .dtype = dtype,
                                     .op = op});
}

static weft_status_t fake_avg_finish(void *buf, size_t n, weft_dtype_t dtype,
                                     int divisor, wf_dev_stream_t stream)
{
    if (!kernel_load(dtype, KERNEL_DIVIDE))
        return WEFT_ERR_CUDA;
    return enqueue(stream, &(work_t){.kind = W_AVG, .dst = buf, .n = n,
                                     .dtype = dtype, .divisor = divisor});
}

static weft_status_t fake_set_device(int device)
{
    return device == 0 || device == -1 ? WEFT_OK : WEFT_ERR_CUDA;
}

/* Messages of the ops that fail on their own (allocations, dmabuf_fd). */
static _Thread_local char fake_err[160] = "no error (fake device)";

static bool streams_idle(void)
{
    bool idle = true;
    pthread_mutex_lock(&all_streams_lock);
    for (fake_stream_t *s = all_streams; s && idle; s = s->next_stream) {
        pthread_mutex_lock(&s->lock);
        idle = !s->head && !s->running;
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&all_streams_lock);
    return idle;
}

/* A CUDA device or pinned allocation or free may wait for all work on the
 * device to end first (the CUDA programming guide's "implicit
 * synchronization").  The fake does the same, so that an allocation made
 * while a stream waits for the operation that allocates shows here, as
 * on a GPU; it gives up after 10 s with an error where a GPU hangs. */
static bool implicit_sync(const char *call)
{
    for (int waited_ms = 0; !streams_idle(); waited_ms++) {
        if (waited_ms >= 10000) {
            snprintf(fake_err, sizeof(fake_err), "%s: the implicit "
                     "synchronization waited 10 s for the streams (a "
                     "GPU would hang here)", call);
            return false;
        }
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    return true;
}

static weft_status_t fake_get_device(int *device)
{
    *device = 0;
    return WEFT_OK;
}

static weft_status_t fake_alloc(size_t bytes, void **ptr)
{
    if (!implicit_sync("alloc"))
        return WEFT_ERR_CUDA;
    *ptr = wf_fake_dev_alloc(bytes);
    return *ptr ? WEFT_OK : WEFT_ERR_NO_MEMORY;
}

static weft_status_t fake_alloc_pinned(size_t bytes, void **ptr)
{
    if (!implicit_sync("alloc_pinned"))
        return WEFT_ERR_CUDA;
    *ptr = region_add(bytes, WF_MEM_HOST_PINNED);
    return *ptr ? WEFT_OK : WEFT_ERR_NO_MEMORY;
}

/* A free that could not synchronize still frees, like the void CUDA
 * ones whose failure only the message tells. */
static void fake_free(void *ptr)
{
    (void)implicit_sync("free");
    region_remove(ptr);
}

/* The stand-in for the legacy default stream: one per process, made on
 * first use and kept (like the CUDA context's), so that work a test
 * enqueues there before a call is what mark_default_stream orders after. */
static fake_stream_t *default_stream;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_stream_make(void)
{
    wf_dev_stream_t s = NULL;
    if (fake_stream_create(&s) == WEFT_OK)
        default_stream = s;
}

wf_dev_stream_t wf_fake_default_stream(void)
{
    pthread_once(&default_once, default_stream_make);
    return default_stream;
}

static weft_status_t fake_mark_default_stream(int device,
                                              wf_dev_event_t *event)
{
    wf_dev_stream_t s = wf_fake_default_stream();
    if (fake_set_device(device) != WEFT_OK || !s)
        return WEFT_ERR_CUDA;
    weft_status_t st = fake_event_create(event);
    if (st != WEFT_OK)
        return st;
    st = fake_event_record(*event, s);
    if (st != WEFT_OK)
        fake_event_destroy(*event);
    return st;
}

void wf_fake_stream_capture(wf_dev_stream_t stream, int on)
{
    fake_stream_t *s = stream;
    pthread_mutex_lock(&s->lock);
    s->capturing = on != 0;
    pthread_mutex_unlock(&s->lock);
}

static weft_status_t fake_stream_capturing(wf_dev_stream_t stream,
                                           int *capturing)
{
    fake_stream_t *s = stream;
    pthread_mutex_lock(&s->lock);
    *capturing = s->capturing;
    pthread_mutex_unlock(&s->lock);
    return WEFT_OK;
}

static const char *fake_last_error(void) { return fake_err; }

/* A stand-in fd (/dev/null) for fake device memory, so the verbs
 * transport's device registration order runs in tests with fake verbs
 * (test/transport/ib_gdr.c); real verbs reject it. */
static weft_status_t fake_dmabuf_fd(const void *ptr, size_t len, int *fd,
                                    uint64_t *offset)
{
    (void)len;
    if (!on_device(ptr)) {
        snprintf(fake_err, sizeof(fake_err),
                 "dmabuf_fd: %p is not fake device memory", ptr);
        return WEFT_ERR_INVALID_ARG;
    }
    *fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    *offset = 0;
    return *fd < 0 ? WEFT_ERR_SYSTEM : WEFT_OK;
}

const wf_dev_ops_t wf_fake_dev_ops = {
    .version = WF_DEV_OPS_VERSION,
    .name = "fake",
    .memtype = fake_memtype,
    .set_device = fake_set_device,
    .get_device = fake_get_device,
    .alloc = fake_alloc,
    .free = fake_free,
    .alloc_pinned = fake_alloc_pinned,
    .free_pinned = fake_free,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .event_query = fake_event_query,
    .stream_wait_event = fake_stream_wait_event,
    .host_func = fake_host_func,
    .stream_wait_flag = fake_stream_wait_flag,
    .copy = fake_copy,
    .reduce = fake_reduce,
    .avg_finish = fake_avg_finish,
    .last_error = fake_last_error,
    .dmabuf_fd = fake_dmabuf_fd,
    .mark_default_stream = fake_mark_default_stream,
    .prepare_device = fake_prepare_device,
    .stream_capturing = fake_stream_capturing,
};

void wf_dev_use_fake(bool on)
{
    wf_dev_layer_provide(on ? &wf_fake_dev_ops : NULL);
}
