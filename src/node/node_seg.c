/*
 * node_seg.c - the segment of node_coll.h: made by rank 0 as a memfd,
 * attached by the others through /proc/<pid>/fd/<fd> (the owner's
 * permission, the same check as process_vm_readv's single copy), agreed
 * on through the store, and its failure board.
 *
 * A memfd has no name, so a crash leaves nothing behind and no other
 * job can open it by guessing; the pid, fd and a random nonce reach the
 * other ranks only through the communicator's store (authenticated by
 * the job's token when it has one).  Rank 0 keeps the fd until every rank
 * said whether it attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "auth.h"
#include "common.h"
#include "node/node_impl.h"

/* The largest payload a slot carries, whatever WEFT_NODE_COLL_MAX says:
 * beyond it the engine's pipelined plans are as fast. */
#define WF_NODE_PAYLOAD_MAX (64u << 10)
/* The most the slots of all ranks take; with many ranks the payload
 * shrinks to fit. */
#define WF_NODE_SLOTS_MAX ((size_t)64 << 20)

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

static size_t map_bytes(int size, uint32_t payload)
{
    return sizeof(wf_node_head_t) + round_up((size_t)size * 4, 64) +
           WF_NODE_DEPTH * (size_t)size *
               (sizeof(wf_node_slot_t) + round_up(payload, 64));
}

static void lay_out(wf_node_coll_t *n, void *base, int size, uint32_t payload)
{
    size_t lines = WF_NODE_DEPTH * (size_t)size;
    n->head = base;
    n->pids = (int32_t *)((char *)base + sizeof(wf_node_head_t));
    n->headers = (wf_node_slot_t *)((char *)n->pids +
                                    round_up((size_t)size * 4, 64));
    n->data = (char *)(n->headers + lines);
    n->data_stride = round_up(payload, 64);
    n->map_bytes = map_bytes(size, payload);
    n->payload = payload;
}

/* Rank 0: a fresh segment; *fd stays open for the others to attach. */
static bool create_segment(wf_comm_impl_t *c, wf_node_coll_t *n, int *fd,
                           uint64_t nonce)
{
    uint64_t want = c->cfg.node_coll_max;
    uint64_t fit = WF_NODE_SLOTS_MAX / WF_NODE_DEPTH / (size_t)c->size;
    fit = fit > sizeof(wf_node_slot_t) ? fit - sizeof(wf_node_slot_t) : 0;
    if (want > fit)
        want = fit;
    if (want > WF_NODE_PAYLOAD_MAX)
        want = WF_NODE_PAYLOAD_MAX;
    uint32_t payload = (uint32_t)(want / 64 * 64);
    size_t len = map_bytes(c->size, payload);
    *fd = memfd_create("weft-node", MFD_CLOEXEC);
    if (*fd < 0 || ftruncate(*fd, (off_t)len) != 0) {
        WEFT_INFO(INIT, "node collectives off: shared segment of %zu bytes: "
                  "%s", len, wf_errno_str(errno));
        return false;
    }
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (base == MAP_FAILED) {
        WEFT_INFO(INIT, "node collectives off: mapping %zu bytes: %s", len,
                  wf_errno_str(errno));
        return false;
    }
    lay_out(n, base, c->size, payload);
    n->head->magic = WF_NODE_MAGIC;
    n->head->comm_key = c->comm_key;
    n->head->nonce = nonce;
    n->head->size = (uint32_t)c->size;
    n->head->payload = payload;
    return true;
}

/* The others: rank 0's segment, checked against its record. */
static bool attach_segment(wf_comm_impl_t *c, wf_node_coll_t *n,
                           const char *record)
{
    int pid = 0, fd = -1;
    uint64_t nonce = 0, reach = 0;
    if (sscanf(record, "%d %d %" SCNx64 " %" SCNx64, &pid, &fd, &nonce,
               &reach) != 4) {
        WEFT_INFO(INIT, "node collectives off: rank 0 has no segment (%s)",
                  record);
        return false;
    }
    if (reach != wf_shared_memory_key()) {
        /* Another network namespace: the shared-memory transport does not
         * reach rank 0 either, so neither does the segment. */
        WEFT_INFO(INIT, "node collectives off: rank 0 is in another network "
                  "namespace");
        return false;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (mine < 0 || fstat(mine, &sb) != 0) {
        WEFT_INFO(INIT, "node collectives off: opening rank 0's segment %s: "
                  "%s", path, wf_errno_str(errno));
        if (mine >= 0)
            close(mine);
        return false;
    }
    void *base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE,
                      MAP_SHARED, mine, 0);
    close(mine);
    if (base == MAP_FAILED)
        return false;
    const wf_node_head_t *h = base;
    if ((size_t)sb.st_size < sizeof(*h) || h->magic != WF_NODE_MAGIC ||
        h->comm_key != c->comm_key || h->nonce != nonce ||
        h->size != (uint32_t)c->size || h->payload > WF_NODE_PAYLOAD_MAX ||
        map_bytes(c->size, h->payload) != (size_t)sb.st_size) {
        WEFT_WARN(INIT, "node collectives off: %s is not this "
                  "communicator's segment", path);
        munmap(base, (size_t)sb.st_size);
        return false;
    }
    lay_out(n, base, c->size, h->payload);
    return true;
}

