#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at the shapes of weft's `attention-f16` op, for
comparison in one run.

Batch 1, `--heads` heads of `--dim`, sequence lengths `--seqs`, fp16, causal and not, on
the flash-attention backend (PyTorch's FlashAttention-2 kernels; `--backend efficient`
or `math` for the others). Times are GPU time per call: 50 calls captured in one CUDA
graph, replayed between CUDA events (median over 7 replays), so that no host launch cost
is in them, the way `weft bench` times kernels.

    python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64

Each output is first checked against float64 attention of the same inputs (an error
above 1e-2 of the output's scale stops the script), so that a row cannot time the wrong
computation; `err` is that error.

Prints one JSON object per line: {"op", "bh", "s", "t", "d", "causal", "backend", "ms",
"err"}.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}


def time_ms(fn, calls=50, repeats=7):
    """GPU time per call: `calls` calls captured in one CUDA graph, the graph replayed
    between CUDA events (no host launch cost in the time, as weft times kernels)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def check(q, k, v, causal, got):
    """The largest error of `got` against float64 attention, relative to the output's
    scale; raises above 1e-2 (fp16 inputs and output: a few units of 2^-11 expected)."""
    q64, k64, v64 = (x.double() for x in (q, k, v))
    scores = (q64 @ k64.transpose(-1, -2)) / q64.shape[-1] ** 0.5
    if causal:
        s, t = scores.shape[-2:]
        keep = torch.ones(s, t, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    want = scores.softmax(-1) @ v64
    err = ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-3)).item()
    if err > 1e-2:
        raise SystemExit(f"SDPA's output is {err:.3g} of its scale from float64: not attention")
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="128,512,2048")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--backend", default="flash", choices=sorted(BACKENDS))
    args = ap.parse_args()
    torch.manual_seed(0)
    for s in [int(x) for x in args.seqs.split(",")]:
        for causal in (False, True):
            q, k, v = (
                torch.randn(1, args.heads, s, args.dim, device="cuda", dtype=torch.float16)
                for _ in range(3)
            )
            with sdpa_kernel(BACKENDS[args.backend]):
                got = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            err = check(q, k, v, causal, got)
            print(
                json.dumps(
                    {
                        "op": "attention-f16",
                        "bh": args.heads,
                        "s": s,
                        "t": s,
                        "d": args.dim,
                        "causal": int(causal),
                        "backend": args.backend,
                        "ms": ms,
                        "err": err,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
