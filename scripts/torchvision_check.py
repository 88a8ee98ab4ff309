#!/usr/bin/env python3
"""torchvision's own models, exported to ONNX, run in weft and in PyTorch: do they agree?

For each model (random weights, eval mode, batch 1): export to ONNX with PyTorch's
exporter, save a random input as `.npy` under the ONNX input's name, run
`weft model run FILE.onnx --target T --inputs DIR --save DIR` and compare weft's output
with PyTorch's (fp32, TF32 off) on the same input. Prints one JSON line per model:

    {"model", "target", "opset", "nodes", "max_abs", "normalized", "ok"}

where normalized = max |weft - torch| / max |torch| and ok means normalized <= 1e-3.

    python3 scripts/torchvision_check.py --weft target/release/weft --target cuda
"""
import argparse
import json
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
import torch
import torchvision

RESOLUTION = {"resnet50": 224, "inception_v3": 299, "mobilenet_v2": 224}
TOLERANCE = 1e-3


def build(name):
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True)
    return getattr(torchvision.models, name)(weights=None)


def clean(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def export(model, x, path):
    # The TorchScript exporter writes the classic opset-17 graph; the dynamo exporter
    # is the fallback where it is gone.
    try:
        torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False,
                          input_names=["input"], output_names=["logits"])
    except Exception:  # noqa: BLE001 - any failure: try the other exporter
        torch.onnx.export(model, (x,), path, dynamo=True,
                          input_names=["input"], output_names=["logits"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weft", default="target/release/weft")
    p.add_argument("--target", default="cuda")
    p.add_argument("--models", default="resnet50,inception_v3,mobilenet_v2")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    status = 0
    for name in a.models.split(","):
        model = build(name).eval()
        r = RESOLUTION[name]
        x = torch.randn(1, 3, r, r)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"{name}.onnx")
            export(model, x, path)
            m = onnx.load(path)
            inp = m.graph.input[0].name
            out = m.graph.output[0].name
            ins, outs = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            os.makedirs(ins)
            np.save(os.path.join(ins, clean(inp) + ".npy"), x.numpy())
            dev = "cuda" if torch.cuda.is_available() else "cpu"
            with torch.inference_mode():
                want = model.to(dev)(x.to(dev)).float().cpu().numpy()
            run = subprocess.run(
                [a.weft, "model", "run", path, "--target", a.target, "--inputs", ins,
                 "--save", outs, "--no-check", "--iters", "3"],
                capture_output=True, text=True)
            row = {"model": name, "target": a.target,
                   "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
                   "nodes": len(m.graph.node)}
            if run.returncode != 0:
                row.update(ok=False, error=(run.stderr or run.stdout).strip()[-400:])
                status = 1
            else:
                got = np.load(os.path.join(outs, clean(out) + ".npy"))
                diff = float(np.abs(got - want).max())
                norm = diff / max(float(np.abs(want).max()), 1e-30)
                row.update(max_abs=diff, normalized=norm, ok=norm <= TOLERANCE)
                time = re.search(r"median\s+(\S+ \S+)", run.stdout)
                row["weft_median"] = time.group(1) if time else None
                status |= 0 if row["ok"] else 1
        print(json.dumps(row), flush=True)
    raise SystemExit(status)


if __name__ == "__main__":
    main()
