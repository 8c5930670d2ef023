/*
 * pmi_wire.c - PMI-1 as MPICH's mpiexec.hydra serves it, pmi.h.
 *
 * hydra hands each process a connected socket (PMI_FD) and speaks a line
 * protocol on it; the client side lives inside libmpich, with no library
 * of its own to load, so this is that client's few commands:
 *
 *   cmd=init pmi_version=1 pmi_subversion=1  -> cmd=response_to_init ... rc=0
 *   cmd=get_my_kvsname                       -> cmd=my_kvsname kvsname=K
 *   cmd=put kvsname=K key=k value=v          -> cmd=put_result rc=0
 *   cmd=barrier_in                           -> cmd=barrier_out
 *   cmd=get kvsname=K key=k                  -> cmd=get_result rc=0 value=v
 *   cmd=finalize                             -> cmd=finalize_ack
 *
 * A process that is also an MPICH program has its own client on the same
 * socket, and the two would interleave: such a program passes weft its
 * rendezvous itself (docs/launchers.md).
 */
#include "rdv/pmi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "config.h"

static int pmi_fd = -1;
static char kvsname[256];

static int present(void)
{
    const char *fd = wf_env_get("PMI_FD");
    return fd && *fd;
}

static weft_status_t send_line(const char *line)
{
    size_t len = strlen(line), done = 0;
    while (done < len) {
        ssize_t n = write(pmi_fd, line + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            WEFT_WARN(RDV, "PMI-1: writing to the launcher (PMI_FD %d): %s",
                      pmi_fd, wf_errno_str(n < 0 ? errno : EPIPE));
            return WEFT_ERR_SYSTEM;
        }
        done += (size_t)n;
    }
    return WEFT_OK;
}

/* One reply line, without its newline.  Byte by byte: nothing after the
 * newline may be taken from the socket, it belongs to the next reply. */
static weft_status_t recv_line(char *line, size_t len)
{
    size_t got = 0;
    for (;;) {
        char c;
        ssize_t n = read(pmi_fd, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            WEFT_WARN(RDV, "PMI-1: reading from the launcher (PMI_FD %d): %s",
                      pmi_fd, n < 0 ? wf_errno_str(errno) : "closed");
            return WEFT_ERR_SYSTEM;
        }
        if (c == '\n')
            break;
        if (got + 1 < len)
            line[got++] = c;
    }
    line[got] = '\0';
    return WEFT_OK;
}

/* The value of `key` in a reply "cmd=x a=1 b=2", or NULL. */
const char *wf_pmi_wire_field(const char *reply, const char *key, char *out,
                              size_t len)
{
    size_t klen = strlen(key);
    for (const char *p = reply; p && *p;) {
        while (*p == ' ')
            p++;
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            const char *v = p + klen + 1;
            size_t n = strcspn(v, " ");
            if (n >= len)
                n = len - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return out;
        }
        p = strchr(p, ' ');
    }
    return NULL;
}

/* Sends `cmd` and reads the reply, which must be `want` with rc 0 where
 * it carries one. */
static weft_status_t call(const char *cmd, const char *want, char *reply,
                          size_t len)
{
    weft_status_t st = send_line(cmd);
    if (st == WEFT_OK)
        st = recv_line(reply, len);
    if (st != WEFT_OK)
        return st;
    char got[64], rc[16];
    if (!wf_pmi_wire_field(reply, "cmd", got, sizeof(got)) ||
        strcmp(got, want) != 0 ||
        (wf_pmi_wire_field(reply, "rc", rc, sizeof(rc)) &&
         strcmp(rc, "0") != 0)) {
        WEFT_WARN(RDV, "PMI-1: the launcher answered \"%s\" to %.*s", reply,
                  (int)strcspn(cmd, "\n"), cmd);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

static weft_status_t init(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len)
{
    if (!wf_env_int("PMI_FD", &pmi_fd) || !wf_env_int("PMI_RANK", rank) ||
        !wf_env_int("PMI_SIZE", size)) {
        snprintf(why, why_len, "PMI-1: PMI_FD, PMI_RANK and PMI_SIZE must "
                 "all be numbers (got %s, %s, %s)",
                 wf_env_get("PMI_FD") ? wf_env_get("PMI_FD") : "none",
                 wf_env_get("PMI_RANK") ? wf_env_get("PMI_RANK") : "none",
                 wf_env_get("PMI_SIZE") ? wf_env_get("PMI_SIZE") : "none");
        return WEFT_ERR_UNSUPPORTED;
    }
    char reply[512];
    weft_status_t st = call("cmd=init pmi_version=1 pmi_subversion=1\n",
                            "response_to_init", reply, sizeof(reply));
    if (st == WEFT_OK)
        st = call("cmd=get_my_kvsname\n", "my_kvsname", reply,
                  sizeof(reply));
    if (st != WEFT_OK ||
        !wf_pmi_wire_field(reply, "kvsname", kvsname, sizeof(kvsname))) {
        snprintf(why, why_len, "PMI-1: the launcher on PMI_FD %d did not "
                 "answer as hydra does (see the warning before)", pmi_fd);
        return WEFT_ERR_SYSTEM;
    }
    wf_strlcpy(job, kvsname, job_len);
    return WEFT_OK;
}

static weft_status_t put(const char *key, const char *value)
{
    char cmd[WF_PMI_VALUE_MAX + 512], reply[256];
    snprintf(cmd, sizeof(cmd), "cmd=put kvsname=%s key=%s value=%s\n",
             kvsname, key, value);
    return call(cmd, "put_result", reply, sizeof(reply));
}

static weft_status_t fence(void)
{
    char reply[256];
    return call("cmd=barrier_in\n", "barrier_out", reply, sizeof(reply));
}

static weft_status_t get0(const char *key, char *value, size_t len)
{
    char cmd[512], reply[WF_PMI_VALUE_MAX + 256];
    snprintf(cmd, sizeof(cmd), "cmd=get kvsname=%s key=%s\n", kvsname, key);
    weft_status_t st = call(cmd, "get_result", reply, sizeof(reply));
    if (st == WEFT_OK && !wf_pmi_wire_field(reply, "value", value, len)) {
        WEFT_WARN(RDV, "PMI-1: no value in the launcher's answer \"%s\"",
                  reply);
        return WEFT_ERR_SYSTEM;
    }
    return st;
}

static void fini(void)
{
    char reply[128];
    (void)call("cmd=finalize\n", "finalize_ack", reply, sizeof(reply));
}

const wf_pmi_ops_t wf_pmi_wire = {
    .name = "PMI-1", .present = present, .init = init, .put = put,
    .fence = fence, .get0 = get0, .fini = fini};
