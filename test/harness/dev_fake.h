/*
 * dev_fake.h - the tests' fake device layer (dev_fake.c): device memory
 * and streams without a GPU, handed to libweft through the loader's seam
 * (wf_dev_layer_provide, cuda/weft_cuda.h).
 */
#ifndef WF_TEST_DEV_FAKE_H
#define WF_TEST_DEV_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "weft_cuda.h"

extern const wf_dev_ops_t wf_fake_dev_ops;

/* Uses the fake layer from now on (before any communicator is created);
 * `on` false goes back to loading the real one. */
void wf_dev_use_fake(bool on);

/* Fake layer: "device" memory for tests (host memory the fake layer
 * reports as WF_MEM_DEVICE until freed). */
void *wf_fake_dev_alloc(size_t bytes);
void wf_fake_dev_free(void *ptr);
/* Fake device memory keeps its bytes scrambled (dev_fake.c): tests fill
 * and read it with these, as they would with cudaMemcpy. */
void wf_fake_dev_write(void *dev_dst, const void *host_src, size_t bytes);
void wf_fake_dev_read(void *host_dst, const void *dev_src, size_t bytes);
/* The fake's stand-in for the legacy default stream (mark_default_stream
 * records on it): tests enqueue a slow "kernel" there before a call. */
wf_dev_stream_t wf_fake_default_stream(void);
/* Marks a fake stream as being captured into a graph (1) or not (0), for
 * the tests of the refusal (stream_capturing). */
void wf_fake_stream_capture(wf_dev_stream_t stream, int on);
/* Makes every fake copy wait `us` microseconds before it runs, so that
 * tests can catch device work still queued when an operation ends. */
void wf_fake_slow_copies(unsigned us);
/* Fake events created and not yet freed (a destroyed event that queued
 * work still refers to lives until that work is done, as in CUDA). */
long wf_fake_live_events(void);

#endif /* WF_TEST_DEV_FAKE_H */
