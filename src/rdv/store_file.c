/*
 * store_file.c - "file:///DIR": a store on a (shared) file system, for
 * clusters without a reachable server.  Each key is a file under
 * DIR/<job id>/.
 *
 * Only operations that shared file systems (NFS included) make atomic are
 * used: a value is written to a temporary file and then renamed into place
 * (SET) or hard-linked into place (SET_ONCE: link fails with EEXIST when
 * the key exists), so a reader sees a whole value or none.  ADD takes an
 * exclusive flock on DIR/<job>/.lock around read-modify-write.  Waits poll
 * with a short, growing sleep; there is no change notification that works
 * across hosts.  Files stay after the job: use a fresh DIR or job id per
 * run (a stale key would be read as this run's).
 *
 * Key and job names are escaped into file names: [A-Za-z0-9_-] and '.'
 * (not first) are kept, every other byte becomes %XX; names that would be
 * too long become "~<hash>-<escaped start>".  Temporary and lock files
 * start with '.', which an escaped name never does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "rdv/rdv_proto.h"
#include "rdv/store_impl.h"

#define NAME_LIMIT 200 /* escaped names above this are hashed */
#define POLL_MIN_MS 1
#define POLL_MAX_MS 50

/* Room for "/<name>" after the directory within PATH_MAX. */
#define DIR_MAX (PATH_MAX - 512)

typedef struct {
    char dir[DIR_MAX]; /* DIR/<escaped job> */
    char desc[512];
} file_store_t;

/* ---- names and paths --------------------------------------------------- */

static void escape_name(const char *in, char *out, size_t out_size)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[3 * (WF_STORE_KEY_MAX + WF_RDV_JOB_MAX) + 1];
    size_t n = 0;

    for (const unsigned char *p = (const void *)in; *p; p++) {
        bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
                    (*p == '.' && p != (const void *)in);
        if (keep) {
            buf[n++] = (char)*p;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
        }
    }
    buf[n] = '\0';
    if (n <= NAME_LIMIT) {
        snprintf(out, out_size, "%s", buf);
        return;
    }
    snprintf(out, out_size, "~%016llx-%.*s",
             (unsigned long long)wf_hash64(in, strlen(in)), NAME_LIMIT - 20,
             buf);
}

static void key_path(const file_store_t *f, const char *key, char *path,
                     size_t size)
{
    char name[NAME_LIMIT + 1];

    escape_name(key, name, sizeof(name));
    snprintf(path, size, "%s/%s", f->dir, name);
}

/* mkdir -p; existing directories are fine. */
static weft_status_t make_dirs(const char *desc, const char *path)
{
    char buf[PATH_MAX];

    wf_strlcpy(buf, path, sizeof(buf));
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            WEFT_WARN(RDV, "store %s: cannot create directory %s: %s", desc,
                      buf, wf_errno_str(errno));
            return WEFT_ERR_SYSTEM;
        }
        if (c == '\0')
            return WEFT_OK;
        *p = c;
    }
}

weft_status_t wf_store_file_open(const char *rest, const char *job_id,
                                 const char *desc, void **impl)
{
    char job[NAME_LIMIT + 1];

    if (!*rest) {
        WEFT_WARN(RDV, "store %s: file:// needs a directory, e.g. "
                       "file:///shared/rdv", desc);
        return WEFT_ERR_INVALID_ARG;
    }
    file_store_t *f = calloc(1, sizeof(*f));
    if (!f) {
        WEFT_WARN(RDV, "store %s: out of memory", desc);
        return WEFT_ERR_NO_MEMORY;
    }
    escape_name(job_id, job, sizeof(job));
    if ((size_t)snprintf(f->dir, sizeof(f->dir), "%s/%s", rest, job) >=
        sizeof(f->dir)) {
        WEFT_WARN(RDV, "store %s: directory path too long", desc);
        free(f);
        return WEFT_ERR_INVALID_ARG;
    }
    wf_strlcpy(f->desc, desc, sizeof(f->desc));
    weft_status_t st = make_dirs(desc, f->dir);
    if (st != WEFT_OK) {
        free(f);
        return st;
    }
    *impl = f;
    return WEFT_OK;
}

