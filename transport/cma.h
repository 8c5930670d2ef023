/*
 * cma.h - cross-memory attach (process_vm_readv), the single copy the
 * transports use between processes of one machine: the receiver copies a
 * message straight out of the sender's buffer.
 *
 * Whether it works between two processes depends on the kernel, the pid
 * namespace and ptrace permission (Yama's ptrace_scope, containers'
 * seccomp profiles), so a transport proves it per peer: the peer offers
 * the address and value of a random cookie, and wf_cma_probe reads it.
 */
#ifndef WF_CMA_H
#define WF_CMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads `len` bytes at `remote` in process `pid` into `local`; 0 or the
 * errno of the failure (a short read with no errno is EFAULT). */
int wf_cma_read(pid_t pid, void *local, uint64_t remote, size_t len);

/* 0 when the 64-bit word at `addr` in process `pid` reads as `want`; the
 * errno otherwise (EPERM: another process has that pid). */
int wf_cma_probe(pid_t pid, uint64_t addr, uint64_t want);

/* Whether the content of /proc/sys/kernel/yama/ptrace_scope is scope 1,
 * the one a process can lift for its peers (PR_SET_PTRACER). */
bool wf_cma_yama_restricts(const char *ptrace_scope);

/* The content of /proc/sys/kernel/yama/ptrace_scope ("1\n"), or an empty
 * string where there is no Yama. */
void wf_cma_yama_scope(char *scope, size_t len);

/* Under Yama's ptrace_scope 1 (Ubuntu's default) only a process's
 * ancestors may read its memory, so ranks started side by side by a
 * launcher could not: declares that any process may, as far as Yama goes
 * (the kernel's own rules - same user, no setuid - still hold; Open MPI's
 * shared memory does the same).  Scopes 2 and 3 cannot be lifted this
 * way, and the cookie check then finds out. */
void wf_cma_allow_readers(void);

#endif /* WF_CMA_H */
