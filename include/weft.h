/*
 * weft.h - the only public header of weft, a collective-communication library.
 *
 * Conventions that hold for every function below unless its comment says
 * otherwise:
 *  - Every function returns a weft_status_t: WEFT_OK (0) on success,
 *    WEFT_INPROGRESS (1) for "not finished yet", a negative WEFT_ERR_* value
 *    on failure.  Output parameters are written only on success.
 *  - Buffers passed to a collective belong to the caller and must stay valid
 *    (and, for send buffers, unchanged) until the operation completes: for a
 *    blocking call until it returns, for a non-blocking call until weft_test
 *    reports completion or weft_wait returns.  An operation that failed
 *    may leave receives posted that a late message still fills: its
 *    buffers stay the library's until the communicator is aborted or
 *    destroyed (as a failed NCCL communicator is aborted).
 *  - Argument order follows NCCL: send buffer, receive buffer, count, dtype,
 *    op or root, communicator.  sendbuf == recvbuf means in place.
 *  - A communicator may be used from several threads, but collectives must be
 *    issued in the same order on every rank; the library serialises calls that
 *    arrive concurrently in the order they take the communicator's lock.
 *  - The library never prints; it logs through the logger (see
 *    weft_set_logger), which by default writes warnings to stderr.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_API __attribute__((visibility("default")))

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
/* Encoded as MAJOR*10000 + MINOR*100 + PATCH, as returned by weft_get_version. */
#define WEFT_VERSION_CODE                                                      \
    (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)

/*
 * Status codes.  One list gives the enum, weft_status_name and weft_strerror.
 * X(NAME, value, "description")
 */
#define WEFT_STATUS_LIST(X)                                                    \
    X(OK, 0, "success")                                                        \
    X(INPROGRESS, 1, "operation in progress")                                  \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                 \
    X(ERR_INVALID_USAGE, -2, "invalid usage")                                  \
    X(ERR_NO_MEMORY, -3, "out of memory")                                      \
    X(ERR_SYSTEM, -4, "system call failed")                                    \
    X(ERR_TRANSPORT, -5, "transport error")                                    \
    X(ERR_REMOTE, -6, "remote peer failed")                                    \
    X(ERR_TIMEOUT, -7, "operation timed out")                                  \
    X(ERR_ABORTED, -8, "communicator aborted")                                 \
    X(ERR_MISMATCH, -9, "ranks called mismatched operations")                  \
    X(ERR_UNSUPPORTED, -10, "operation not supported")                         \
    X(ERR_AUTH, -11, "authentication failed")                                  \
    X(ERR_CUDA, -12, "CUDA error")                                             \
    X(ERR_INTERNAL, -13, "internal error")                                     \
    X(ERR_AGAIN, -14, "resource temporarily unavailable, try again")

typedef enum {
#define WEFT_STATUS_ENUM_(name, value, text) WEFT_##name = value,
    WEFT_STATUS_LIST(WEFT_STATUS_ENUM_)
#undef WEFT_STATUS_ENUM_
} weft_status_t;

/* Element types.  Values are part of the ABI and never change. */
typedef enum {
    WEFT_INT8 = 0,
    WEFT_UINT8 = 1,
    WEFT_INT32 = 2,
    WEFT_UINT32 = 3,
    WEFT_INT64 = 4,
    WEFT_UINT64 = 5,
    WEFT_FLOAT16 = 6,  /* IEEE 754 binary16 */
    WEFT_BFLOAT16 = 7, /* bfloat16: the upper half of a binary32 */
    WEFT_FLOAT32 = 8,
    WEFT_FLOAT64 = 9,
    WEFT_INT16 = 10,
    WEFT_UINT16 = 11,
    /* OCP FP8 (NCCL's ncclFloat8e4m3 / ncclFloat8e5m2).  e4m3 is the "fn"
     * variant: 4 exponent bits (bias 7), 3 mantissa bits, no infinities,
     * S.1111.111 the only NaN, largest finite 448.  e5m2: 5 exponent bits
     * (bias 15), 2 mantissa bits, IEEE-like with infinities and NaNs,
     * largest finite 57344. */
    WEFT_FLOAT8_E4M3 = 12,
    WEFT_FLOAT8_E5M2 = 13,
    WEFT_DTYPE_COUNT = 14
} weft_dtype_t;

