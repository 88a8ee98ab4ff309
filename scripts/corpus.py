#!/usr/bin/env python3
"""weft's model corpus: the architectures people export from PyTorch (torchvision, timm,
Hugging Face transformers; scripts/corpus_models.py lists them), exported with both of
PyTorch's ONNX exporters and run by weft on each target, against ONNX Runtime and PyTorch.

    python3 scripts/corpus.py --weft target/release/weft --targets cuda:f32,cuda:f16,vulkan:f16 \\
        --work /tmp/corpus --json corpus.json --doc docs/corpus.md
    python3 scripts/corpus.py --targets cpu:f32 --models hf_bert,tv_resnet18 ...   (no GPU)
    python3 scripts/corpus.py doc a.json [b.json ...] docs/corpus.md   (the page again from JSON)

For each model (worker processes in parallel, `--jobs`):

1. build it from its config (random weights, `torch.manual_seed(0)`, no download), then
   bring the weights to a realistic scale: every parameter the default init leaves
   constant (zero biases, unit gains) drawn at random around its value (bias 0.05 N(0,1),
   gain 1 + 0.1 N(0,1)), so a dropped bias or gain shows; batch-norm statistics
   calibrated by four forward passes on random inputs of batch 2 with only the
   batch norms in training mode (cumulative averages), then eval. Activations are then of
   order one and f16 is meaningful;
2. PyTorch's own outputs on the inputs: fp32 (TF32 off), and fp16 (`model.half()`) where
   PyTorch has CUDA;
3. export with each of `--exports` (`torchscript:17` is `torch.onnx.export(...,
   dynamo=False, opset_version=17)`, `dynamo:18` the dynamo exporter at opset 18): an
   exporter that raises gives an `export failed` row;
4. ONNX Runtime (CPU, graph optimizations off) on the file: against PyTorch fp32 it says
   whether the export is faithful (relative error within weft's f32 tolerance);
5. `weft model run FILE --target T --dtype D --inputs DIR --save DIR --no-check --iters 1`
   for each of `--targets`, its output compared with ONNX Runtime's on the same file:
   `right` or `wrong` with the error, `refused` with weft's message, `failed` (a crash or
   a timeout). The error is weft's own measure (`weft_model::measure::relative_error`:
   max |got - want| / max |want|), the tolerance weft's (`measure::tolerance`: 1e-3 in
   f32, 5e-2 in f16, f16 judged against the f32 reference). Beside it: weft against
   PyTorch fp32 and, in f16, PyTorch's own fp16 error against its fp32 (issue 57 item 5).
   An f16 run past 5e-2 is right only where PyTorch's own fp16 is at least as far from
   its fp32 and weft no further (`judge`): the page marks those runs.

On the GPU machine (no network there: everything is built from configs), one device call:

    TIMEOUT=600 OUT=$OUT bash scripts/device-run.sh run corpus python3 scripts/corpus.py \
        --weft .dev/bin/weft --targets cuda:f32,cuda:f16,vulkan:f16 --jobs 16 \
        --json $OUT/corpus.json --doc $OUT/corpus.md

then `cp corpus.md docs/corpus.md`. `--probe` compiles without running (`weft model graph
--emit`): which models weft refuses on any target, on a machine without the GPU.

The JSON holds one row per (model, exporter, opset, target, dtype); the docs page has the
same table, the refusals by message and how it was run. No network is needed.
"""
import argparse
import collections
import copy
import datetime
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_models  # noqa: E402

TOL = {"f32": 1e-3, "f16": 5e-2}  # weft_model::measure::tolerance


def judge(row):
    """`right` or `wrong` for a run with an error against ONNX Runtime. In f16 a run past
    5e-2 is still right where PyTorch's own fp16 on the same model is at least as far from
    its fp32 and weft is no further from PyTorch fp32 than that: such a model amplifies
    f16's rounding by itself (deep random networks do), and 5e-2 is not what f16 can give
    there. Marked `within_fp16` so the page says which runs were judged so."""
    err, dtype = row["error"], row["dtype"]
    row.pop("within_fp16", None)
    if err <= TOL[dtype]:
        row["status"] = "right"
        return row
    torch16, weft_torch = row.get("torch_f16_error"), row.get("weft_vs_torch")
    if dtype == "f16" and torch16 is not None and weft_torch is not None \
            and err <= torch16 and weft_torch <= torch16 and not row.get("weft_nonfinite"):
        row["status"] = "right"
        row["within_fp16"] = True
    else:
        row["status"] = "wrong"
    return row
