/*
 * dump_signal.c - WEFT_DEBUG_DUMP=1: SIGUSR1 logs the recent operations of
 * every communicator of the process (history.c), so a job that seems stuck
 * can be asked where it is without killing it: `kill -USR1 <pid>`.
 *
 * A signal handler may do almost nothing, so it only writes a byte to a
 * pipe; a thread of ours reads it and dumps each registered engine under
 * that engine's progress lock.  The handler is installed only when SIGUSR1
 * still has its default action: an application's own handler is left
 * alone (with a note in the log).  Lock order: the registry lock, then an
 * engine's progress lock, then its state lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "sched/engine_impl.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static wf_engine_t **engines;
static int nengines, engines_cap;
static bool installed; /* handler and thread set up (once per process) */
static int pipe_fds[2] = {-1, -1};

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    char byte = 'd';
    ssize_t r = write(pipe_fds[1], &byte, 1);
    (void)r; /* a full pipe already holds a request */
    errno = saved;
}

static void dump_all(void)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < nengines; i++) {
        wf_engine_t *e = engines[i];
        pthread_mutex_lock(&e->progress_lock);
        wf_history_dump(e, "SIGUSR1");
        pthread_mutex_unlock(&e->progress_lock);
    }
    pthread_mutex_unlock(&registry_lock);
}

static void *dump_main(void *arg)
{
    (void)arg;
    char buf[64];
    for (;;) {
        ssize_t r = read(pipe_fds[0], buf, sizeof(buf));
        if (r > 0)
            dump_all();
        else if (r == 0 || errno != EINTR)
            return NULL;
    }
}

/* Installs the handler and starts the thread; under registry_lock. */
static void install(void)
{
    installed = true;
    struct sigaction old;
    if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO)) {
        WEFT_INFO(SCHED, "WEFT_DEBUG_DUMP: SIGUSR1 already has a handler; "
                  "not installing weft's");
        return;
    }
    if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        WEFT_WARN(SCHED, "WEFT_DEBUG_DUMP: pipe failed: %s",
                  wf_errno_str(errno));
        return;
    }
    /* The thread blocks on the read end; only the handler's end must
     * never block. */
    fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) & ~O_NONBLOCK);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The thread must not take the signal: a handler running on it would
     * be harmless, but a blocked read is what the thread is for. */
    sigset_t all, prev;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &prev);
    int err = pthread_create(&t, &attr, dump_main, NULL);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    pthread_attr_destroy(&attr);
    if (err) {
        WEFT_WARN(SCHED, "WEFT_DEBUG_DUMP: cannot start the dump thread: %s",
                  wf_errno_str(err));
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    WEFT_INFO(SCHED, "WEFT_DEBUG_DUMP: kill -USR1 %d logs the recent "
              "operations of every communicator", (int)getpid());
}

void wf_dump_signal_register(wf_engine_t *e)
{
    pthread_mutex_lock(&registry_lock);
    if (!installed)
        install();
    if (nengines == engines_cap) {
        int cap = engines_cap ? 2 * engines_cap : 8;
        wf_engine_t **grown = realloc(engines, (size_t)cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&registry_lock);
            WEFT_WARN(SCHED, "WEFT_DEBUG_DUMP: out of memory; rank %d will "
                      "not dump on SIGUSR1", e->rank);
            return;
        }
        engines = grown;
        engines_cap = cap;
    }
    engines[nengines++] = e;
    pthread_mutex_unlock(&registry_lock);
}

void wf_dump_signal_unregister(wf_engine_t *e)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < nengines; i++)
        if (engines[i] == e) {
            engines[i] = engines[--nengines];
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}