/*
 * Reduction operations.  Integers wrap on overflow.  For floating point,
 * min/max return NaN when either input is NaN and order -0 below +0;
 * float16/bfloat16 are computed in float32 and rounded to nearest even.
 * The float8 types are computed in float32 too (every op, min and max
 * included) and rounded to nearest even with saturation: a result beyond
 * the largest finite value, an infinity included, becomes the largest
 * finite value with its sign (CUDA's __NV_SATFINITE, as NCCL); NaN stays
 * NaN.
 * WEFT_AVG sums and divides by the communicator size once at the end
 * (integer types: C division, truncating toward zero).
 * The bitwise ops (BAND, BOR, BXOR) and the logical ones (LAND, LOR, as
 * MPI_LAND and MPI_LOR: nonzero is true, the result is 1 or 0; on a
 * communicator of one rank the input comes back unchanged, as in MPI) take
 * integer dtypes only; with a float dtype the call fails with
 * WEFT_ERR_INVALID_ARG.
 */
typedef enum {
    WEFT_SUM = 0,
    WEFT_PROD = 1,
    WEFT_MIN = 2,
    WEFT_MAX = 3,
    WEFT_AVG = 4,
    WEFT_BAND = 5,
    WEFT_BOR = 6,
    WEFT_BXOR = 7,
    WEFT_LAND = 8,
    WEFT_LOR = 9,
    WEFT_OP_COUNT = 10
} weft_op_t;

typedef struct weft_comm *weft_comm_t;       /* opaque communicator */
typedef struct weft_request *weft_request_t; /* opaque request */
typedef struct weft_server *weft_server_t;   /* opaque rendezvous server */

/* ------------------------------------------------------------------------ */
/* Status, version, logging, configuration                                  */
/* ------------------------------------------------------------------------ */

/* A static, human-readable description of `status` ("unknown status" for
 * values outside the list).  Thread-safe. */
WEFT_API const char *weft_strerror(weft_status_t status);

/* The static name of `status` without prefix, e.g. "ERR_TIMEOUT".
 * Thread-safe. */
WEFT_API const char *weft_status_name(weft_status_t status);

/* The library version as WEFT_VERSION_CODE of the built library. */
WEFT_API int weft_get_version(void);

typedef enum {
    WEFT_LOG_NONE = 0,
    WEFT_LOG_ERROR = 1,
    WEFT_LOG_WARN = 2,
    WEFT_LOG_INFO = 3,
    WEFT_LOG_DEBUG = 4,
    WEFT_LOG_TRACE = 5
} weft_log_level_t;

/* Receives each log line that passed the WEFT_LOG / WEFT_LOG_SUBSYS filters.
 * `line` is the full formatted line including the host:pid:tid prefix and
 * no trailing newline; it is valid only during the call.  Called from any
 * library thread, possibly concurrently. */
typedef void (*weft_log_fn)(void *ctx, weft_log_level_t level,
                            const char *subsys, const char *line);

/* Installs `fn` as the process-wide logger (NULL restores the default, which
 * writes to stderr or WEFT_LOG_FILE).  Thread-safe; affects later lines. */
WEFT_API weft_status_t weft_set_logger(weft_log_fn fn, void *ctx);

/* Writes every configuration knob (WEFT_* variable) with its current value,
 * where the value came from (default, environment) and a one-line
 * description to `out`.  Thread-safe. */
WEFT_API weft_status_t weft_config_dump(FILE *out);

/* Writes the knob table as a markdown document (how docs/env.md is made).
 * Thread-safe. */
WEFT_API weft_status_t weft_config_dump_markdown(FILE *out);

/* A static one-line description of what this library was built with, e.g.
 * "transports: tcp; cuda: no".  Thread-safe. */
WEFT_API const char *weft_build_info(void);

/* ------------------------------------------------------------------------ */
/* Communicators                                                            */
/* ------------------------------------------------------------------------ */

/* Bits of weft_comm_params_t.field_mask: only fields whose bit is set are
 * read; the others take their value from the environment or the default. */
enum {
    WEFT_COMM_PARAM_RANK = 1u << 0,
    WEFT_COMM_PARAM_SIZE = 1u << 1,
    WEFT_COMM_PARAM_RENDEZVOUS = 1u << 2,
    WEFT_COMM_PARAM_JOB_ID = 1u << 3,
    WEFT_COMM_PARAM_TIMEOUT = 1u << 4,
    WEFT_COMM_PARAM_CONFIG = 1u << 5,
    WEFT_COMM_PARAM_TOKEN = 1u << 6
};

/*
 * Explicit communicator parameters.  Fields are only ever appended.
 *  rank, size     this process's rank in [0, size) and the world size.
 *  rendezvous     where ranks meet: "HOST:PORT" (a weft-rendezvous server,
 *                 IPv6 as "[addr]:port"), "file:///shared/dir" (a directory
 *                 on a shared file system) or "mem://NAME" (ranks that are
 *                 threads of one process).
 *  job_id         names the job on a shared rendezvous server; all ranks of a
 *                 job must pass the same string.
 *  timeout_ms     deadline for every blocking step and every operation.
 *  config         comma-separated KEY=VALUE overrides of WEFT_* knobs for this
 *                 communicator only, e.g. "WEFT_CHUNK_SIZE=64k,WEFT_LOG=info";
 *                 they take precedence over the environment.
 *  token          shared secret of the job (see WEFT_TOKEN).
 * Strings are copied; the struct may be freed after the call.
 */
