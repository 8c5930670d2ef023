/*
 * weft_cuda.h - the only CUDA interface the core sees.  Built from
 * cuda_stub.c until the CUDA issue lands: every buffer is host memory and
 * device operations report WEFT_ERR_UNSUPPORTED, so src/ has no #ifdef.
 */
#ifndef WEFT_CUDA_H
#define WEFT_CUDA_H

#include <stddef.h>

#include "weft.h"

typedef enum {
    WF_MEM_HOST = 0,
    WF_MEM_HOST_PINNED,
    WF_MEM_DEVICE,
    WF_MEM_MANAGED
} wf_memtype_t;

/* Where `ptr` lives.  Never fails: unknown pointers are host memory. */
wf_memtype_t wf_cuda_memtype(const void *ptr);

/* Whether this build can operate on device memory at all. */
int wf_cuda_available(void);

#endif /* WEFT_CUDA_H */
