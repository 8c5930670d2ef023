/*
 * topo_hwloc.c - fills the topology model from hwloc (see topo.h): this
 * node or an XML file.  Built when hwloc.h exists (HWLOC=auto|1).
 */
#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "log.h"
#include "topo/topo.h"

const char *wf_topo_backend(void)
{
    return "hwloc " HWLOC_VERSION;
}

/* The ancestors of `o` from the root down, itself last (gp_index is
 * unique per object, stable within one topology). */
static void path_of(hwloc_obj_t o, wf_topo_path_t *p)
{
    hwloc_obj_t chain[64];
    int n = 0;
    for (; o && n < 64; o = o->parent)
        chain[n++] = o;
    p->len = 0;
    /* Keep the root end: distances compare common prefixes. */
    for (int i = n - 1; i >= 0 && p->len < WF_TOPO_PATH_MAX; i--)
        p->id[p->len++] = (unsigned)chain[i]->gp_index;
}

/* The logical index of the NUMA node an object with this CPU-side
 * ancestor is local to; -1 when it spans several (or none). */
static int numa_of(hwloc_topology_t topo, hwloc_obj_t cpu_side)
{
    if (!cpu_side || !cpu_side->nodeset ||
        hwloc_bitmap_weight(cpu_side->nodeset) != 1)
        return -1;
    hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(
        topo, (unsigned)hwloc_bitmap_first(cpu_side->nodeset));
    return n ? (int)n->logical_index : -1;
}

static bool is_gpu_pci(hwloc_obj_t pci)
{
    unsigned cls = pci->attr->pcidev.class_id;
    return pci->attr->pcidev.vendor_id == 0x10de &&
           (cls == 0x0300 || cls == 0x0302);
}

/* The PCI device of an OS device: its closest PCI ancestor. */
static hwloc_obj_t pci_of(hwloc_obj_t o)
{
    while (o && o->type != HWLOC_OBJ_PCI_DEVICE)
        o = o->parent;
    return o;
}

/* The model's entry for PCI device `pci` as a `kind`, added on first
 * sight.  `t->devs` has room for two entries per PCI device. */
static wf_topo_dev_t *dev_for(hwloc_topology_t topo, wf_topo_t *t,
                              hwloc_obj_t pci, wf_topo_kind_t kind)
{
    char busid[16];
    snprintf(busid, sizeof(busid), "%04x:%02x:%02x.%01x",
             pci->attr->pcidev.domain, pci->attr->pcidev.bus,
             pci->attr->pcidev.dev, pci->attr->pcidev.func);
    for (int i = 0; i < t->ndevs; i++)
        if (t->devs[i].kind == kind && !strcmp(t->devs[i].busid, busid))
            return &t->devs[i];
    wf_topo_dev_t *d = &t->devs[t->ndevs++];
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    wf_strlcpy(d->busid, busid, sizeof(d->busid));
    d->numa = numa_of(topo, hwloc_get_non_io_ancestor_obj(topo, pci));
    path_of(pci, &d->path);
    return d;
}

/* NICs: network and OpenFabrics OS devices, grouped by PCI device.
 * GPUs: NVIDIA PCI display/3D controllers, named by a CUDA/NVML OS
 * device when hwloc has one. */
static void add_devices(hwloc_topology_t topo, wf_topo_t *t)
{
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));)
        if (is_gpu_pci(o))
            dev_for(topo, t, o, WF_TOPO_GPU);
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(topo, o));) {
        hwloc_obj_t pci = pci_of(o);
        /* A GPU's PCI function never carries a NIC's OS device. */
        if (!pci || !o->name || (is_gpu_pci(pci) &&
                                 o->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC &&
                                 o->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU))
            continue;
        hwloc_obj_osdev_type_t ot = o->attr->osdev.type;
        if (ot == HWLOC_OBJ_OSDEV_NETWORK) {
            wf_strlcpy(dev_for(topo, t, pci, WF_TOPO_NIC)->netdev, o->name,
                       WF_TOPO_NAME_MAX);
        } else if (ot == HWLOC_OBJ_OSDEV_OPENFABRICS) {
            wf_strlcpy(dev_for(topo, t, pci, WF_TOPO_NIC)->verbs, o->name,
                       WF_TOPO_NAME_MAX);
        } else if ((ot == HWLOC_OBJ_OSDEV_COPROC ||
                    ot == HWLOC_OBJ_OSDEV_GPU) &&
                   (!strncmp(o->name, "cuda", 4) ||
                    !strncmp(o->name, "nvml", 4))) {
            wf_topo_dev_t *d = dev_for(topo, t, pci, WF_TOPO_GPU);
            if (!*d->verbs || !strncmp(o->name, "cuda", 4))
                wf_strlcpy(d->verbs, o->name, WF_TOPO_NAME_MAX);
        }
    }
}