typedef struct {
    uint64_t field_mask;
    int rank;
    int size;
    const char *rendezvous;
    const char *job_id;
    int64_t timeout_ms;
    const char *config;
    const char *token;
} weft_comm_params_t;

/* Creates a communicator from explicit parameters (fields not in field_mask
 * come from the environment, see weft_comm_init).  Blocks until every rank
 * of the job has joined the rendezvous or the timeout passes.  Collective:
 * all `size` ranks must call it.  Thread-safe. */
WEFT_API weft_status_t weft_comm_create(const weft_comm_params_t *params,
                                        weft_comm_t *comm);

/* Creates a communicator from the launch environment: WEFT_RANK,
 * WEFT_WORLD_SIZE, WEFT_RENDEZVOUS, WEFT_JOB_ID; when absent, torchrun
 * (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Slurm (SLURM_PROCID,
 * SLURM_NTASKS), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or
 * PMI (PMI_RANK, PMI_SIZE).  Blocking and collective like weft_comm_create. */
WEFT_API weft_status_t weft_comm_init(weft_comm_t *comm);

/* Waits for the communicator's pending operations (up to its timeout), then
 * releases it and its connections.  `comm` must not be used afterwards;
 * later calls with it return WEFT_ERR_INVALID_USAGE while the handle memory
 * is still recognisable.  NULL is accepted.  Not to be called concurrently
 * with other calls on the same communicator. */
WEFT_API weft_status_t weft_comm_destroy(weft_comm_t comm);

/* Fails every pending and later operation of `comm` with WEFT_ERR_ABORTED,
 * closes its connections and releases it.  Returns promptly.  NULL is
 * accepted. */
WEFT_API weft_status_t weft_comm_abort(weft_comm_t comm);

/* Color that excludes a rank from every communicator weft_comm_split
 * creates. */
#define WEFT_UNDEFINED (-1)

/* Splits `comm` into disjoint communicators, one per distinct `color`
 * (>= 0): ranks with the same color form a new communicator, ranked by
 * `key` and then by their rank in `comm`.  A rank passing WEFT_UNDEFINED
 * takes part in the call and gets NULL in *newcomm.  The new communicator
 * has its own connections and its own namespace on the rendezvous, and
 * inherits comm's settings.  Blocking and collective over `comm`. */
WEFT_API weft_status_t weft_comm_split(weft_comm_t comm, int color, int key,
                                       weft_comm_t *newcomm);

/* A new communicator of the same ranks in the same order, with its own
 * connections, tag space and namespace on the rendezvous (MPI_Comm_dup):
 * for a library layered on a caller's communicator, whose messages must
 * never match the caller's.  Inherits comm's settings.  Blocking and
 * collective over `comm`, in the same order as its splits. */
WEFT_API weft_status_t weft_comm_dup(weft_comm_t comm, weft_comm_t *newcomm);

/* After a failure, creates a communicator of the ranks of `comm` that are
 * still alive (like ULFM's MPI_Comm_shrink or ncclCommShrink), so that an
 * elastic job can go on without restarting every process.  Every surviving
 * rank calls it; they keep their relative order.  A rank is left out when
 * a survivor saw its connection break, or when it has not called
 * weft_comm_shrink within twice comm's timeout plus 2 s of the first
 * caller (a survivor may learn of the failure only from its own timeout);
 * such a rank
 * calling it later gets WEFT_ERR_REMOTE and no communicator.  Works on a
 * failed communicator (then destroy `comm`) and on a healthy one (every
 * rank stays).  Agrees through the rendezvous, not the data connections.
 * Blocking and collective over the survivors. */
WEFT_API weft_status_t weft_comm_shrink(weft_comm_t comm,
                                        weft_comm_t *newcomm);

/* This process's rank / the number of ranks.  Thread-safe, non-blocking. */
WEFT_API weft_status_t weft_comm_rank(weft_comm_t comm, int *rank);
WEFT_API weft_status_t weft_comm_size(weft_comm_t comm, int *size);

/* Where this rank sits among the machines of the communicator: what
 * Horovod calls local_rank/local_size/cross_rank/cross_size, and MPI gets
 * from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).  Ranks share a machine
 * when they run under one kernel with one hostname; machines are numbered
 * in the order of their lowest rank. */
