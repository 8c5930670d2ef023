/*
 * cma.c - cross-memory attach reads (cma.h).
 */
#include <errno.h>
#include <sys/uio.h>

#include "cma.h"

int wf_cma_read(pid_t pid, void *local, uint64_t remote, size_t len)
{
    size_t done = 0;

    while (done < len) {
        struct iovec l = {(char *)local + done, len - done};
        struct iovec r = {(void *)(uintptr_t)(remote + done), len - done};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EFAULT;
        done += (size_t)n;
    }
    return 0;
}

int wf_cma_probe(pid_t pid, uint64_t addr, uint64_t want)
{
    uint64_t got = 0;
    int err = wf_cma_read(pid, &got, addr, sizeof(got));

    if (err)
        return err;
    return got == want ? 0 : EPERM; /* another process with that pid */
}
