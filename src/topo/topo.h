/*
 * topo.h - what this node looks like (packages, NUMA nodes, cores, NICs,
 * GPUs and how far apart they sit on PCIe) and, per local rank, which GPU,
 * NIC(s), NUMA node and core weft would use.
 *
 * The model is plain data: topo_hwloc.c fills it from hwloc (this node, or
 * an XML file), topo_none.c is the HWLOC=0 build and reports "no
 * topology".  The choice (topo_choose.c) is a pure function of the model,
 * so tests assert it over shipped XML files.  Nothing here ever fails a
 * communicator: a missing topology means "no affinity".
 */
#ifndef WF_TOPO_H
#define WF_TOPO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "weft.h"

#define WF_TOPO_PATH_MAX 16  /* ancestors kept per object, root first */
#define WF_TOPO_NAME_MAX 32
#define WF_TOPO_NICS_MAX 8   /* NICs one rank stripes over */

typedef enum { WF_TOPO_NIC = 1, WF_TOPO_GPU = 2 } wf_topo_kind_t;

/* Where an object hangs in the tree: the ids of its ancestors from the
 * root down, itself last.  Two paths' distance is the number of hops to
 * their deepest common ancestor (hwloc's PCI locality). */
typedef struct wf_topo_path {
    unsigned id[WF_TOPO_PATH_MAX];
    int len;
} wf_topo_path_t;

/* A PCI device weft cares about.  A NIC may have a netdev name, a verbs
 * name, or both (a RoCE/IB card shows both). */
typedef struct wf_topo_dev {
    wf_topo_kind_t kind;
    char busid[16];                 /* "0000:3b:00.0" */
    char netdev[WF_TOPO_NAME_MAX];  /* "eth0"; empty when none */
    char verbs[WF_TOPO_NAME_MAX];   /* "mlx5_0"; GPUs: "cuda0" if known */
    int numa;                       /* local NUMA node (logical), -1: none */
    wf_topo_path_t path;
} wf_topo_dev_t;

typedef struct wf_topo_numa {
    int os_index;
    int package;                    /* logical package index, -1 unknown */
    wf_topo_path_t path;            /* of the CPU-side object it hangs on */
} wf_topo_numa_t;

typedef struct wf_topo_core {
    int cpu;                        /* OS index of its first PU */
    int numa;                       /* logical NUMA node, -1 unknown */
} wf_topo_core_t;

typedef struct wf_topo {
    int npackages, nnuma, ncores, ndevs;
    wf_topo_numa_t *numa;
    wf_topo_core_t *cores;
    wf_topo_dev_t *devs;
    char source[256];               /* "this host" or the XML file */
    bool thissystem;                /* read from this host, not a file:
                                     * its NUMA nodes can be bound to */
} wf_topo_t;

/* What one local rank would use.  Indexes into the model; -1: none. */
typedef struct wf_topo_choice {
    int gpu;
    int nics[WF_TOPO_NICS_MAX];
    int nnics;
    int nic_distance;               /* hops from the GPU/NUMA node to them */
    int numa;
    int core;                       /* index into cores */
    char why[256];
} wf_topo_choice_t;

/* Loads this node, or `xml_file` when non-empty (hwloc also honours
 * HWLOC_XMLFILE by itself).  On failure (or in an HWLOC=0 build) returns
 * WEFT_ERR_UNSUPPORTED after one warning naming the cause; callers carry
 * on without affinity. */
weft_status_t wf_topo_load(const char *xml_file, wf_topo_t **out);
void wf_topo_free(wf_topo_t *t);
/* "hwloc 2.9.0" or "none (built with HWLOC=0)". */
const char *wf_topo_backend(void);

/* The choice for local rank `lr` of `lsize` (pure; topo_choose.c). */
void wf_topo_choose(const wf_topo_t *t, int lr, int lsize,
                    wf_topo_choice_t *out);
/* The chosen NICs' netdev names (verbs false) or verbs names (true),
 * comma separated, NICs without such a name left out; "" when none. */
void wf_topo_nic_names(const wf_topo_t *t, const wf_topo_choice_t *c,
                       bool verbs, char *out, size_t len);
int wf_topo_path_distance(const wf_topo_path_t *a, const wf_topo_path_t *b);
int wf_topo_count(const wf_topo_t *t, wf_topo_kind_t kind);

/* The CPU to pin the progress thread to, or -1 to leave it: when the
 * `local_size` ranks of this host outnumber the chosen NUMA node's cores
 * (pinned threads would stack up on shared cores), when the process is
 * already bound to fewer CPUs than the node has (someone placed it on
 * purpose) or the core is outside its mask.  `why` says which
 * (topo_pin.c). */
int wf_topo_pin_cpu(const wf_topo_t *t, const wf_topo_choice_t *c,
                    int local_size, char *why, size_t len);
/* Pins `thread` to `cpu`; warns with the errno text on failure. */
void wf_topo_pin_thread(pthread_t thread, int cpu);

/* Staging memory on a NUMA node (topo_mem.c).
 *
 * wf_topo_mem_alloc: `len` (> 0) bytes of zeroed, page-aligned memory (an
 * anonymous mapping of its own), placed on NUMA node `numa_os` (the
 * kernel's, i.e. hwloc's OS index; tconfig's topo_numa) when it is >= 0:
 * bound before first touch with hwloc's HWLOC_MEMBIND_BIND, which Linux
 * applies as a preferred node (MPOL_PREFERRED_MANY, or MPOL_PREFERRED on
 * older kernels), so a full node spills over instead of failing.
 * When it cannot be bound (no hwloc, hwloc reads an XML file, the node is
 * not on this host, the kernel refuses) it is the same memory unbound,
 * said once at info (later ones at debug).  NULL only when the mapping
 * itself fails (out of memory); binding never fails an allocation.
 * Thread-safe.
 *
 * wf_topo_mem_free: releases such a block, `len` being the length it was
 * allocated with; NULL is ignored. */
void *wf_topo_mem_alloc(size_t len, int numa_os);
void wf_topo_mem_free(void *p, size_t len);
/* Whether wf_topo_mem_alloc(., numa_os) would bind: tries it on one page.
 * When not, `why` says why ("no NUMA node chosen" for -1). */
bool wf_topo_mem_bindable(int numa_os, char *why, size_t len);
/* The backend (topo_membind_hwloc.c; topo_none.c cannot): binds the
 * untouched mapping [p, p+len) to node `numa_os`, or says why not. */
bool wf_topo_mem_bind(void *p, size_t len, int numa_os, char *why,
                      size_t why_len);

/* weft-info --topology: the tree and each local rank's choice, as text or
 * as JSON (one object per local rank) (topo_report.c). */
void wf_topo_print(FILE *out, const wf_topo_t *t, int lsize, bool json);

#endif /* WF_TOPO_H */