typedef enum {
    WEFT_COMM_LOCAL_RANK = 0, /* index among the ranks of this machine,
                               * in rank order */
    WEFT_COMM_LOCAL_SIZE = 1, /* ranks on this machine */
    WEFT_COMM_NODE = 2,       /* this machine's index, 0 .. NODES - 1 */
    WEFT_COMM_NODES = 3,      /* machines the communicator spans */
    WEFT_COMM_CROSS_RANK = 4, /* index among the ranks of the same local
                               * rank on every machine (Horovod's
                               * cross_rank; the machine's index when
                               * every machine runs the same count) */
    WEFT_COMM_CROSS_SIZE = 5, /* ranks of this local rank on all machines */
} weft_comm_attr_t;

/* Writes attribute `attr` of `comm` to *value.  Thread-safe,
 * non-blocking; WEFT_ERR_INVALID_ARG for an unknown attr or NULL value. */
WEFT_API weft_status_t weft_comm_query(weft_comm_t comm,
                                       weft_comm_attr_t attr, int *value);

/* The first error the communicator met (sticky), with its cause, or NULL in
 * *message when there was none.  The string belongs to the communicator and
 * lives as long as it does.  Returns that error's status (WEFT_OK if none).
 * Thread-safe. */
WEFT_API weft_status_t weft_comm_get_error(weft_comm_t comm,
                                           const char **message);

/* ------------------------------------------------------------------------ */
/* Collectives and point-to-point                                           */
/* ------------------------------------------------------------------------ */

/* Reduces `count` elements of `sendbuf` across all ranks with `op` and
 * writes the result to `recvbuf` on every rank.  Blocking and collective. */
WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype,
                                      weft_op_t op, weft_comm_t comm);

/* Copies `count` elements from `sendbuf` on rank `root` to `recvbuf` on
 * every rank (sendbuf is read on the root only and may be NULL elsewhere;
 * sendbuf == recvbuf is in place).  Blocking and collective. */
WEFT_API weft_status_t weft_broadcast(const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype,
                                      int root, weft_comm_t comm);

/* Reduces `count` elements of every rank's `sendbuf` with `op` into
 * `recvbuf` on rank `root` (recvbuf is written on the root only and may be
 * NULL elsewhere).  Blocking and collective. */
WEFT_API weft_status_t weft_reduce(const void *sendbuf, void *recvbuf,
                                   size_t count, weft_dtype_t dtype,
                                   weft_op_t op, int root, weft_comm_t comm);

/* Gathers `sendcount` elements from every rank into `recvbuf` on every
 * rank, rank r's block at offset r * sendcount.  In place when sendbuf ==
 * recvbuf + rank * sendcount elements.  Blocking and collective. */
WEFT_API weft_status_t weft_allgather(const void *sendbuf, void *recvbuf,
                                      size_t sendcount, weft_dtype_t dtype,
                                      weft_comm_t comm);

/* Reduces size * recvcount elements of every rank's `sendbuf` with `op`;
 * rank r receives block r (recvcount elements) in `recvbuf`.  In place when
 * recvbuf == sendbuf + rank * recvcount elements.  Blocking, collective. */
WEFT_API weft_status_t weft_reduce_scatter(const void *sendbuf, void *recvbuf,
                                           size_t recvcount,
                                           weft_dtype_t dtype, weft_op_t op,
                                           weft_comm_t comm);

/* Every rank sends block p (`count` elements at offset p * count of
 * sendbuf) to rank p, which stores it at offset r * count of its recvbuf,
 * r being the sender.  sendbuf == recvbuf is in place.  Blocking and
 * collective. */
WEFT_API weft_status_t weft_alltoall(const void *sendbuf, void *recvbuf,
                                     size_t count, weft_dtype_t dtype,
                                     weft_comm_t comm);

/* Returns once every rank has entered the barrier.  Collective. */
WEFT_API weft_status_t weft_barrier(weft_comm_t comm);

/* Gathers `sendcount` elements from every rank into `recvbuf` on `root`
 * (rank r's block at offset r * sendcount; recvbuf may be NULL elsewhere).
 * In place on the root when sendbuf == recvbuf + root * sendcount.
 * Blocking and collective. */
WEFT_API weft_status_t weft_gather(const void *sendbuf, void *recvbuf,
                                   size_t sendcount, weft_dtype_t dtype,
                                   int root, weft_comm_t comm);

/* Sends block r (`recvcount` elements at offset r * recvcount of sendbuf on
 * `root`) to rank r's recvbuf (sendbuf may be NULL elsewhere).  In place on
 * the root when recvbuf == sendbuf + root * recvcount.  Blocking and
 * collective. */
WEFT_API weft_status_t weft_scatter(const void *sendbuf, void *recvbuf,
                                    size_t recvcount, weft_dtype_t dtype,
                                    int root, weft_comm_t comm);

