/*
 * cuda_stub.c - the CUDA interface when weft is built without CUDA: all
 * memory is host memory.
 */
#include "weft_cuda.h"

wf_memtype_t wf_cuda_memtype(const void *ptr)
{
    (void)ptr;
    return WF_MEM_HOST;
}

int wf_cuda_available(void) { return 0; }
