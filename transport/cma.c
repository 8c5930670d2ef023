/*
 * cma.c - cross-memory attach reads (cma.h).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "cma.h"
#include "common.h"

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

bool wf_cma_yama_restricts(const char *ptrace_scope)
{
    return ptrace_scope && ptrace_scope[0] == '1' &&
           (ptrace_scope[1] == '\0' || ptrace_scope[1] == '\n');
}

void wf_cma_yama_scope(char *scope, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");

    scope[0] = '\0';
    if (!f)
        return; /* no Yama */
    if (!fgets(scope, (int)len, f))
        scope[0] = '\0';
    fclose(f);
}

void wf_cma_allow_readers(void)
{
    char scope[8];

    wf_cma_yama_scope(scope, sizeof(scope));
    if (!scope[0] || !wf_cma_yama_restricts(scope))
        return;
    if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0)
        WEFT_DEBUG(NET, "prctl(PR_SET_PTRACER) failed: %s",
                   wf_errno_str(errno));
    else
        WEFT_DEBUG(NET, "Yama ptrace_scope 1: peers on this machine may "
                   "read this process (single copy)");
}