/* Every rank says whether it attached; all use the segment or none. */
static weft_status_t agree(wf_comm_impl_t *c, bool attached, bool *all)
{
    int64_t total = 0;
    WEFT_CHECK(wf_store_add(c->store, "node/attached", attached, &total));
    WEFT_CHECK(wf_store_barrier(c->store, "node/said", c->rank, c->size,
                                wf_store_wait_ms(c->cfg.timeout_ms)));
    WEFT_CHECK(wf_store_add(c->store, "node/attached", 0, &total));
    *all = total == c->size;
    if (!*all && attached)
        WEFT_INFO(INIT, "node collectives off: %lld of %d ranks attached "
                  "the shared segment", (long long)total, c->size);
    return WEFT_OK;
}

static void open_pidfds(wf_node_coll_t *n)
{
    n->pidfds = malloc((size_t)n->size * sizeof(int));
    for (int r = 0; n->pidfds && r < n->size; r++) {
        n->pidfds[r] = -1;
        if (r == n->rank || n->pids[r] == n->pids[n->rank])
            continue; /* this process (ranks as threads) */
#ifdef SYS_pidfd_open
        n->pidfds[r] = (int)syscall(SYS_pidfd_open, n->pids[r], 0);
#endif
    }
}

static bool shm_allowed(const char *transports)
{
    /* Ranks told to use only tcp or ib do not meet in memory either. */
    return strcmp(transports, "auto") == 0 || strstr(transports, "shm");
}

weft_status_t wf_node_coll_open(wf_comm_impl_t *c)
{
    c->node_coll = NULL;
    if (c->size < 2 || c->local_size != c->size)
        return WEFT_OK; /* the same answer on every rank */
    bool want = c->cfg.node_coll_max > 0 && shm_allowed(c->cfg.transport);
    wf_node_coll_t *n = calloc(1, sizeof(*n));
    if (n && !(n->peers = calloc((size_t)c->size, sizeof(*n->peers)))) {
        free(n);
        n = NULL;
    }
    bool attached = false;
    int fd = -1;
    if (n) {
        n->rank = c->rank;
        n->size = c->size;
        n->timeout_ms = c->cfg.timeout_ms;
        n->spin_polls = c->size <= c->host_cores ? 200 : 0;
    }
    weft_status_t st = WEFT_OK;
    if (c->rank == 0) {
        uint64_t nonce = 0;
        char record[96] = "none";
        attached = n && want && wf_auth_random(&nonce, sizeof(nonce)) ==
                                    WEFT_OK && create_segment(c, n, &fd, nonce);
        if (attached)
            snprintf(record, sizeof(record), "%d %d %" PRIx64 " %" PRIx64,
                     (int)getpid(), fd, nonce, wf_shared_memory_key());
        st = wf_store_set(c->store, "node/seg", record, strlen(record));
    } else {
        char record[96];
        size_t len = 0;
        st = wf_store_get(c->store, "node/seg", record, sizeof(record) - 1,
                          &len, wf_store_wait_ms(c->cfg.timeout_ms));
        record[st == WEFT_OK ? len : 0] = '\0';
        attached = st == WEFT_OK && n && want && attach_segment(c, n, record);
    }
    if (attached)
        n->pids[c->rank] = (int32_t)getpid();
    bool all = false;
    if (st == WEFT_OK)
        st = agree(c, attached, &all);
    if (fd >= 0)
        close(fd);
    if (n && attached && all) {
        open_pidfds(n);
        c->node_coll = n;
        WEFT_DEBUG(INIT, "node collectives: %d ranks, up to %u bytes per "
                   "rank through the shared segment", n->size, n->payload);
        return st;
    }
    if (n && n->head)
        munmap(n->head, n->map_bytes);
    if (n)
        free(n->peers);
    free(n);
    return st;
}

void wf_node_coll_close(wf_node_coll_t *n)
{
    if (!n)
        return;
    for (int r = 0; n->pidfds && r < n->size; r++)
        if (n->pidfds[r] >= 0)
            close(n->pidfds[r]);
    free(n->pidfds);
    free(n->peers);
    munmap(n->head, n->map_bytes);
    free(n);
}

/* ---- the failure board --------------------------------------------------- */

static void board_post(void *arg, weft_status_t status, int origin,
                       const char *msg)
{
    wf_node_coll_t *n = arg;
    wf_node_head_t *h = n->head;
    uint32_t free_board = 0;
    if (!__atomic_compare_exchange_n(&h->claim, &free_board,
                                     (uint32_t)n->rank + 1, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* someone else's failure came first */
    h->status = status;
    h->origin = wf_failure_text(n->rank, origin, status, msg, h->text,
                                sizeof(h->text));
    __atomic_store_n(&h->posted, 1, __ATOMIC_RELEASE);
}

bool wf_node_board_adopt(wf_node_coll_t *n, wf_engine_t *e)
{
    wf_node_head_t *h = n->head;
    if (!__atomic_load_n(&h->posted, __ATOMIC_ACQUIRE) ||
        h->origin == n->rank)
        return false;
    weft_status_t st = (weft_status_t)h->status;
    if (st == WEFT_ERR_ABORTED || st >= 0)
        st = WEFT_ERR_REMOTE; /* a peer's abort, as a notice says it */
    char text[WF_ERRMSG_MAX];
    wf_strlcpy(text, h->text, sizeof(text));
    wf_engine_adopt(e, st, h->origin, text);
    return true;
}

static void board_poll(void *arg, wf_engine_t *e)
{
    (void)wf_node_board_adopt(arg, e);
}

void wf_node_coll_hooks(wf_node_coll_t *n, wf_engine_params_t *ep)
{
    if (!n)
        return;
    ep->board_post = board_post;
    ep->board_poll = board_poll;
    ep->board_arg = n;
}

void wf_node_coll_set_engine(wf_node_coll_t *n, wf_engine_t *e)
{
    if (n)
        n->engine = e;
}
