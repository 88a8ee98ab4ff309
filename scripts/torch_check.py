#!/usr/bin/env python3
"""Hugging Face's BERT-base and GPT-2, exported to ONNX, run in weft and in PyTorch: do they agree?

Two steps, so that weft runs between them (scripts/torch_check.sh drives all three):

    python3 scripts/torch_check.py prepare --model {bert_base,gpt2} --batch B --seq S --out DIR
    weft model run DIR/model.onnx --target cuda --dtype f32 --inputs DIR/inputs --save DIR/weft_f32 --no-check
    python3 scripts/torch_check.py compare --dir DIR --weft-out DIR/weft_f32 --dtype f32

prepare builds `transformers.BertModel(BertConfig())` (bert-base: 12 layers, hidden 768,
12 heads, intermediate 3072, vocab 30522) or `transformers.GPT2Model(GPT2Config())` (12
layers, n_embd 768, vocab 50257) from its config alone (random weights, torch.manual_seed(0),
eval mode, eager attention: the plain MatMul/Softmax graph). Unless --no-perturb, the
parameters the default init leaves constant (biases at 0, LayerNorm gains at 1) are
drawn at random too (bias ~ 0.05 N(0,1), gain ~ 1 + 0.1 N(0,1), a fixed seed), so a dropped
bias or gain shows. A small wrapper takes `input_ids` only (token types all 0; BERT gets no
attention mask, GPT-2 an all-ones one made inside the graph, so no padding either way) and
returns `last_hidden_state` (and BERT's `pooler_output`). It writes into DIR:

    model.onnx          opset 18, fixed shapes, one graph input `input_ids` [B, S], the
                        weights inside the file (weft reads no external data); exported
                        with the TorchScript exporter (dynamo=False), or the dynamo
                        exporter where that one raises
    inputs/input_ids.npy  the token ids [B, S] as float32 (weft reads every graph input as
                        float32; ids < 2^24 are exact) from numpy's default_rng(seed)
    input_ids_int64.npy the same ids as int64
    ref_f32/NAME.npy    PyTorch on CUDA in fp32, TF32 off
    ref_f16/NAME.npy    PyTorch on CUDA after model.half(), reduced-precision fp16
                        reductions off (stored as float32)
    ref_ort/NAME.npy    onnxruntime (CPU) on model.onnx: checks the export itself
    meta.json           model, shapes, exporter, versions, node histogram, errors

compare loads weft's outputs WDIR/NAME.npy (NAME the tensor's name with every character
outside [A-Za-z0-9._-] replaced by `_`), and prints, per output and reference, the max abs
error, max abs error / max |reference| ("normalized") and the verdict. The tolerances
(normalized error, i.e. max|weft - ref| <= tol * max|ref|):

    --dtype f32: weft f32 vs PyTorch fp32       tol 2e-3   (pass/fail)
    --dtype f16: weft f16 vs PyTorch fp32       tol 3e-2   (pass/fail)
                 weft f16 vs PyTorch fp16       reported only (both carry fp16 rounding;
                                                PyTorch fp16 vs fp32 is printed beside it
                                                as the floor to expect)
    both:        weft vs onnxruntime fp32       reported only (same graph, other runtime)

Any NaN/Inf or a shape mismatch fails, as does weft's saved copy of input_ids differing from
ours. Exit status: 0 pass, 1 a check failed, 2 missing files or bad arguments.
"""
import argparse
import collections
import json
import os
import re
import sys

import numpy as np

TOL_F32 = 2e-3
TOL_F16 = 3e-2
SEED_IDS = 1234
SEED_PERTURB = 1

OUTPUTS = {
    "bert_base": ["last_hidden_state", "pooler_output"],
    "gpt2": ["last_hidden_state"],
}


