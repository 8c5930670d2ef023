"""The torchrun reference for docs/examples/spark_ddp.py and ray_ddp.py,
and the comparison of their results with it (test/launchers/spark_ray.sh).

    torchrun --nproc-per-node 2 ... spark_ray.py reference EXAMPLE OUT.pt...
    spark_ray.py compare REF.pt OUT.pt NAME

`reference` runs each example's own training function, one after the
other, in each process
torchrun starts, with the same arguments as the example's launcher passes
it: TorchDistributor's train() makes its process group itself (torchrun's
env://); Ray's train(CONFIG) finds one made before it starts, so here it
is made the same way, init_process_group("weft") from torchrun's
variables.  Rank 0 saves the returned state dict.

With 2 ranks an allreduce computes a + b on both sides, whatever the
algorithm, so the same training under any launcher must end bitwise equal
(the launchers differ in how the processes start and meet, not in the
arithmetic); the test runs every launch with OMP_NUM_THREADS=1, so that no
launcher's thread count changes the order of a sum inside an operator.
"""
import importlib.util
import sys


def load(path):
    """The example as a module (not __main__: its launcher does not run)."""
    spec = importlib.util.spec_from_file_location("example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_tensors(state):
    import numpy as np
    import torch
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
            for k, v in state.items()}


def reference(example, out):
    import torch
    import torch.distributed as dist

    import weft.torch  # noqa: F401

    module = load(example)
    if hasattr(module, "CONFIG"):  # Ray's: the group exists before train()
        dist.init_process_group("weft")
        state = module.train(module.CONFIG)
        dist.destroy_process_group()
    else:
        state = module.train()
    if state is not None:
        torch.save(as_tensors(state), out)


def compare(ref_path, out_path, name):
    """Bitwise: every tensor of the launch's state dict has the dtype,
    shape and bytes of torchrun's."""
    import torch
    ref = torch.load(ref_path)
    got = torch.load(out_path)
    problems = []
    if got.keys() != ref.keys():
        problems.append("state dict keys %s, torchrun's %s"
                        % (sorted(got), sorted(ref)))
    for k in ref:
        a, b = ref[k], got.get(k)
        if b is None:
            continue
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append("%s: %s %s, torchrun's %s %s"
                            % (k, b.dtype, tuple(b.shape), a.dtype,
                               tuple(a.shape)))
        elif not torch.equal(a, b):
            problems.append("%s differs from torchrun's: %d of %d values, "
                            "max |diff| %g" % (k, (a != b).sum().item(),
                                               a.numel(),
                                               (a - b).abs().max().item()))
    for p in problems:
        print("%s: %s" % (name, p))
    if not problems:
        print("%s: %d tensors, %d values, bitwise equal to torchrun's"
              % (name, len(ref), sum(v.numel() for v in ref.values())))
    return not problems


def main():
    pairs = sys.argv[2:]
    if sys.argv[1:2] == ["reference"] and pairs and len(pairs) % 2 == 0:
        for example, out in zip(pairs[::2], pairs[1::2]):
            reference(example, out)
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(0 if compare(*sys.argv[2:]) else 1)
    else:
        sys.exit("usage: spark_ray.py reference EXAMPLE OUT... | "
                 "compare REF OUT NAME")


if __name__ == "__main__":
    main()
