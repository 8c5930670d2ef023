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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads `len` bytes at `remote` in process `pid` into `local`; 0 or the
 * errno of the failure (a short read with no errno is EFAULT). */
int wf_cma_read(pid_t pid, void *local, uint64_t remote, size_t len);

/* 0 when the 64-bit word at `addr` in process `pid` reads as `want`; the
 * errno otherwise (EPERM: another process has that pid). */
int wf_cma_probe(pid_t pid, uint64_t addr, uint64_t want);

#endif /* WF_CMA_H */
