#!/usr/bin/env python3
"""PyTorch's end-to-end times for the models weft compiles, for comparison in one run.

Runs torchvision's ResNet-50, Inception-V3 and MobileNetV2 and Hugging Face's BERT-base
and GPT-2 (random weights, eval mode; token ids of `--seq` tokens for the transformers)
on the GPU: eager, eager replayed as one CUDA graph, and optionally torch.compile
(mode="reduce-overhead", which replays CUDA graphs). Times are GPU time per run from CUDA
events around back-to-back runs (median over repeats). fp32 runs with TF32 off.

    python3 scripts/torch_models.py --models resnet50,mobilenet_v2 --batch 1 --dtypes f32,f16 [--compile]
    python3 scripts/torch_models.py --models bert_base,gpt2 --seq 128 --dtypes f16 --compile

Prints one JSON object per line: {"model", "batch", "resolution", "dtype", "mode", "ms"};
a transformer's "resolution" is its sequence length.
"""
import argparse
import json
import statistics

import torch
import torchvision

RESOLUTION = {"resnet50": 224, "inception_v3": 299, "mobilenet_v2": 224}


TRANSFORMERS = ("bert_base", "gpt2")


def build(name):
    if name == "bert_base":
        import transformers

        return transformers.BertModel(transformers.BertConfig())
    if name == "gpt2":
        import transformers

        return transformers.GPT2Model(transformers.GPT2Config(use_cache=False))
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
    p.add_argument("--seq", type=int, default=128, help="the transformers' sequence length")
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    for name in a.models.split(","):
        for dt in a.dtypes.split(","):
            dtype = torch.float16 if dt == "f16" else torch.float32
            model = build(name).eval().cuda().to(dtype)
            if name in TRANSFORMERS:
                r = a.seq
                vocab = model.config.vocab_size
                x = torch.randint(0, vocab, (a.batch, r), device="cuda", dtype=torch.int64)
            else:
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
