/*
 * dev_load.c - finds the device layer (weft_cuda.h) at run time.
 *
 * libweft never links the CUDA runtime: one libweft.so must run on hosts
 * without CUDA.  The real layer lives in libweft_cuda.so, loaded with
 * dlopen the first time a buffer may be device memory, which is only
 * possible once the process has the CUDA driver (libcuda.so.1) loaded:
 * until then every buffer is host memory and nothing is loaded.  The
 * library is looked for next to the one this code is in (the install
 * layout), then by the dynamic loader's usual search.  Built with CUDA=0
 * (WF_CUDA_DISABLED) nothing is ever loaded.
 */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "weft_cuda.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const wf_dev_ops_t *loaded;
static char load_why[2048];
/* Set before any communicator exists (the tests' fake device). */
static const wf_dev_ops_t *provided;

void wf_dev_layer_provide(const wf_dev_ops_t *ops)
{
    __atomic_store_n(&provided, ops, __ATOMIC_RELEASE);
}

static const wf_dev_ops_t *provided_layer(void)
{
    return __atomic_load_n(&provided, __ATOMIC_ACQUIRE);
}

#ifdef WF_CUDA_DISABLED

static void load(void)
{
    snprintf(load_why, sizeof(load_why), "weft was built with CUDA=0");
}

static bool driver_loaded(void) { return false; }

#else

/*
 * The CUDA driver is in the process once anything initialised CUDA.  This
 * runs for every buffer of every call, so it must cost nanoseconds:
 * dlopen(RTLD_NOLOAD) of a library that is not loaded searches the file
 * system, far too slow for a check on every buffer, so the list of loaded
 * objects is walked instead, and only when the loader's count of
 * additions (dlpi_adds) moved since the last walk.  Once seen, the driver
 * stays.
 */
static unsigned long long walked_adds = ~0ull;
static bool driver_seen;

typedef struct {
    bool first;
    unsigned long long adds;
    bool unchanged, found;
} walk_t;

static int walk_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    walk_t *w = arg;
    if (w->first) {
        w->first = false;
        if (size < offsetof(struct dl_phdr_info, dlpi_subs))
            w->adds = ~0ull - 1; /* an old loader: walk every time */
        else
            w->adds = info->dlpi_adds;
        if (w->adds == __atomic_load_n(&walked_adds, __ATOMIC_ACQUIRE)) {
            w->unchanged = true;
            return 1;
        }
    }
    if (info->dlpi_name && strstr(info->dlpi_name, "/libcuda.so")) {
        w->found = true;
        return 1;
    }
    return 0;
}

static bool driver_loaded(void)
{
    if (__atomic_load_n(&driver_seen, __ATOMIC_ACQUIRE))
        return true;
    walk_t w = {.first = true};
    dl_iterate_phdr(walk_object, &w);
    if (w.found)
        __atomic_store_n(&driver_seen, true, __ATOMIC_RELEASE);
    else if (!w.unchanged)
        __atomic_store_n(&walked_adds, w.adds, __ATOMIC_RELEASE);
    return w.found;
}

/* "<dir of the library holding this code>/libweft_cuda.so". */
static bool sibling_path(char *path, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)&wf_dev_layer, &info) || !info.dli_fname)
        return false;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return false;
    int n = snprintf(path, len, "%.*s/libweft_cuda.so",
                     (int)(slash - info.dli_fname), info.dli_fname);
    return n > 0 && (size_t)n < len;
}

static void load(void)
{
    char path[1024];
    void *h = NULL;
    const char *tried = "libweft_cuda.so";
    if (sibling_path(path, sizeof(path))) {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        tried = path;
    }
    if (!h)
        h = dlopen("libweft_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(load_why, sizeof(load_why), "cannot load libweft_cuda.so "
                 "(tried %s and the loader's search path): %s", tried,
                 err ? err : "not found");
        return;
    }
    const wf_dev_ops_t *ops = dlsym(h, "wf_cuda_dev_ops");
    if (!ops) {
        snprintf(load_why, sizeof(load_why), "libweft_cuda.so has no "
                 "wf_cuda_dev_ops: %s", dlerror());
        dlclose(h);
        return;
    }
    if (ops->version != WF_DEV_OPS_VERSION) {
        snprintf(load_why, sizeof(load_why), "libweft_cuda.so speaks "
                 "device-layer version %d, this libweft %d: install both "
                 "from one build", ops->version, WF_DEV_OPS_VERSION);
        dlclose(h);
        return;
    }
    /* Kept loaded for the life of the process. */
    __atomic_store_n(&loaded, ops, __ATOMIC_RELEASE);
    WEFT_INFO(COLL, "device layer: %s from %s", ops->name, tried);
}

#endif

const wf_dev_ops_t *wf_dev_layer(char *why, size_t len)
{
    const wf_dev_ops_t *own = provided_layer();
    if (own)
        return own;
    pthread_once(&load_once, load);
    if (!loaded && why)
        snprintf(why, len, "%s", load_why);
    return loaded;
}

bool wf_dev_answers_cacheable(void)
{
    return !provided_layer() &&
           __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) != NULL;
}

bool wf_dev_possible(void) { return provided_layer() || driver_loaded(); }

wf_memtype_t wf_dev_memtype(const void *ptr, int *device)
{
    if (device)
        *device = -1;
    if (!ptr)
        return WF_MEM_HOST;
    const wf_dev_ops_t *ops = provided_layer();
    if (!ops && driver_loaded())
        ops = wf_dev_layer(NULL, 0);
    int dev = -1;
    wf_memtype_t t = ops ? ops->memtype(ptr, &dev) : WF_MEM_HOST;
    if (device)
        *device = dev;
    return t;
}

int wf_cuda_available(void)
{
#ifdef WF_CUDA_DISABLED
    return 0;
#else
    return 1;
#endif
}
