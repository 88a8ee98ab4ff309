"""PyTorch's per-kernel table of one corpus model: what Inductor (torch.compile, default mode)
runs, kernel by kernel, in launch order, with CUPTI's device times (torch.profiler).

The other half of `weft model bench`'s per-kernel table: the two side by side say which of
weft's kernels lose to which of PyTorch's (cuDNN's convolutions, cuBLAS's products,
Inductor's Triton kernels) on the same model, batch and dtype (fp16).

    python3 scripts/torch_kernels.py --models resnet50,convnext_tiny --batch 8 --out DIR

writes DIR/torch-kernels-MODEL-bBATCH.txt: every kernel of one call in order (name, µs),
then the sums by kind (cudnn/cutlass convolutions, gemm, triton, other) over `--iters`
calls. The models are speed.py's (the same constructors and inputs)."""
import argparse
import collections
import fcntl
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402


def kind(name):
    n = name.lower()
    if "triton" in n:
        return "triton"
    if "conv" in n or "implicit" in n or "xmma" in n or "cudnn" in n or "fprop" in n or "dgrad" in n:
        return "conv"
    if "gemm" in n or "cutlass" in n or "sm90" in n or "ampere" in n:
        return "gemm"
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", required=True)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", required=True)
    p.add_argument("--lock", help="a file locked around the timed part, so that processes run side by side "
                   "compile at once and profile one at a time")
    a = p.parse_args()
    import numpy as np
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.backends.cudnn.benchmark = True
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        entry = next(e for e in speed.models(a.batch) if e.name == name)
        model = speed.build(entry, torch, calibrate=False).cuda().half()
        inputs = entry.inputs(0)
        xs = tuple(torch.from_numpy(v).cuda() if v.dtype == np.int64 else torch.from_numpy(v).cuda().half()
                   for v in inputs.values())
        compiled = torch.compile(model)
        with torch.inference_mode():
            for _ in range(5):
                compiled(*xs)
            torch.cuda.synchronize()
            lock = open(a.lock, "a") if a.lock else None
            if lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
            for _ in range(5):
                compiled(*xs)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(a.iters):
                    compiled(*xs)
                torch.cuda.synchronize()
            if lock:
                lock.close()
        events = [e for e in prof.events() if e.device_type.name == "CUDA" and e.device_time > 0]
        per_call = len(events) // a.iters
        lines = [f"# {name}, batch {a.batch}, fp16, torch.compile default mode (Inductor), "
                 f"{torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}",
                 f"# {len(events)} kernels over {a.iters} calls ({per_call} a call); the last call in order:"]
        total = 0.0
        for e in events[-per_call:]:
            lines.append(f"{e.device_time:9.1f} us  {kind(e.name):6s}  {e.name[:150]}")
            total += e.device_time
        lines.append(f"# sum of the last call's kernels: {total:.1f} us")
        sums = collections.Counter()
        counts = collections.Counter()
        for e in events:
            sums[kind(e.name)] += e.device_time / a.iters
            counts[kind(e.name)] += 1
        for k, v in sums.most_common():
            lines.append(f"# {k:6s} {v:9.1f} us a call, {counts[k] // a.iters} kernels")
        text = "\n".join(lines) + "\n"
        with open(os.path.join(a.out, f"torch-kernels-{name}-b{a.batch}.txt"), "w") as f:
            f.write(text)
        print(text, flush=True)
        torch._dynamo.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