static void file_close(void *impl) { free(impl); }

/* ---- file I/O ---------------------------------------------------------- */

/* Writes value to a new temporary file in the job directory. */
static weft_status_t write_temp(const file_store_t *f, const char *key,
                                const void *value, size_t len, char *tmp,
                                size_t tmp_size)
{
    static unsigned counter;
    unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    const char *p = value;
    size_t done = 0;

    snprintf(tmp, tmp_size, "%s/.tmp.%.64s.%d.%u", f->dir, wf_hostname(),
             (int)getpid(), n);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        goto err;
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int err = errno;
            close(fd);
            errno = err;
            goto err_unlink;
        }
        done += (size_t)w;
    }
    /* close() reports deferred write errors on NFS. */
    if (close(fd) != 0)
        goto err_unlink;
    return WEFT_OK;
err_unlink: {
    int err = errno;
    unlink(tmp);
    errno = err;
}
err:
    WEFT_WARN(RDV, "store %s: cannot write %s for key '%s': %s", f->desc, tmp,
              key, wf_errno_str(errno));
    return WEFT_ERR_SYSTEM;
}

/* Reads a key's file into a malloc'ed buffer.  WEFT_ERR_AGAIN when the key
 * does not exist (yet). */
static weft_status_t read_key(const file_store_t *f, const char *key,
                              uint8_t **data, size_t *len)
{
    char path[PATH_MAX];
    struct stat sb;
    size_t done = 0;

    key_path(f, key, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return WEFT_ERR_AGAIN;
    if (fd < 0 || fstat(fd, &sb) != 0)
        goto err;
    if (sb.st_size > WF_STORE_VALUE_MAX) {
        WEFT_WARN(RDV, "store %s: %s for key '%s' has %lld bytes, more than "
                       "any value (not written by weft?)", f->desc, path,
                  key, (long long)sb.st_size);
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    uint8_t *buf = malloc((size_t)sb.st_size + 1);
    if (!buf)
        goto err;
    while (done < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + done, (size_t)sb.st_size - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO; /* the file shrank under us */
            free(buf);
            goto err;
        }
        done += (size_t)r;
    }
    close(fd);
    *data = buf;
    *len = done;
    return WEFT_OK;
err:
    WEFT_WARN(RDV, "store %s: cannot read %s for key '%s': %s", f->desc, path,
              key, wf_errno_str(errno));
    if (fd >= 0)
        close(fd);
    return WEFT_ERR_SYSTEM;
}

/* ---- calls ------------------------------------------------------------- */

static weft_status_t file_set(void *impl, const char *key, const void *value,
                              size_t len)
{
    file_store_t *f = impl;
    char tmp[PATH_MAX], path[PATH_MAX];

    WEFT_CHECK(write_temp(f, key, value, len, tmp, sizeof(tmp)));
    key_path(f, key, path, sizeof(path));
    if (rename(tmp, path) != 0) {
        WEFT_WARN(RDV, "store %s: cannot rename %s to %s for key '%s': %s",
                  f->desc, tmp, path, key, wf_errno_str(errno));
        unlink(tmp);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

static weft_status_t file_set_once(void *impl, const char *key,
                                   const void *value, size_t len,
                                   bool *created, void *existing, size_t cap,
                                   size_t *existing_len)
{
    file_store_t *f = impl;
    char tmp[PATH_MAX], path[PATH_MAX];
    uint8_t *data = NULL;
    size_t n = 0;

    WEFT_CHECK(write_temp(f, key, value, len, tmp, sizeof(tmp)));
    key_path(f, key, path, sizeof(path));
    int rc = link(tmp, path);
    int err = errno;
    unlink(tmp);
    if (rc == 0) {
        *created = true;
        return WEFT_OK;
    }
    if (err != EEXIST) {
        WEFT_WARN(RDV, "store %s: cannot link %s for key '%s': %s (the file "
                       "system must support hard links)", f->desc, path, key,
                  wf_errno_str(err));
        return WEFT_ERR_SYSTEM;
    }
    WEFT_CHECK(read_key(f, key, &data, &n));
    weft_status_t st = wf_store_copy_value(f->desc, key, data, n, existing,
                                           cap, existing_len);
    free(data);
    if (st == WEFT_OK)
        *created = false;
    return st;
}

static weft_status_t file_get(void *impl, const char *key, void *value,
                              size_t cap, size_t *len, int64_t timeout_ms)
{
    file_store_t *f = impl;
    uint64_t deadline = wf_store_deadline(timeout_ms);
    int delay = POLL_MIN_MS;
    uint8_t *data;
    size_t n;

    for (;;) {
        weft_status_t st = read_key(f, key, &data, &n);
        if (st == WEFT_OK)
            break;
        if (st != WEFT_ERR_AGAIN)
            return st;
        if (!wf_store_backoff(deadline, &delay, POLL_MAX_MS))
            return wf_store_timeout(f->desc, key, timeout_ms);
    }
    weft_status_t st = wf_store_copy_value(f->desc, key, data, n, value, cap,
                                           len);
    free(data);
    return st;
}

static weft_status_t file_wait(void *impl, const char *const *keys,
                               size_t nkeys, int64_t timeout_ms)
{
    file_store_t *f = impl;
    uint64_t deadline = wf_store_deadline(timeout_ms);
    int delay = POLL_MIN_MS;
    char path[PATH_MAX];

    for (size_t i = 0; i < nkeys;) {
        key_path(f, keys[i], path, sizeof(path));
        if (access(path, F_OK) == 0) {
            i++; /* keys are never deleted: no need to look again */
            continue;
        }
        if (errno != ENOENT) {
            WEFT_WARN(RDV, "store %s: cannot check %s for key '%s': %s",
                      f->desc, path, keys[i], wf_errno_str(errno));
            return WEFT_ERR_SYSTEM;
        }
        if (!wf_store_backoff(deadline, &delay, POLL_MAX_MS))
            return wf_store_timeout(f->desc, keys[i], timeout_ms);
    }
    return WEFT_OK;
}

/* Computes and writes the new counter; the job's lock is held. */
static weft_status_t add_locked(file_store_t *f, const char *key,
                                int64_t delta, int64_t *result)
{
    uint8_t *data = NULL;
    size_t n = 0;
    int64_t old = 0, sum;
    char text[24];

    weft_status_t st = read_key(f, key, &data, &n);
    if (st != WEFT_OK && st != WEFT_ERR_AGAIN)
        return st;
    bool ok = st == WEFT_ERR_AGAIN || wf_rdv_counter_parse(data, n, &old);
    free(data);
    if (!ok || !wf_rdv_counter_add(old, delta, &sum)) {
        WEFT_WARN(RDV, "store %s: add on key '%s' failed: value is not an "
                       "integer or the sum overflows", f->desc, key);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(file_set(f, key, text, wf_rdv_counter_format(sum, text)));
    *result = sum;
    return WEFT_OK;
}

static weft_status_t file_add(void *impl, const char *key, int64_t delta,
                              int64_t *result)
{
    file_store_t *f = impl;
    char lock[PATH_MAX];
    int rc;

    snprintf(lock, sizeof(lock), "%s/.lock", f->dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        WEFT_WARN(RDV, "store %s: cannot open lock file %s: %s", f->desc,
                  lock, wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        WEFT_WARN(RDV, "store %s: cannot lock %s: %s", f->desc, lock,
                  wf_errno_str(errno));
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    weft_status_t st = add_locked(f, key, delta, result);
    close(fd); /* releases the lock */
    return st;
}

const wf_store_ops_t wf_store_file_ops = {
    .scheme = "file",
    .set = file_set,
    .set_once = file_set_once,
    .get = file_get,
    .wait = file_wait,
    .add = file_add,
    .local_ip = NULL,
    .close = file_close,
};
