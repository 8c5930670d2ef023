"""Real training with DistributedDataParallel on weft, against the same
run on gloo (workers/torch_ddp.py): LeNet-like CNN, MLP with BatchNorm,
find_unused_parameters=True, the fp16_compress_hook comm hook; 50 steps,
fixed seeds; launched directly and by torchrun.

Agreement with gloo:
  * 2 ranks: bitwise.  Every 2-rank allreduce computes a + b, and float
    addition is commutative, so any algorithm gives gloo's bits.
  * 4 ranks: not bitwise.  weft and gloo associate the 4-term sums
    differently, so a gradient differs in its last bit now and then.  After
    one step the parameters agree to 1e-6 relative (|weft - gloo| / |gloo|
    over all parameters; measured ~1e-9).  The MLPs stay within 1e-6 for
    all 50 steps (~6e-8, whichever allreduce algorithm weft picks).  The
    CNN goes through a symmetry-breaking phase (loss flat at 2.30, then a
    sudden drop) that amplifies any perturbation: with weft's ring or rd
    allreduce it ends ~1e-7 from gloo, with tree, dbtree or rhd ~3e-2, so
    its end state is reported, not bounded.  With fp16_compress_hook every
    hop rounds to float16: 1e-4 after one step, then the same drift.
"""

import harness
from conftest import needs

pytestmark = needs("weft.torch")

FP32 = ("cnn", "mlp_bn", "unused")
SMOOTH = ("mlp_bn", "unused")     # trajectories that do not amplify


def table(data, title):
    """The loss curves side by side (mean over ranks, every 5th step)."""
    lines = ["", title]
    for name, d in data.items():
        if not isinstance(d, dict):
            continue
        lines.append("  %-7s %d params; weft vs gloo: %s, max |diff| %.2e, "
                     "relative %.2e (after step 1: %.2e)" % (
                         name, d["params"], "bitwise equal" if d["bitwise"]
                         else "not bitwise", d["max_abs"], d["rel_norm"],
                         d["first_rel"]))
        lw, lg = d["weft_loss"], d["gloo_loss"]
        steps = sorted(set(list(range(0, len(lw), 5)) + [len(lw) - 1]))
        lines.append("    step  " + " ".join("%7d" % s for s in steps))
        lines.append("    weft  " + " ".join("%7.4f" % lw[s] for s in steps))
        lines.append("    gloo  " + " ".join("%7.4f" % lg[s] for s in steps))
    return "\n".join(lines)


def show(capsys, text):
    with capsys.disabled():
        print(text)


def test_ddp_4_ranks_vs_gloo(capsys):
    results, _ = harness.launch("torch_ddp.py", 4, timeout=420)
    data = results[0]["data"]
    show(capsys, table(data, "DDP, 4 ranks, 50 steps: weft vs gloo"))
    for name in FP32:
        assert data[name]["first_rel"] < 1e-6, (name, data[name])
    for name in SMOOTH:
        assert data[name]["rel_norm"] < 1e-6, (name, data[name]["rel_norm"])
    assert data["fp16"]["first_rel"] < 1e-4, data["fp16"]["first_rel"]


def test_ddp_2_ranks_bitwise(capsys):
    results, _ = harness.launch("torch_ddp.py", 2, timeout=300)
    data = results[0]["data"]
    show(capsys, table(data, "DDP, 2 ranks, 50 steps: weft vs gloo"))
    for name, d in data.items():
        if isinstance(d, dict):
            assert d["bitwise"] and d["max_abs"] == 0.0, name


def test_ddp_under_torchrun():
    results, _ = harness.launch_torchrun(
        "torch_ddp.py", 4, args=["--configs", "mlp_bn,unused"], timeout=420)
    data = results[0]["data"]
    assert data["world"] == 4
    for name in ("mlp_bn", "unused"):
        assert data[name]["rel_norm"] < 1e-6, (name, data[name])