/* Vector collectives, as MPI's: a count per rank.  Counts and
 * displacements are in elements of `dtype`; a block is `counts[r]`
 * elements at element offset `displs[r]` of its buffer.  Blocks may be
 * empty and laid out in any order, but receive blocks may not overlap
 * (WEFT_ERR_INVALID_ARG).  Every rank passes the same recvcounts to
 * weft_allgatherv and weft_reduce_scatterv (ranks that disagree get
 * WEFT_ERR_MISMATCH); for weft_gatherv, weft_scatterv and weft_alltoallv a
 * count given on one side that differs from the other side's is
 * WEFT_ERR_MISMATCH naming both ranks.  Blocking and collective. */

/* Rank r's `sendcount` elements go to every rank's recvbuf at displs[r];
 * sendcount equals recvcounts[rank].  In place when sendbuf == recvbuf +
 * displs[rank] elements. */
WEFT_API weft_status_t weft_allgatherv(const void *sendbuf, size_t sendcount,
                                       void *recvbuf,
                                       const size_t *recvcounts,
                                       const size_t *displs,
                                       weft_dtype_t dtype, weft_comm_t comm);

/* Rank r's `sendcount` elements go to the root's recvbuf at displs[r]
 * (recvbuf, recvcounts and displs are read on the root only).  In place
 * on the root when sendbuf == recvbuf + displs[root] elements. */
WEFT_API weft_status_t weft_gatherv(const void *sendbuf, size_t sendcount,
                                    void *recvbuf, const size_t *recvcounts,
                                    const size_t *displs, weft_dtype_t dtype,
                                    int root, weft_comm_t comm);

/* The root's sendcounts[r] elements at displs[r] go to rank r's recvbuf
 * (`recvcount` elements; sendbuf, sendcounts and displs are read on the
 * root only).  In place on the root when recvbuf == sendbuf +
 * displs[root] elements. */
WEFT_API weft_status_t weft_scatterv(const void *sendbuf,
                                     const size_t *sendcounts,
                                     const size_t *displs, void *recvbuf,
                                     size_t recvcount, weft_dtype_t dtype,
                                     int root, weft_comm_t comm);

/* Rank r sends sendcounts[p] elements at sdispls[p] to rank p, which
 * stores them at rdispls[r] of its recvbuf; recvcounts[r] there equals
 * sendcounts[p] here.  In place when sendbuf == recvbuf: the data to send
 * is read with recvcounts and rdispls (sendcounts and sdispls are then
 * ignored and may be NULL), as MPI_IN_PLACE. */
WEFT_API weft_status_t weft_alltoallv(const void *sendbuf,
                                      const size_t *sendcounts,
                                      const size_t *sdispls, void *recvbuf,
                                      const size_t *recvcounts,
                                      const size_t *rdispls,
                                      weft_dtype_t dtype, weft_comm_t comm);

/* Reduces the sum of recvcounts elements of every rank's sendbuf with
 * `op`; rank r receives block r (recvcounts[r] elements, the blocks lying
 * one after another in sendbuf) in recvbuf.  In place when recvbuf ==
 * sendbuf + the elements of the blocks before rank's. */
WEFT_API weft_status_t weft_reduce_scatterv(const void *sendbuf,
                                            void *recvbuf,
                                            const size_t *recvcounts,
                                            weft_dtype_t dtype, weft_op_t op,
                                            weft_comm_t comm);

/* A receive's `peer` that takes the first matching message from any rank
 * (weft_irecv, weft_recv_tag; weft_request_source tells which). */
#define WEFT_ANY_SOURCE (-2)

/* Sends `count` elements of `buf` to rank `peer`.  Messages between one pair
 * of ranks are matched in the order they were posted.  Blocks until the send
 * buffer may be reused (not necessarily until the peer received it). */
WEFT_API weft_status_t weft_send(const void *buf, size_t count,
                                 weft_dtype_t dtype, int peer,
                                 weft_comm_t comm);

/* Receives `count` elements from rank `peer` (or WEFT_ANY_SOURCE) into
 * `buf`.  Blocking.  The message must have the same count and dtype;
 * otherwise WEFT_ERR_MISMATCH. */
WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype,
                                 int peer, weft_comm_t comm);

/* Tagged point-to-point, as MPI's: a message matches a receive of the
 * same tag (0 to WEFT_TAG_MAX) only, and messages of one pair with the
 * same tag match in the order they were posted, while different tags
 * match independently.  weft_send and weft_recv use tag 0.  A receive from
 * WEFT_ANY_SOURCE takes the first message of its tag to arrive from any
 * rank; receives posted after it with that tag wait until it has one.
 * weft_recv_tag stores the sender in *source (may be NULL). */
