"""Horovod's API on weft: `import weft.horovod.torch as hvd` in place of
`import horovod.torch as hvd`, and nothing else in a training script
changes (docs/horovod.md).

Layout, so that other frameworks can follow (a `tensorflow` sibling of
`torch/`):

  common/   what does not depend on a framework: the weft communicators
            behind hvd.init() and the process sets, collectives on raw
            buffers (address, count, weft dtype), async handles, join,
            the fusion plan and the environment knobs;
  torch/    PyTorch: tensors onto buffers, the autograd functions,
            DistributedOptimizer, SyncBatchNorm, the broadcast helpers.

Everything runs over libweft through ctypes (weft._lib): no MPI, no
Horovod, no compiled extension.
"""