def clean(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------- prepare


def set_precision(torch):
    """fp32 matmuls in full fp32 (no TF32); fp16 matmuls without fp16 reductions."""
    done = []
    matmul = torch.backends.cuda.matmul
    try:  # the new API (torch >= 2.9); the legacy flag is the fallback
        matmul.fp32_precision = "ieee"
        done.append("cuda.matmul.fp32_precision=ieee")
    except Exception:  # noqa: BLE001
        try:
            matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            done.append("allow_tf32=False")
        except Exception as e:  # noqa: BLE001
            done.append(f"could not turn TF32 off: {e!r}")
    try:
        matmul.allow_fp16_reduced_precision_reduction = False
        done.append("fp16 reduced-precision reduction off")
    except Exception:  # noqa: BLE001
        pass
    return ", ".join(done)


def build(name, perturb):
    import torch
    import transformers

    if name == "bert_base":
        cfg_cls, model_cls, extra = transformers.BertConfig, transformers.BertModel, {}
    else:
        cfg_cls, model_cls, extra = transformers.GPT2Config, transformers.GPT2Model, {"use_cache": False}
    try:
        config = cfg_cls(attn_implementation="eager", **extra)
    except TypeError:
        config = cfg_cls(**extra)
    try:
        config._attn_implementation = "eager"
    except Exception as e:  # noqa: BLE001
        log(f"note: config._attn_implementation = 'eager' raised {e!r}")
    torch.manual_seed(0)
    model = model_cls(config)
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager" and hasattr(model, "set_attn_implementation"):
        try:
            model.set_attn_implementation("eager")
        except Exception as e:  # noqa: BLE001
            log(f"note: set_attn_implementation('eager') raised {e!r}")
        impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        log(f"WARNING: attention implementation is {impl!r}, not 'eager'")
    if perturb:
        g = torch.Generator().manual_seed(SEED_PERTURB)
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if p.numel() > 1 and float(p.max() - p.min()) != 0.0:
                    continue  # already random
                noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
                if float(p.flatten()[0]) == 1.0:  # a LayerNorm gain
                    p.copy_(1.0 + 0.1 * noise)
                else:  # a bias
                    p.copy_(0.05 * noise)
    return model.eval(), config, impl


def make_wrapper(torch, model, name):
    bert = name == "bert_base"

    # The keyword arguments the model takes, found by a trial call outside any trace.
    probe = torch.zeros(1, 4, dtype=torch.int64)
    kwargs = None
    for kw in ({"return_dict": False, "use_cache": False}, {"return_dict": False}, {"use_cache": False}, {}):
        if bert:
            kw = {k: v for k, v in kw.items() if k != "use_cache"}
        try:
            with torch.no_grad():
                model(input_ids=probe, **kw)
            kwargs = kw
            break
        except TypeError:
            continue
    if kwargs is None:
        kwargs = {}

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            if bert:
                out = self.m(input_ids=input_ids, **kwargs)
            else:
                # An explicit all-ones mask: without one, transformers 5 looks for packed
                # sequences in the position ids (torch.diff, which the TorchScript exporter
                # lacks). The causal mask is the model's own either way.
                out = self.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
            if isinstance(out, (tuple, list)):
                hidden = out[0]
                pooled = out[1] if bert else None
            else:
                hidden = out.last_hidden_state
                pooled = out.pooler_output if bert else None
            if bert:
                return hidden, pooled
            return hidden

    return Wrapper(model).eval(), kwargs


def rename_value(graph, old, new):
    if old == new:
        return
    for n in graph.node:
        for i, v in enumerate(n.input):
            if v == old:
                n.input[i] = new
        for i, v in enumerate(n.output):
            if v == old:
                n.output[i] = new
    for coll in (graph.input, graph.output, graph.value_info):
        for v in coll:
            if v.name == old:
                v.name = new


def export(torch, wrapper, ids, path, outputs):
    """Exports, then rewrites model.onnx as one file with the expected I/O names."""
    import onnx
    from onnx import external_data_helper

    common = dict(input_names=["input_ids"], output_names=outputs, opset_version=18)
    errors = []
    exporter = None
    with torch.no_grad():
        try:
            torch.onnx.export(wrapper, (ids,), path, dynamo=False, do_constant_folding=True,
                              keep_initializers_as_inputs=False, **common)
            exporter = "torchscript (dynamo=False)"
        except Exception as e:  # noqa: BLE001 - any failure: try the other exporter
            errors.append(f"dynamo=False: {type(e).__name__}: {str(e)[:2000]}")
            log(f"the TorchScript exporter failed, trying dynamo=True:\n  {errors[-1]}")
            try:
                try:
                    torch.onnx.export(wrapper, (ids,), path, dynamo=True, external_data=False, **common)
                except TypeError:
                    torch.onnx.export(wrapper, (ids,), path, dynamo=True, **common)
                exporter = "dynamo (dynamo=True)"
            except Exception as e2:  # noqa: BLE001
                errors.append(f"dynamo=True: {type(e2).__name__}: {str(e2)[:2000]}")
                raise SystemExit("export failed with both exporters:\n  " + "\n  ".join(errors))

    m = onnx.load(path)  # loads any external data too
    external_data_helper.convert_model_from_external_data(m)
    g = m.graph
    inits = {t.name for t in g.initializer}
    real_inputs = [v for v in g.input if v.name not in inits]
    if len(real_inputs) != len(g.input):  # initializers listed as inputs: drop them
        keep = list(real_inputs)
        del g.input[:]
        g.input.extend(keep)
    if len(g.input) != 1:
        raise SystemExit(f"expected one graph input, found {[v.name for v in g.input]}")
    rename_value(g, g.input[0].name, "input_ids")
    if len(g.output) != len(outputs):
        raise SystemExit(f"expected outputs {outputs}, found {[v.name for v in g.output]}")
    for v, want in zip(list(g.output), outputs):
        rename_value(g, v.name, want)
    for f in os.listdir(os.path.dirname(path) or "."):  # stale external-data files
        if f != os.path.basename(path) and f.startswith(os.path.basename(path)):
            os.remove(os.path.join(os.path.dirname(path), f))
    onnx.save(m, path)
    try:
        onnx.checker.check_model(path)
    except Exception as e:  # noqa: BLE001 - weft and onnxruntime have the last word
        log(f"WARNING: onnx.checker: {type(e).__name__}: {str(e)[:500]}")
    return m, exporter, errors


def weft_op_names():
    """Every quoted CamelCase word in weft's ONNX importer (onnx/src/import/*.rs), or None
    where the sources are not beside this script: a node type not among them is one weft
    cannot import (a hint only; weft's own error has the last word)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "src", "import")
    if not os.path.isdir(root):
        return None
    names = set()
    for f in os.listdir(root):
        if f.endswith(".rs"):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                names.update(re.findall(r'"([A-Z][A-Za-z0-9]*)"', fh.read()))
    return names


def errors_of(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return {"shape": f"{list(got.shape)} vs {list(want.shape)}"}
    diff = np.abs(got - want)
    ref = float(np.abs(want).max()) if want.size else 0.0
    max_abs = float(diff.max()) if diff.size else 0.0
    return {
        "max_abs": max_abs,
        "max_ref": ref,
        "normalized": max_abs / max(ref, 1e-30),
        "finite": bool(np.isfinite(got).all()),
    }


def prepare(a):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import onnx
    import torch
    import transformers

    out = a.out
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, onnx {onnx.__version__}, "
        f"CUDA available: {torch.cuda.is_available()}")
    precision = set_precision(torch)
    log(f"precision: {precision}")

    model, config, impl = build(a.model, not a.no_perturb)
    outputs = OUTPUTS[a.model]
    vocab = int(config.vocab_size)
    log(f"model {a.model}: {type(model).__name__}, layers {config.num_hidden_layers}, hidden {config.hidden_size}, "
        f"heads {config.num_attention_heads}, vocab {vocab}, attention {impl!r}, "
        f"parameters {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M, perturbed {not a.no_perturb}")

    ids_np = np.random.default_rng(a.seed).integers(0, vocab, size=(a.batch, a.seq), dtype=np.int64)
    np.save(os.path.join(out, "input_ids_int64.npy"), ids_np)
    np.save(os.path.join(out, "inputs", clean("input_ids") + ".npy"), ids_np.astype(np.float32))
    ids = torch.from_numpy(ids_np)

    wrapper, call_kwargs = make_wrapper(torch, model, a.model)
    log(f"model called as model(input_ids=..., **{call_kwargs})")
    path = os.path.join(out, "model.onnx")
    m, exporter, export_errors = export(torch, wrapper, ids, path, outputs)
    hist = collections.Counter(n.op_type for n in m.graph.node)
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=None)
    log(f"exporter: {exporter}; opset {opset}; {len(m.graph.node)} nodes, {len(m.graph.initializer)} initializers, "
        f"{os.path.getsize(path) / 2**20:.1f} MiB")
    log("graph input:  " + ", ".join(f"{v.name} {[d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]}"
                                     for v in m.graph.input))
    log("graph output: " + ", ".join(f"{v.name} {[d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]}"
                                     for v in m.graph.output))
    log("node types (count):")
    for op, n in hist.most_common():
        log(f"  {op:<24} {n}")
    known = weft_op_names()
    unknown = sorted(op for op in hist if known is not None and op not in known)
    if unknown:
        log(f"WARNING: node types weft's ONNX importer never names (likely unsupported): {unknown}")

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev != "cuda":
        log("WARNING: no CUDA: the references are computed on the CPU, fp16 included")
    refs = {}
    for kind, dtype in (("f32", torch.float32), ("f16", torch.float16)):
        wrapper = wrapper.to(device=dev, dtype=dtype)  # outside inference_mode: parameters stay ordinary
        with torch.inference_mode():
            got = wrapper(ids.to(dev))
        got = got if isinstance(got, tuple) else (got,)
        refs[kind] = [t.float().cpu().numpy() for t in got]
    for kind, arrays in refs.items():
        os.makedirs(os.path.join(out, f"ref_{kind}"), exist_ok=True)
        for name, arr in zip(outputs, arrays):
            np.save(os.path.join(out, f"ref_{kind}", clean(name) + ".npy"), arr.astype(np.float32))

    meta = {
        "model": a.model, "batch": a.batch, "seq": a.seq, "seed": a.seed, "vocab": vocab,
        "perturbed": not a.no_perturb, "attn_implementation": impl, "call_kwargs": call_kwargs,
        "exporter": exporter, "export_errors": export_errors, "opset": opset,
        "nodes": len(m.graph.node), "node_types": dict(hist.most_common()), "outputs": outputs,
        "node_types_unknown_to_weft": unknown,
        "torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__,
        "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "precision": precision,
        "torch_f16_vs_f32": {}, "ort_vs_torch_f32": {},
    }
    for name, r32, r16 in zip(outputs, refs["f32"], refs["f16"]):
        e = errors_of(r16, r32)
        meta["torch_f16_vs_f32"][name] = e
        log(f"torch fp16 vs fp32  {name:<18} max_abs {e.get('max_abs', float('nan')):.3e}  "
            f"normalized {e.get('normalized', float('nan')):.3e}  (max|ref| {e.get('max_ref', float('nan')):.3g})")

    # The export itself, checked on onnxruntime's CPU provider.
    try:
        import onnxruntime as ort

        meta["onnxruntime"] = ort.__version__
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feed_name = sess.get_inputs()[0].name
        got = sess.run(outputs, {feed_name: ids_np})
        os.makedirs(os.path.join(out, "ref_ort"), exist_ok=True)
        for name, arr, r32 in zip(outputs, got, refs["f32"]):
            np.save(os.path.join(out, "ref_ort", clean(name) + ".npy"), np.asarray(arr, dtype=np.float32))
            e = errors_of(arr, r32)
            meta["ort_vs_torch_f32"][name] = e
            bad = "shape" in e or not e["finite"] or e["normalized"] > TOL_F32
            log(f"onnxruntime vs torch fp32 {name:<18} max_abs {e.get('max_abs', float('nan')):.3e}  "
                f"normalized {e.get('normalized', float('nan')):.3e}"
                + ("  <-- THE EXPORT DISAGREES WITH PYTORCH" if bad else "  (the export is faithful)"))
    except Exception as e:  # noqa: BLE001
        meta["ort_error"] = f"{type(e).__name__}: {e}"
        log(f"onnxruntime check skipped: {meta['ort_error'][:500]}")

    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    log(f"prepared {out}")


# ---------------------------------------------------------------------------- compare


def compare(a):
    meta_path = os.path.join(a.dir, "meta.json")
    if not os.path.exists(meta_path):
        log(f"missing {meta_path}: run `prepare` first")
        return 2
    with open(meta_path) as f:
        meta = json.load(f)
    outputs = meta["outputs"]
    tag = f"{meta['model']} B={meta['batch']} S={meta['seq']} weft {a.dtype}"
    ok = True

    # weft's copy of the input: did it read the ids we meant?
    ours = np.load(os.path.join(a.dir, "input_ids_int64.npy"))
    theirs_path = os.path.join(a.weft_out, clean("input_ids") + ".npy")
    if os.path.exists(theirs_path):
        theirs = np.load(theirs_path)
        if theirs.shape != ours.shape or not np.array_equal(theirs.astype(np.int64), ours):
            log(f"FAIL {tag}: weft's input_ids.npy differs from ours")
            ok = False

    gate = ("f32", TOL_F32) if a.dtype == "f32" else ("f32", TOL_F16)
    rows = []
    for name in outputs:
        wpath = os.path.join(a.weft_out, clean(name) + ".npy")
        if not os.path.exists(wpath):
            log(f"FAIL {tag}: missing {wpath} (found: {sorted(os.listdir(a.weft_out)) if os.path.isdir(a.weft_out) else 'no folder'})")
            return 2
        got = np.load(wpath).astype(np.float32)
        refs = [("f32", "torch fp32")]
        if a.dtype == "f16":
            refs.append(("f16", "torch fp16"))
        refs.append(("ort", "onnxruntime fp32"))
        for kind, label in refs:
            rpath = os.path.join(a.dir, f"ref_{kind}", clean(name) + ".npy")
            if not os.path.exists(rpath):
                log(f"  ({label} reference missing: {rpath})")
                continue
            want = np.load(rpath)
            e = errors_of(got, want)
            gating = kind == gate[0]
            if "shape" in e:
                verdict = f"FAIL shape {e['shape']}"
                ok = False
            elif not e["finite"]:
                verdict = "FAIL non-finite values"
                ok = False
            elif gating:
                passed = e["normalized"] <= gate[1]
                verdict = ("pass" if passed else "FAIL") + f" (tol {gate[1]:g})"
                ok &= passed
            else:
                verdict = "info"
            line = f"  {name:<18} vs {label:<17}"
            if "max_abs" in e:
                line += f" max_abs {e['max_abs']:.3e}  max|ref| {e['max_ref']:.3g}  normalized {e['normalized']:.3e}"
            line += f"  {verdict}"
            if kind == "f16":
                base = meta.get("torch_f16_vs_f32", {}).get(name, {})
                if "normalized" in base:
                    line += f"   [torch fp16 vs fp32 itself: {base['normalized']:.3e}]"
            rows.append(line)
    log(f"{'PASS' if ok else 'FAIL'} {tag} (exporter: {meta.get('exporter')}, {meta.get('nodes')} nodes)")
    for r in rows:
        log(r)
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare", help="export to ONNX, save the inputs and PyTorch's references")
    pp.add_argument("--model", choices=sorted(OUTPUTS), required=True)
    pp.add_argument("--batch", type=int, required=True)
    pp.add_argument("--seq", type=int, required=True)
    pp.add_argument("--out", required=True)
    pp.add_argument("--seed", type=int, default=SEED_IDS, help="numpy seed of the token ids")
    pp.add_argument("--no-perturb", action="store_true",
                    help="keep the default init's zero biases and unit LayerNorm gains")
    pc = sub.add_parser("compare", help="compare weft's saved outputs with the references")
    pc.add_argument("--dir", required=True)
    pc.add_argument("--weft-out", required=True)
    pc.add_argument("--dtype", choices=["f32", "f16"], required=True)
    a = p.parse_args()
    if a.cmd == "prepare":
        prepare(a)
        return 0
    return compare(a)


if __name__ == "__main__":
    sys.exit(main())
