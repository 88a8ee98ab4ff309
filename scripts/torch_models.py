#!/usr/bin/env python3
"""PyTorch's end-to-end times for the models weft compiles, for comparison in one run.

Runs torchvision's ResNet-50, Inception-V3 and MobileNetV2 (random weights, eval mode)
on the GPU: eager, eager replayed as one CUDA graph, and optionally torch.compile
(mode="reduce-overhead", which replays CUDA graphs). Times are GPU time per run from CUDA
events around back-to-back runs (median over repeats). fp32 runs with TF32 off.

    python3 scripts/torch_models.py --models resnet50,mobilenet_v2 --batch 1 --dtypes f32,f16 [--compile]

Prints one JSON object per line: {"model", "batch", "resolution", "dtype", "mode", "ms"}.
"""
import argparse
import json
import statistics

import torch
import torchvision

RESOLUTION = {"resnet50": 224, "inception_v3": 299, "mobilenet_v2": 224}


def build(name):
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    return getattr(torchvision.models, name)(weights=None)


def time_fn(fn, runs=20, repeats=10):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(runs):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / runs)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet50,inception_v3,mobilenet_v2")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtypes", default="f32,f16")
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    for name in a.models.split(","):
        for dt in a.dtypes.split(","):
            dtype = torch.float16 if dt == "f16" else torch.float32
            model = build(name).eval().cuda().to(dtype)
            r = RESOLUTION[name]
            x = torch.randn(a.batch, 3, r, r, device="cuda", dtype=dtype)
            row = {"model": name, "batch": a.batch, "resolution": r, "dtype": dt}
            with torch.inference_mode():
                for _ in range(5):
                    model(x)
                torch.cuda.synchronize()
                print(json.dumps({**row, "mode": "eager", "ms": time_fn(lambda: model(x))}), flush=True)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(x)
                torch.cuda.current_stream().wait_stream(s)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    model(x)
                print(json.dumps({**row, "mode": "cuda-graph", "ms": time_fn(graph.replay)}), flush=True)
                if a.compile:
                    compiled = torch.compile(model, mode="reduce-overhead")
                    for _ in range(5):
                        compiled(x)
                    torch.cuda.synchronize()
                    print(json.dumps({**row, "mode": "torch.compile", "ms": time_fn(lambda: compiled(x))}), flush=True)


if __name__ == "__main__":
    main()