static weft_status_t fill(hwloc_topology_t topo, wf_topo_t *t)
{
    t->npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int cap = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));)
        cap++;
    t->numa = calloc((size_t)t->nnuma + 1, sizeof(*t->numa));
    t->cores = calloc((size_t)t->ncores + 1, sizeof(*t->cores));
    t->devs = calloc(2 * (size_t)cap + 1, sizeof(*t->devs));
    if (!t->numa || !t->cores || !t->devs)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < t->nnuma; i++) {
        hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE,
                                              (unsigned)i);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(
            topo, HWLOC_OBJ_PACKAGE, n);
        t->numa[i].os_index = (int)n->os_index;
        t->numa[i].package = pkg ? (int)pkg->logical_index : -1;
        path_of(n->parent, &t->numa[i].path); /* memory hangs off it */
    }
    for (int i = 0; i < t->ncores; i++) {
        hwloc_obj_t c = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE,
                                              (unsigned)i);
        t->cores[i].cpu = hwloc_bitmap_first(c->cpuset);
        t->cores[i].numa = numa_of(topo, c);
    }
    add_devices(topo, t);
    return WEFT_OK;
}

weft_status_t wf_topo_load(const char *xml_file, wf_topo_t **out)
{
    hwloc_topology_t topo;
    const char *what = "hwloc_topology_init";
    wf_topo_t *t = calloc(1, sizeof(*t));
    if (!t || hwloc_topology_init(&topo) != 0) {
        free(t);
        WEFT_WARN_ONCE(INIT, "topology: %s failed; running without affinity",
                       what);
        return WEFT_ERR_UNSUPPORTED;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* Only what weft uses.  The pci plugin (libpciaccess) leaks its
     * device table and Linux's sysfs gives the same PCI tree; OpenCL and
     * GL load vendor runtimes; x86 CPUID repeats what Linux says (and
     * prints to stderr under valgrind); levelzero/rsmi are other GPUs. */
    static const char *const unused[] = {"pci", "opencl", "gl", "x86",
                                         "levelzero", "rsmi"};
    for (size_t i = 0; i < sizeof(unused) / sizeof(*unused); i++)
        hwloc_topology_set_components(
            topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, unused[i]);
    wf_strlcpy(t->source, xml_file && *xml_file ? xml_file : "this host",
               sizeof(t->source));
    int rc = 0, err = 0;
    if (xml_file && *xml_file) {
        what = "reading the XML file";
        rc = hwloc_topology_set_xml(topo, xml_file);
    }
    if (rc == 0) {
        what = "hwloc_topology_load";
        rc = hwloc_topology_load(topo);
    }
    if (rc != 0)
        err = errno; /* before hwloc_topology_destroy can change it */
    /* hwloc read HWLOC_XMLFILE (or a synthetic description) by itself. */
    t->thissystem = rc == 0 && hwloc_topology_is_thissystem(topo);
    if (rc == 0 && !(xml_file && *xml_file) && !t->thissystem)
        wf_strlcpy(t->source, "HWLOC_XMLFILE", sizeof(t->source));
    weft_status_t st = rc == 0 ? fill(topo, t) : WEFT_ERR_UNSUPPORTED;
    hwloc_topology_destroy(topo);
    if (st != WEFT_OK || t->ncores < 1) {
        WEFT_WARN_ONCE(INIT, "topology of %s: %s failed (%s); running "
                       "without affinity", t->source, what,
                       rc ? wf_errno_str(err)
                          : st != WEFT_OK ? "out of memory" : "no cores found");
        wf_topo_free(t);
        return WEFT_ERR_UNSUPPORTED;
    }
    *out = t;
    return WEFT_OK;
}

void wf_topo_free(wf_topo_t *t)
{
    if (!t)
        return;
    free(t->numa);
    free(t->cores);
    free(t->devs);
    free(t);
}