#define WEFT_TAG_MAX 0x7fffffff
WEFT_API weft_status_t weft_send_tag(const void *buf, size_t count,
                                     weft_dtype_t dtype, int peer, int tag,
                                     weft_comm_t comm);
WEFT_API weft_status_t weft_recv_tag(void *buf, size_t count,
                                     weft_dtype_t dtype, int peer, int tag,
                                     weft_comm_t comm, int *source);

/* Non-blocking twins: start the operation and return a request in *req.
 * The operation progresses in the background (a progress thread per
 * communicator), so the caller can compute meanwhile.  The request must be
 * released with weft_request_free. */
WEFT_API weft_status_t weft_iallreduce(const void *sendbuf, void *recvbuf,
                                       size_t count, weft_dtype_t dtype,
                                       weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req);
WEFT_API weft_status_t weft_ibroadcast(const void *sendbuf, void *recvbuf,
                                       size_t count, weft_dtype_t dtype,
                                       int root, weft_comm_t comm,
                                       weft_request_t *req);
WEFT_API weft_status_t weft_ireduce(const void *sendbuf, void *recvbuf,
                                    size_t count, weft_dtype_t dtype,
                                    weft_op_t op, int root, weft_comm_t comm,
                                    weft_request_t *req);
WEFT_API weft_status_t weft_iallgather(const void *sendbuf, void *recvbuf,
                                       size_t sendcount, weft_dtype_t dtype,
                                       weft_comm_t comm, weft_request_t *req);
WEFT_API weft_status_t weft_ireduce_scatter(const void *sendbuf,
                                            void *recvbuf, size_t recvcount,
                                            weft_dtype_t dtype, weft_op_t op,
                                            weft_comm_t comm,
                                            weft_request_t *req);
WEFT_API weft_status_t weft_ialltoall(const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype,
                                      weft_comm_t comm, weft_request_t *req);
WEFT_API weft_status_t weft_ibarrier(weft_comm_t comm, weft_request_t *req);
WEFT_API weft_status_t weft_igather(const void *sendbuf, void *recvbuf,
                                    size_t sendcount, weft_dtype_t dtype,
                                    int root, weft_comm_t comm,
                                    weft_request_t *req);
WEFT_API weft_status_t weft_iscatter(const void *sendbuf, void *recvbuf,
                                     size_t recvcount, weft_dtype_t dtype,
                                     int root, weft_comm_t comm,
                                     weft_request_t *req);
WEFT_API weft_status_t weft_isend(const void *buf, size_t count,
                                  weft_dtype_t dtype, int peer,
                                  weft_comm_t comm, weft_request_t *req);
WEFT_API weft_status_t weft_irecv(void *buf, size_t count, weft_dtype_t dtype,
                                  int peer, weft_comm_t comm,
                                  weft_request_t *req);
WEFT_API weft_status_t weft_isend_tag(const void *buf, size_t count,
                                      weft_dtype_t dtype, int peer, int tag,
                                      weft_comm_t comm, weft_request_t *req);
WEFT_API weft_status_t weft_irecv_tag(void *buf, size_t count,
                                      weft_dtype_t dtype, int peer, int tag,
                                      weft_comm_t comm, weft_request_t *req);

/* The vector collectives' non-blocking twins.  The count and
 * displacement arrays are read before the call returns. */
WEFT_API weft_status_t weft_iallgatherv(const void *sendbuf, size_t sendcount,
                                        void *recvbuf,
                                        const size_t *recvcounts,
                                        const size_t *displs,
                                        weft_dtype_t dtype, weft_comm_t comm,
                                        weft_request_t *req);
WEFT_API weft_status_t weft_igatherv(const void *sendbuf, size_t sendcount,
                                     void *recvbuf, const size_t *recvcounts,
                                     const size_t *displs, weft_dtype_t dtype,
                                     int root, weft_comm_t comm,
                                     weft_request_t *req);
WEFT_API weft_status_t weft_iscatterv(const void *sendbuf,
                                      const size_t *sendcounts,
                                      const size_t *displs, void *recvbuf,
                                      size_t recvcount, weft_dtype_t dtype,
                                      int root, weft_comm_t comm,
                                      weft_request_t *req);
WEFT_API weft_status_t weft_ialltoallv(const void *sendbuf,
                                       const size_t *sendcounts,
                                       const size_t *sdispls, void *recvbuf,
                                       const size_t *recvcounts,
                                       const size_t *rdispls,
                                       weft_dtype_t dtype, weft_comm_t comm,
                                       weft_request_t *req);
WEFT_API weft_status_t weft_ireduce_scatterv(const void *sendbuf,
                                             void *recvbuf,
                                             const size_t *recvcounts,
                                             weft_dtype_t dtype, weft_op_t op,
                                             weft_comm_t comm,
                                             weft_request_t *req);