CALIBRATION_SEEDS = (101, 102, 103, 104)
INPUT_SEED = 7
EXTRA_SEED = 1000  # the first of `--f16-seeds` more inputs


def clean(name):
    """A tensor's .npy name as weft reads and writes it."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def relative_error(got, want):
    """weft_model::measure::relative_error: max |got - want| / max |want| over want's finite
    elements; a NaN or infinity in got where want is finite, or a shape mismatch, is inf."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    finite = np.isfinite(want)
    scale = max(float(np.abs(want[finite]).max()) if finite.any() else 0.0, np.finfo(np.float64).tiny)
    same_special = (got == want) | (np.isnan(got) & np.isnan(want))
    if (~finite & ~same_special).any():
        return float("inf")
    d = np.abs(got[finite] - want[finite])
    if d.size and not np.isfinite(d).all():
        return float("inf")
    return float(d.max() / scale) if d.size else 0.0


def nonfinite(a):
    return int((~np.isfinite(np.asarray(a, dtype=np.float64))).sum())


# ------------------------------------------------------------------------ one model


def realistic(model, entry, torch):
    """Perturbs constant parameters and calibrates batch norms (see the module doc)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and float(p.max() - p.min()) != 0.0:
                continue
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            if float(p.flatten()[0]) == 1.0:
                p.copy_(1.0 + 0.1 * noise)
            elif float(p.flatten()[0]) == 0.0:
                p.copy_(0.05 * noise)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    model.eval()
    if norms:
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the calibration passes
            m.train()
        with torch.no_grad():
            for seed in CALIBRATION_SEEDS:
                xs = [torch.from_numpy(np.concatenate([v, v[::-1] * 0.5 + np.roll(v, 1)]))
                      for v in entry.inputs(seed).values()]
                model(*xs)
        model.eval()
    return len(norms)


def export(torch, model, args, names, path, exporter, opset):
    if exporter == "torchscript":
        torch.onnx.export(model, args, path, dynamo=False, opset_version=opset, input_names=names,
                          output_names=["output"], do_constant_folding=True)
    else:
        torch.onnx.export(model, args, path, dynamo=True, opset_version=opset, external_data=False,
                          input_names=names, output_names=["output"])


def ort_run(path, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, feeds)[0], dtype=np.float32), [i.name for i in sess.get_inputs()]


def refusal(text):
    """weft's message: its `error:` lines, else the output's last lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    err = [ln for ln in lines if ln.lower().startswith(("error", "weft: error", "caused by"))]
    picked = err or lines[-3:]
    return " | ".join(picked)[:600]


def run_weft(a, path, inputs_dir, out_dir, target, dtype):
    if a.probe:  # compile and emit only: no device needed, the target's limits and emitter
        cmd = [a.weft, "model", "graph", path, "--target", target, "--dtype", dtype, "--emit", out_dir]
    else:
        cmd = [a.weft, "model", "run", path, "--target", target, "--dtype", dtype, "--inputs", inputs_dir,
               "--save", out_dir, "--no-check", "--iters", "1"]
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.weft_timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "message": f"timeout after {a.weft_timeout} s"}, time.time() - t
    took = time.time() - t
    if r.returncode == 0:
        res = {"status": "compiles" if a.probe else "ran"}
        # The timed run against the checked one: 0 where the two runs agree bit for bit
        # (issue 57 item 6).
        replayed = re.search(r"^replayed\s+(\S+)", r.stdout, re.M)
        if replayed:
            res["replayed"] = float(replayed.group(1).rstrip(","))
        return res, took
    text = (r.stderr or "") + "\n" + (r.stdout or "")
    if r.returncode in (1, 2):
        msg = refusal(r.stderr or r.stdout).replace(path, os.path.basename(path))
        return {"status": "refused", "message": msg, "rc": r.returncode}, took
    return {"status": "failed", "message": f"exit {r.returncode}: {refusal(text)}", "rc": r.returncode}, took


