/*
 * version.c - what this library is: version and build contents.
 */
#include <pthread.h>
#include <stdio.h>

#include "topo/topo.h"
#include "transport.h"
#include "weft.h"
#include "weft_cuda.h"

WEFT_API int weft_get_version(void) { return WEFT_VERSION_CODE; }

static char build_info[256];

static void build_info_fill(void)
{
    snprintf(build_info, sizeof(build_info), "transports: %s; cuda: %s; "
             "topology: %s", wf_transport_names(),
             wf_cuda_available() ? "yes" : "no", wf_topo_backend());
}

WEFT_API const char *weft_build_info(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_info_fill);
    return build_info;
}