/* Stream-ordered twins, as in NCCL: each enqueues the operation on a CUDA
 * stream (`stream` is a cudaStream_t) and returns at once without blocking
 * the host thread.  The operation starts when the work enqueued on the
 * stream before it is done; the work enqueued after it waits until it
 * ends.  Buffers are normally device memory.  An error found while the
 * operation runs fails the communicator (weft_comm_get_error, and every
 * later call); the stream is released all the same.  Operations on one
 * communicator start in the order they were called.  Needs the device
 * layer (libweft_cuda.so): WEFT_ERR_CUDA, with the reason, without it. */
WEFT_API weft_status_t weft_allreduce_stream(const void *sendbuf,
                                             void *recvbuf, size_t count,
                                             weft_dtype_t dtype, weft_op_t op,
                                             weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_broadcast_stream(const void *sendbuf,
                                             void *recvbuf, size_t count,
                                             weft_dtype_t dtype, int root,
                                             weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_reduce_stream(const void *sendbuf, void *recvbuf,
                                          size_t count, weft_dtype_t dtype,
                                          weft_op_t op, int root,
                                          weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_allgather_stream(const void *sendbuf,
                                             void *recvbuf, size_t sendcount,
                                             weft_dtype_t dtype,
                                             weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_reduce_scatter_stream(const void *sendbuf,
                                                  void *recvbuf,
                                                  size_t recvcount,
                                                  weft_dtype_t dtype,
                                                  weft_op_t op,
                                                  weft_comm_t comm,
                                                  void *stream);
WEFT_API weft_status_t weft_alltoall_stream(const void *sendbuf,
                                            void *recvbuf, size_t count,
                                            weft_dtype_t dtype,
                                            weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_gather_stream(const void *sendbuf, void *recvbuf,
                                          size_t sendcount, weft_dtype_t dtype,
                                          int root, weft_comm_t comm,
                                          void *stream);
WEFT_API weft_status_t weft_scatter_stream(const void *sendbuf, void *recvbuf,
                                           size_t recvcount,
                                           weft_dtype_t dtype, int root,
                                           weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_send_stream(const void *buf, size_t count,
                                        weft_dtype_t dtype, int peer,
                                        weft_comm_t comm, void *stream);
WEFT_API weft_status_t weft_recv_stream(void *buf, size_t count,
                                        weft_dtype_t dtype, int peer,
                                        weft_comm_t comm, void *stream);

/* Grouped operations, as NCCL's group calls.  Between weft_group_start
 * and weft_group_end, this thread's blocking collective and
 * point-to-point calls, on any communicator, are recorded and return
 * WEFT_OK at once; weft_group_end starts them all in the order they were
 * made, lets them progress together and returns when every one has
 * finished: the first failure, or WEFT_OK.  A halo exchange of sends and
 * receives in any order is thus one step that cannot deadlock.  Buffers
 * must stay valid until weft_group_end returns (count arrays are copied
 * when recorded); a grouped receive from WEFT_ANY_SOURCE does not report
 * its sender.  Non-blocking and stream-ordered forms inside a group are
 * refused with WEFT_ERR_INVALID_USAGE.  Groups nest: only the outermost
 * end runs them.  Calls from other threads are not part of the group.
 * weft_group_end without a start is WEFT_ERR_INVALID_USAGE. */
WEFT_API weft_status_t weft_group_start(void);
WEFT_API weft_status_t weft_group_end(void);

/* Non-blocking completion check: WEFT_INPROGRESS while running, otherwise the
 * operation's final status (WEFT_OK or its error).  Thread-safe. */
WEFT_API weft_status_t weft_test(weft_request_t req);

/* Blocks until the operation completes (or its deadline passes) and returns
 * its final status.  Thread-safe; the request stays valid. */
WEFT_API weft_status_t weft_wait(weft_request_t req);

/* Releases a request.  If the operation is still running it continues and
 * its resources are released when it ends.  NULL is accepted. */
WEFT_API weft_status_t weft_request_free(weft_request_t req);

/* The rank a completed receive's message came from: what a receive from
 * WEFT_ANY_SOURCE matched.  WEFT_INPROGRESS while it runs (or when a
 * receive from any source failed before a message matched);
 * WEFT_ERR_INVALID_ARG for a request that is not a receive. */
WEFT_API weft_status_t weft_request_source(weft_request_t req, int *source);

/* ------------------------------------------------------------------------ */
/* Planning                                                                 */
/* ------------------------------------------------------------------------ */

/* Predicts collective `coll` ("allreduce", "broadcast", ...; the weft-bench
 * names) on `ranks` ranks for a `bytes`-byte message by executing every
 * applicable algorithm's real plans in virtual time, without payload or
 * network: alpha_us is the per-message latency, beta_gbs the link bandwidth
 * (GB/s), gamma_gbs the reduction speed (GB/s).  Writes one line per
 * algorithm (predicted time, busbw, messages and bytes sent per rank) and
 * the algorithm auto-selection would pick to `out`.  Algorithms whose plans
 * would exceed the simulation budget at this size are listed as skipped.
 * Thread-safe; no communicator needed. */
WEFT_API weft_status_t weft_simulate(const char *coll, int ranks,
                                     size_t bytes, double alpha_us,
                                     double beta_gbs, double gamma_gbs,
                                     FILE *out);

/* weft_simulate on machines of `ranks_per_node` consecutive ranks (the
 * last may have fewer): messages inside a machine take the one-host
 * model's latency and bandwidth on the sender's own link, messages across
 * machines alpha_us and beta_gbs on the sending machine's one NIC, which
 * its ranks share; the node-aware algorithms appear beside the flat ones
 * (weft-info --simulate ... --ranks-per-node K). */
WEFT_API weft_status_t weft_simulate_nodes(const char *coll, int ranks,
                                           int ranks_per_node, size_t bytes,
                                           double alpha_us, double beta_gbs,
                                           double gamma_gbs, FILE *out);

/* ------------------------------------------------------------------------ */
/* Timeline (docs/timeline.md)                                              */
/* ------------------------------------------------------------------------ */

/* Starts writing every later operation of every communicator of this
 * process to `path`, a Chrome trace / Perfetto JSON file: one event per
 * operation with its start, duration, collective, bytes, algorithm,
 * status, and the peer whose part came last.  In `path`, %r is this
 * process's rank in its first communicator ("pid<pid>" before it has one),
 * %p its pid, %h the host name.  WEFT_TIMELINE=path does the same when
 * the first communicator is created.  WEFT_ERR_INVALID_USAGE while a
 * timeline is already being written; WEFT_ERR_SYSTEM when the file cannot
 * be created.  Thread-safe. */
WEFT_API weft_status_t weft_timeline_start(const char *path);

/* Writes what is queued, closes the file (a valid JSON array) and stops
 * recording.  WEFT_OK also when no timeline was being written; at exit it
 * stops by itself. */
WEFT_API weft_status_t weft_timeline_stop(void);

/* ------------------------------------------------------------------------ */
/* Host inspection (weft-info --topology, --doctor; docs/topology.md)       */
/* ------------------------------------------------------------------------ */

/* Writes what weft sees on this node (hwloc; WEFT_TOPO_FILE or
 * HWLOC_XMLFILE for an XML file instead) and what each of `local_ranks`
 * ranks on it would use: GPU, NIC(s), NUMA node, core.  `json` non-zero:
 * a JSON array with one object per local rank.  WEFT_ERR_UNSUPPORTED
 * (after a warning) when no topology can be had. */
WEFT_API weft_status_t weft_topology_print(FILE *out, int local_ranks,
                                           int json);

/* A pre-flight check of this host, one line per check starting with OK,
 * WARN or FAIL and the reason: interfaces and addresses, the rendezvous
 * reachable (when WEFT_RENDEZVOUS is HOST:PORT), ports of WEFT_PORT_RANGE
 * free, the memlock limit, verbs devices, ports and GIDs, CUDA and
 * GPUDirect.  WEFT_OK when no check failed, else WEFT_ERR_SYSTEM. */
WEFT_API weft_status_t weft_doctor(FILE *out);

/* ------------------------------------------------------------------------ */
/* Rendezvous server, embeddable                                            */
/* ------------------------------------------------------------------------ */

/* Starts a rendezvous server on `listen` ("HOST:PORT"; port 0 picks a free
 * one) in a background thread of this process.  It serves any number of
 * jobs, keyed by job id.  Thread-safe. */
WEFT_API weft_status_t weft_server_start(const char *listen,
                                         weft_server_t *server);

/* The address the server listens on, "HOST:PORT" with the actual port.  The
 * string belongs to the server. */
WEFT_API const char *weft_server_address(weft_server_t server);

/* Stops the server thread, closes its connections and releases it.  NULL is
 * accepted. */
WEFT_API weft_status_t weft_server_stop(weft_server_t server);

/* Checks that the rendezvous server at `address` ("HOST:PORT") serves: the
 * probe joins a job of its own, sets a key and reads it back, all within
 * timeout_ms.  WEFT_OK when it does; otherwise the status of the step that
 * failed (WEFT_ERR_TIMEOUT when nothing answers, WEFT_ERR_AUTH when the
 * server wants a token this process lacks: WEFT_TOKEN/WEFT_TOKEN_FILE),
 * logged with its cause.  `weft-rendezvous --check` is this call. */
WEFT_API weft_status_t weft_server_check(const char *address,
                                         int64_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