def f16_seeds(a, path, feeds, extra, out_dir, target):
    """weft's f16 and PyTorch's fp16 errors against PyTorch fp32 on each extra input."""
    got = []
    for k, (ins_k, w32, torch16) in enumerate(extra):
        in_k = out_dir + f"-seed{k}-in"
        out_k = out_dir + f"-seed{k}"
        os.makedirs(in_k, exist_ok=True)
        for name in feeds:
            np.save(os.path.join(in_k, clean(name) + ".npy"), ins_k[name])
        res, _ = run_weft(a, path, in_k, out_k, target, "f16")
        out = os.path.join(out_k, "output.npy")
        if res["status"] == "ran" and os.path.exists(out):
            got.append({"weft": relative_error(np.load(out).astype(np.float64), w32), "torch": torch16})
        shutil.rmtree(in_k, ignore_errors=True)
        shutil.rmtree(out_k, ignore_errors=True)
    return got


def one_model(a, name):
    """Every export and target of one model: a list of rows."""
    import onnx
    import torch

    torch.set_num_threads(max(1, a.threads))
    torch.manual_seed(0)
    entry = corpus_models.BY_NAME[name]
    base = {"model": name, "family": entry.family}
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        model = entry.build()
        norms = realistic(model, entry, torch)
    except Exception as e:  # noqa: BLE001 - a model that does not build is a row, not a crash
        return [dict(base, exporter="-", opset=None, target="-", dtype="-", status="build failed",
                     message=f"{type(e).__name__}: {str(e)[:400]}")]
    inputs = entry.inputs(INPUT_SEED)
    xs = tuple(torch.from_numpy(v) for v in inputs.values())
    cuda = torch.cuda.is_available()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        # fp16 products accumulate in f32, as weft's do.
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    dev = "cuda" if cuda else "cpu"
    with torch.no_grad():
        want32 = model.to(dev)(*(x.to(dev) for x in xs)).float().cpu().numpy()
        want16 = None
        if cuda:
            half = [x.to(dev).half() if x.is_floating_point() else x.to(dev) for x in xs]
            try:  # a copy: half() rounds the weights in place, and the export needs them whole
                want16 = copy.deepcopy(model).half()(*half).float().cpu().numpy()
            except Exception:  # noqa: BLE001 - an op without fp16 on CUDA: no fp16 reference
                want16 = None
        # More inputs for item 5's comparison (`--f16-seeds`): one input's error is noisy
        # (which elements round which way), the median over several is not.
        extra = []
        if cuda and want16 is not None:
            for k in range(a.f16_seeds):
                ins_k = entry.inputs(EXTRA_SEED + k)
                xs_k = [torch.from_numpy(v).to(dev) for v in ins_k.values()]
                w32 = model(*xs_k).float().cpu().numpy()
                half_k = [x.half() if x.is_floating_point() else x for x in xs_k]
                w16 = copy.deepcopy(model).half()(*half_k).float().cpu().numpy()
                extra.append((ins_k, w32, relative_error(w16, w32)))
        model.to("cpu")
    base.update(batch_norms=norms, out_shape=list(want32.shape), out_max=float(np.abs(want32).max()),
                torch_f16_error=None if want16 is None else relative_error(want16, want32),
                torch_f16_nonfinite=None if want16 is None else nonfinite(want16))
    for spec in a.exports.split(","):
        exporter, opset = spec.split(":")
        opset = int(opset)
        row0 = dict(base, exporter=exporter, opset=opset)
        tag = f"{exporter}{opset}"
        path = os.path.join(work, f"{tag}.onnx")
        t = time.time()
        try:
            # Outside no_grad, as users export: under it nn.MultiheadAttention takes its
            # fused fast path, which the TorchScript exporter cannot write.
            export(torch, model, xs, list(inputs), path, exporter, opset)
            m = onnx.load(path)
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()
            rows.append(dict(row0, target="-", dtype="-", status="export failed",
                             message=f"{type(e).__name__}: {' '.join(msg[:3])[:500]}"))
            continue
        row0["export_s"] = round(time.time() - t, 1)
        row0["nodes"] = len(m.graph.node)
        row0["ops"] = sorted({n.op_type for n in m.graph.node})
        graph_inputs = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
        # The exporters keep our names, but a TorchScript export drops an unused input.
        feeds = {k: v for k, v in inputs.items() if k in graph_inputs}
        in_dir = os.path.join(work, f"{tag}-in")
        os.makedirs(in_dir, exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(in_dir, clean(k) + ".npy"), v)
        try:
            ort_out, _ = ort_run(path, feeds)
        except Exception as e:  # noqa: BLE001
            rows.append(dict(row0, target="-", dtype="-", status="ort failed",
                             message=f"{type(e).__name__}: {str(e)[:400]}"))
            continue
        row0["ort_vs_torch"] = relative_error(ort_out, want32)
        row0["faithful"] = row0["ort_vs_torch"] <= TOL["f32"]
        for td in a.targets.split(","):
            target, dtype = td.split(":")
            out_dir = os.path.join(work, f"{tag}-{target}-{dtype}")
            shutil.rmtree(out_dir, ignore_errors=True)
            res, took = run_weft(a, path, in_dir, out_dir, target, dtype)
            row = dict(row0, target=target, dtype=dtype, weft_s=round(took, 1), **res)
            if res["status"] == "ran":
                got_path = os.path.join(out_dir, "output.npy")
                if not os.path.exists(got_path):
                    row.update(status="failed", message=f"weft saved no output.npy ({os.listdir(out_dir)})")
                else:
                    got = np.load(got_path).astype(np.float64)
                    err = relative_error(got, ort_out)
                    row.update(error=err, weft_vs_torch=relative_error(got, want32), weft_nonfinite=nonfinite(got))
                    judge(row)
                    if dtype == "f16" and extra:
                        row["f16_seeds"] = f16_seeds(a, path, feeds, extra, out_dir, target)
                    if dtype == "f16" and base["torch_f16_error"] is not None:
                        row["f16_vs_torch_fp16"] = {
                            "weft": row["weft_vs_torch"], "torch": base["torch_f16_error"]}
            rows.append(row)
            shutil.rmtree(out_dir, ignore_errors=True)
        if not a.keep:
            os.remove(path)
    return rows


def worker(args):
    a, name = args
    t = time.time()
    try:
        rows = one_model(a, name)
    except Exception as e:  # noqa: BLE001
        rows = [{"model": name, "family": corpus_models.BY_NAME[name].family, "exporter": "-", "opset": None,
                 "target": "-", "dtype": "-", "status": "script error",
                 "message": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-800:]}"}]
    return name, rows, time.time() - t


# ------------------------------------------------------------------------ the page


def fmt(x):
    return "" if x is None else f"{x:.1e}"


def cell(r):
    s = r["status"]
    if s in ("right", "wrong"):
        unfaithful = "" if r.get("faithful", True) else f" (export unfaithful: ORT vs torch {fmt(r['ort_vs_torch'])})"
        fp16 = (f" (past 5e-2, within PyTorch fp16's own {fmt(r.get('torch_f16_error'))})"
                if r.get("within_fp16") else "")
        return f"{s} {fmt(r['error'])}{fp16}{unfaithful}"
    if s in ("refused", "failed", "export failed", "build failed", "ort failed", "script error"):
        return f"{s}: {r.get('message', '')}".replace("|", "/").replace("\n", " ")
    return s


def generic(msg):
    """A refusal without its file, node names and opset: one line per cause."""
    msg = re.sub(r"`[^`]*\.onnx`", "FILE", msg or "")
    msg = re.sub(r"node `[^`]*`", "node N", msg)
    return re.sub(r"at opset \d+", "at opset K", msg)


def doc(meta, rows):
    out = ["# The model corpus", "",
           "Architectures people export from PyTorch, exported with both of PyTorch's ONNX exporters and",
           "run by weft on each target against ONNX Runtime on the same file (the export's semantics)",
           "and ONNX Runtime against PyTorch (the export's faithfulness). `scripts/corpus.py` builds,",
           "exports, runs and writes this page; `scripts/corpus_models.py` lists the models and their",
           "configs (random weights, batch norms calibrated so activations are of order one; no",
           "download). Tolerances are weft's (`weft_model::measure::tolerance`): 1e-3 in f32, 5e-2 in",
           "f16, f16 against the f32 reference; errors are max |weft - ORT| / max |ORT|. An f16 run past",
           "5e-2 counts as right only where PyTorch's own fp16 on the same model is at least as far from",
           "its fp32 and weft no further from PyTorch fp32 (the model amplifies f16's rounding by itself);",
           "such runs are marked in the table. The same",
           "graph structures run in CI without a GPU: `onnx/tests/corpus.rs` fills 34 exports of these",
           "(committed without weights under `onnx/tests/fixtures/corpus`) and checks them on the",
           "interpreter and lavapipe against ONNX Runtime, each twice for bit-identical results.", "",
           "## How it was run", "",
           f"- command: `{meta['command']}`",
           f"- date {meta['date']}, machine `{meta['machine']}`, {meta['cpus']} CPUs, GPU: {meta['gpu']}",
           f"- torch {meta['torch']}, torchvision {meta['torchvision']}, timm {meta['timm']}, "
           f"transformers {meta['transformers']}, onnx {meta['onnx']}, onnxruntime {meta['onnxruntime']}",
           f"- weft: {meta['weft']}",
           *(["- **compile only** (`--probe`: `weft model graph --emit` per target, no device): which models weft "
              "refuses, no outputs compared; the run on the GPU machine replaces this page"] if meta.get("probe") else []), f"- wall time {meta['wall_s']:.0f} s with {meta['jobs']} worker processes "
           "(not a figure of speed)", ""]
    runs = [r for r in rows if r["target"] != "-"]
    archs = sorted({r["model"] for r in rows})
    out += ["## Summary", "", f"{len(archs)} architectures, {len(rows)} rows.", ""]
    by = collections.defaultdict(collections.Counter)
    for r in runs:
        by[(r["target"], r["dtype"])][r["status"]] += 1
    statuses = ["right", "wrong", "compiles", "refused", "failed"]
    out += ["| target | dtype | " + " | ".join(statuses) + " |", "|---|---|" + "---|" * len(statuses)]
    for (t, d), c in sorted(by.items()):
        out.append(f"| {t} | {d} | " + " | ".join(str(c[s]) for s in statuses) + " |")
    out.append("")
    for (t, d) in sorted(by):
        ran = {r["model"] for r in runs if (r["target"], r["dtype"]) == (t, d)
               and r["status"] in ("right", "wrong", "compiles")}
        right = {r["model"] for r in runs if (r["target"], r["dtype"]) == (t, d) and r["status"] == "right"}
        verb = "compile" if meta.get("probe") else "run"
        out.append(f"- {t} {d}: {len(ran)} of {len(archs)} architectures {verb} in at least one export"
                   + ("" if meta.get("probe") else f", {len(right)} right in at least one") + ".")
    bad = [r for r in rows if r["target"] == "-"]
    if bad:
        out.append(f"- exports that failed (no weft run): {len(bad)}: " +
                   ", ".join(f"{r['model']} {r['exporter']}{r['opset'] or ''}" for r in bad))
    replayed = [r for r in runs if r.get("replayed") is not None]
    if replayed:
        differ = [f"{r['model']} {r['exporter']}{r['opset']} {r['target']}:{r['dtype']} ({fmt(r['replayed'])})"
                  for r in replayed if r["replayed"] != 0]
        out.append(f"- two runs of the same inputs (weft's timed run against its checked one) identical in "
                   f"{len(replayed) - len(differ)} of {len(replayed)} runs" + (": differ in " + ", ".join(differ)
                                                                              if differ else ""))
    unfaithful = sorted({f"{r['model']} {r['exporter']}{r['opset']} ({fmt(r['ort_vs_torch'])})"
                         for r in runs if r.get("faithful") is False})
    if unfaithful:
        out.append("- exports unfaithful to PyTorch (ORT vs PyTorch fp32 above 1e-3): " + ", ".join(unfaithful))
    # Item 5 of issue 57: weft's f16 against PyTorch's own fp16, both against PyTorch fp32.
    pairs = [r for r in runs if r["dtype"] == "f16" and r.get("weft_vs_torch") is not None
             and r.get("torch_f16_error") is not None]
    if pairs:
        closer = [r for r in pairs if r["weft_vs_torch"] <= r["torch_f16_error"]]
        beyond = [r for r in pairs if r.get("within_fp16") and r in closer]
        if beyond:
            out.append("- f16 runs past the 5e-2 tolerance, judged right because PyTorch's own fp16 is further "
                       "still from fp32 (deep random networks amplify rounding; weft rounds less than PyTorch's "
                       "fp16): " +
                       ", ".join(f"{r['model']} {r['exporter']} {r['target']} (weft {fmt(r['weft_vs_torch'])}, "
                                 f"PyTorch fp16 {fmt(r['torch_f16_error'])})" for r in beyond))
    f16 = [r for r in runs if r.get("f16_vs_torch_fp16")]
    if f16:
        worse = [r for r in f16 if r["f16_vs_torch_fp16"]["weft"] > r["f16_vs_torch_fp16"]["torch"]]
        out.append(f"- f16 against PyTorch fp32: weft's error at most PyTorch fp16's in {len(f16) - len(worse)} "
                   f"of {len(f16)} runs; non-finite outputs where PyTorch fp16 has none: "
                   f"{sum(1 for r in f16 if r.get('weft_nonfinite') and not r.get('torch_f16_nonfinite'))}")
    seeded = [r for r in runs if r.get("f16_seeds") and r.get("f16_vs_torch_fp16")]
    if seeded:
        def med(r, who):
            v = [r["f16_vs_torch_fp16"][who]] + [s[who] for s in r["f16_seeds"]]
            return float(np.median(v))
        worse = [r for r in seeded if med(r, "weft") > med(r, "torch")]
        n = 1 + min(len(r["f16_seeds"]) for r in seeded)
        out.append(f"- over {n} inputs each (`--f16-seeds`), weft's median f16 error at most PyTorch fp16's median "
                   f"in {len(seeded) - len(worse)} of {len(seeded)} runs" + (": not in " + ", ".join(
                       f"{r['model']} {r['exporter']} {r['target']} ({fmt(med(r, 'weft'))} against "
                       f"{fmt(med(r, 'torch'))})" for r in worse) if worse else ""))
    out.append("")
    refusals = collections.defaultdict(lambda: collections.defaultdict(set))
    for r in runs:
        if r["status"] in ("refused", "failed"):
            refusals[generic(r.get("message", ""))][f"{r['model']} {r['exporter']}{r['opset']}"].add(
                f"{r['target']}:{r['dtype']}")
    if refusals:
        out += ["## Refusals and failures by message", "",
                "File, node and opset taken out of each message; the targets are listed where the refusal "
                "is not on every one.", "", "| message | exports |", "|---|---|"]
        every_target = {f"{r['target']}:{r['dtype']}" for r in runs}
        for msg, who in sorted(refusals.items(), key=lambda kv: -len(kv[1])):
            names = [w + ("" if on == every_target else f" ({', '.join(sorted(on))})") for w, on in sorted(who.items())]
            out.append(f"| {msg.replace('|', '/')} | {len(names)}: {', '.join(names)} |")
        out.append("")
    out += ["## Every run", "",
            "| model | family | exporter | opset | target | dtype | result | ORT vs torch | weft vs torch | "
            "torch fp16 vs fp32 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["family"], r["model"], r["exporter"], r["opset"] or 0, r["target"],
                                          r["dtype"])):
        tf16 = fmt(r.get("torch_f16_error")) if r.get("dtype") == "f16" else ""
        out.append(f"| {r['model']} | {r['family']} | {r['exporter']} | {r['opset'] or ''} | {r['target']} | "
                   f"{r['dtype']} | {cell(r)} | {fmt(r.get('ort_vs_torch'))} | {fmt(r.get('weft_vs_torch'))} | "
                   f"{tf16} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------ main


def versions():
    import onnx
    import onnxruntime
    import timm
    import torch
    import torchvision
    import transformers

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return dict(torch=torch.__version__, torchvision=torchvision.__version__, timm=timm.__version__,
                transformers=transformers.__version__, onnx=onnx.__version__, onnxruntime=onnxruntime.__version__,
                gpu=gpu)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "doc":
        # `doc JSON... PAGE`: the page again from one or more runs' JSON (the first one's
        # metadata), every run judged again by today's rule.
        meta, rows = None, []
        for path in sys.argv[2:-1]:
            with open(path) as f:
                data = json.load(f)
            meta = meta or data["meta"]
            rows += data["rows"]
        for r in rows:
            if r.get("error") is not None and r.get("status") in ("right", "wrong"):
                judge(r)
        with open(sys.argv[-1], "w") as f:
            f.write(doc(meta, rows))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weft", default="target/release/weft")
    p.add_argument("--targets", default="cuda:f32,cuda:f16,vulkan:f16", help="TARGET:DTYPE, comma-separated")
    p.add_argument("--exports", default="torchscript:17,dynamo:18", help="EXPORTER:OPSET, comma-separated")
    p.add_argument("--models", default="all", help="names or families (scripts/corpus_models.py), comma-separated")
    p.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1))
    p.add_argument("--threads", type=int, default=0, help="torch threads per worker (default: CPUs / jobs)")
    p.add_argument("--work", default="/tmp/weft-corpus")
    p.add_argument("--json", default="corpus.json")
    p.add_argument("--doc", default=None, help="write the markdown page here too")
    p.add_argument("--weft-timeout", type=int, default=240)
    p.add_argument("--f16-seeds", type=int, default=0,
                   help="f16 runs: weft's and PyTorch fp16's errors on this many more inputs (issue 57 item 5)")
    p.add_argument("--keep", action="store_true", help="keep the exported .onnx files under --work")
    p.add_argument("--list", action="store_true")
    p.add_argument("--probe", action="store_true",
                   help="compile only (`weft model graph --emit`): which models weft refuses, on any machine")
    a = p.parse_args()
    if a.list:
        for e in corpus_models.ENTRIES:
            print(f"{e.name:32} {e.family}")
        return 0
    wanted = a.models.split(",")
    names = [e.name for e in corpus_models.ENTRIES
             if "all" in wanted or e.name in wanted or e.family in wanted]
    unknown = [w for w in wanted if w != "all" and w not in corpus_models.BY_NAME
               and w not in {e.family for e in corpus_models.ENTRIES}]
    if unknown:
        print(f"unknown models or families: {unknown} (--list lists them)", file=sys.stderr)
        return 2
    if not os.path.exists(a.weft):
        print(f"no weft binary at {a.weft} (cargo build --release -p weft-cli)", file=sys.stderr)
        return 2
    a.weft = os.path.abspath(a.weft)
    a.threads = a.threads or max(1, (os.cpu_count() or 1) // max(1, a.jobs))
    os.makedirs(a.work, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    start = time.time()
    rows = []
    ctx = multiprocessing.get_context("spawn")  # CUDA in the workers: no fork
    with ctx.Pool(a.jobs, maxtasksperchild=1) as pool:
        for name, got, took in pool.imap_unordered(worker, [(a, n) for n in names]):
            rows += got
            summary = collections.Counter(r["status"] for r in got)
            print(f"{name:32} {took:6.1f} s  " + ", ".join(f"{k} {v}" for k, v in sorted(summary.items())),
                  flush=True)
            # The rows so far, so that a run cut short (a device call's time limit) keeps
            # what it measured; the finished run rewrites the file with its metadata.
            with open(a.json + ".partial", "w") as f:
                json.dump({"meta": {"partial": True, "targets": a.targets, "exports": a.exports},
                           "rows": rows}, f, indent=1)
    weft_version = subprocess.run([a.weft, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    weft_version += f" (scripts at commit {commit or 'unknown'})"
    meta = dict(versions(), command=" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                machine=platform.node(), cpus=os.cpu_count(), weft=weft_version, jobs=a.jobs,
                wall_s=time.time() - start, targets=a.targets, exports=a.exports, probe=a.probe)
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.doc:
        with open(a.doc, "w") as f:
            f.write(doc(meta, rows))
    c = collections.Counter(r["status"] for r in rows)
    print(f"{len(names)} models, {len(rows)} rows in {time.time() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
