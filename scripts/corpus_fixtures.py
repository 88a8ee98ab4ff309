#!/usr/bin/env python3
"""The corpus's graph structures for CI, without their weights (issue 57 item 2).

Exports a chosen set of the corpus's architectures (scripts/corpus_models.py, the same
builders) with both of PyTorch's exporters, with symbolic spatial / sequence dimensions
where the exporter keeps them, and writes each graph to onnx/tests/fixtures/corpus/ with
its weights taken out: every float initializer of 32 or more elements that only a weight
slot reads (a Conv's or Gemm's or MatMul's weight, a bias, a norm's scale, bias or
statistics, an embedding table, an Add's or Mul's finite operand) keeps its name, type
and shape but no data (`data_location` EXTERNAL, location `stub`). onnx/tests/corpus_fill.py
fills them with seeded values at a realistic scale at test time (onnx/tests/corpus.rs).

The model's metadata `weft.fixture` (JSON) says how the test binds it: `dims` (each
symbolic dimension's size in CI), `inputs` (each graph input: `normal`, or `ids` with its
vocabulary size). At the end it prints every op type of the fixtures and, given the JSON
of a corpus run (`--corpus corpus.json`), the op types of the corpus no fixture has.

    python3 scripts/corpus_fixtures.py [--out onnx/tests/fixtures/corpus] [--corpus corpus.json]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_models as cm  # noqa: E402

# name -> (corpus entry, the inputs' CI size as the entry's inputs(), {input: {axis: dim}})
IMG = {"pixel_values": {2: "height", 3: "width"}}
SEQ = {"input_ids": {1: "sequence"}}
FIXTURES = {
    "mobilenet_v3_small": ("tv_mobilenet_v3_small", cm.image(32), IMG),
    "shufflenet_v2": ("tv_shufflenet_v2_x0_5", cm.image(32), IMG),
    "squeezenet": ("tv_squeezenet1_1", cm.image(32), IMG),
    "lraspp_mobilenet_v3": ("tv_lraspp_mobilenet_v3", cm.image(32), IMG),
    "vit_tv": ("tv_vit_small", cm.image(64), {}),
    "swin_tv": ("tv_swin_small", cm.image(32), IMG),
    "convnext_hf": ("hf_convnext", cm.image(32), IMG),
    "roberta": ("hf_roberta", cm.ids(8), SEQ),
    "deberta_v2": ("hf_deberta_v2", cm.ids(8), SEQ),
    "t5_encoder": ("hf_t5_encoder", cm.ids(8), SEQ),
    "llama": ("hf_llama", cm.ids(8), SEQ),
    "phi3": ("hf_phi3", cm.ids(8), SEQ),  # an empty Slice (the rotary split at a full head) into a Concat
    "gpt2": ("hf_gpt2", cm.ids(8), SEQ),
    "wav2vec2": ("hf_wav2vec2", cm.audio(1200), {"input_values": {1: "samples"}}),
    "whisper_encoder": ("hf_whisper_encoder", cm.mel(16, 64), {}),
    "densenet_small": ("tv_densenet_small", cm.image(32), IMG),
    "mobilevitv2": ("timm_mobilevitv2_050", cm.image(32), IMG),
}


def _densenet_small():
    # torchvision's DenseNet at a few channels: batch norms before convolutions (which no
    # exporter folds), average-pooling transitions, concatenations.
    import torchvision

    return torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2)


# Fixtures whose architecture is a small configuration of a corpus model's.
SMALL = {"tv_densenet_small": cm.Entry("tv_densenet_small", "torchvision", cm.tv_class(_densenet_small), cm.image())}
EXPORTS = (("torchscript", 17), ("dynamo", 18))

# (op, input index) whose float initializer is a weight: stubbed.
WEIGHT_SLOTS = {
    "Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (0, 1, 2), "MatMul": (0, 1),
    "BatchNormalization": (1, 2, 3, 4), "LayerNormalization": (1, 2), "InstanceNormalization": (1, 2),
    "GroupNormalization": (1, 2), "Gather": (0,), "Add": (0, 1), "Mul": (0, 1), "PRelu": (1,),
}
SMALLEST = 32


def strip(model):
    """Takes the data out of every weight initializer (see the module doc); returns how many."""
    from onnx import TensorProto, numpy_helper

    readers = {}
    for n in model.graph.node:
        for k, name in enumerate(n.input):
            readers.setdefault(name, []).append((n.op_type, k))
    outputs = {o.name for o in model.graph.output}
    count = 0
    for t in model.graph.initializer:
        if t.data_type != TensorProto.FLOAT or int(np.prod(t.dims)) < SMALLEST or t.name in outputs:
            continue
        slots = readers.get(t.name, [])
        if not slots or any(k not in WEIGHT_SLOTS.get(op, ()) for op, k in slots):
            continue
        if any(op in ("Add", "Mul") for op, _ in slots):
            v = numpy_helper.to_array(t)
            if not np.isfinite(v).all() or np.abs(v).max() >= 100:  # a mask, not a weight
                continue
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", "stub"
        count += 1
    return count


def export(torch, model, xs, names, dyn, path, exporter, opset):
    """Exports with the symbolic dimensions `dyn`; the dims the export kept symbolic."""
    import onnx

    if exporter == "torchscript":
        torch.onnx.export(model, xs, path, dynamo=False, opset_version=opset, input_names=names,
                          output_names=["output"], do_constant_folding=True, dynamic_axes=dyn or None)
    else:
        shapes = None
        if dyn:
            shapes = (tuple({a: torch.export.Dim.AUTO for a in dyn.get(n, {})} or None for n in names),)
        torch.onnx.export(model, xs, path, dynamo=True, opset_version=opset, external_data=False,
                          input_names=names, output_names=["output"], dynamic_shapes=shapes)
    m = onnx.load(path)
    kept = sorted({d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param})
    return m, kept


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--out", default=os.path.join(here, "..", "onnx", "tests", "fixtures", "corpus"))
    p.add_argument("--only", default=None, help="fixture names, comma-separated")
    p.add_argument("--corpus", default=None, help="a corpus run's JSON: report the op types no fixture has")
    p.add_argument("--coverage", action="store_true", help="export nothing: the op types of the fixtures in --out")
    a = p.parse_args()
    if a.coverage:
        import onnx

        ops = {f: sorted({n.op_type for n in onnx.load(os.path.join(a.out, f), load_external_data=False).graph.node})
               for f in sorted(os.listdir(a.out)) if f.endswith(".onnx")}
        return coverage(ops, a.corpus)
    import onnx
    import torch

    sys.path.insert(0, here)
    import corpus

    os.makedirs(a.out, exist_ok=True)
    ops = {}
    for fname, (entry_name, inputs, dyn) in FIXTURES.items():
        if a.only and fname not in a.only.split(","):
            continue
        entry = SMALL.get(entry_name) or cm.BY_NAME[entry_name]
        torch.manual_seed(0)
        model = entry.build()
        corpus.realistic(model, entry, torch)
        sample = inputs(corpus.INPUT_SEED)
        names = list(sample)
        xs = tuple(torch.from_numpy(v) for v in sample.values())
        for exporter, opset in EXPORTS:
            path = os.path.join(a.out, f"{fname}_{exporter}.onnx")
            # Outside no_grad, as users export: under it nn.MultiheadAttention takes its
            # fused fast path, which the TorchScript exporter cannot write.
            try:
                m, kept = export(torch, model, xs, names, dyn, path, exporter, opset)
            except Exception as e:  # noqa: BLE001 - symbolic dims refused: export at the fixed size
                print(f"{fname} {exporter}: symbolic export failed ({type(e).__name__}: {str(e)[:200]}); fixed size")
                m, kept = export(torch, model, xs, names, {}, path, exporter, opset)
            # The names the exporter gave the symbolic dims, bound to the CI size.
            binding = {}
            for i in m.graph.input:
                for axis, d in enumerate(i.type.tensor_type.shape.dim):
                    if d.dim_param:
                        binding[d.dim_param] = int(sample[i.name].shape[axis])
            kinds = {n: (["ids", cm.VOCAB] if v.dtype == np.int64 else ["normal"]) for n, v in sample.items()}
            stubbed = strip(m)
            for n in m.graph.node:  # the dynamo exporter's stack traces: bytes CI needs not
                del n.metadata_props[:]
                n.doc_string = ""
            meta = {"dims": binding, "inputs": kinds, "model": entry_name, "exporter": exporter, "opset": opset,
                    "torch": torch.__version__}
            del m.metadata_props[:]
            e = m.metadata_props.add()
            e.key, e.value = "weft.fixture", json.dumps(meta, sort_keys=True)
            onnx.save(m, path)
            ops[f"{fname}_{exporter}"] = sorted({n.op_type for n in m.graph.node})
            print(f"{fname}_{exporter}: {len(m.graph.node)} nodes, {stubbed} weights stubbed, symbolic {kept}, "
                  f"{os.path.getsize(path) / 1024:.0f} KiB", flush=True)
    return coverage(ops, a.corpus)


def coverage(ops, corpus_json):
    """Prints the fixtures' op types and, given a corpus run's JSON, the corpus's op types
    that no fixture has, with the models that have them."""
    every = sorted({op for v in ops.values() for op in v})
    print(f"op types of the fixtures ({len(every)}): {' '.join(every)}")
    if corpus_json:
        with open(corpus_json) as f:
            rows = json.load(f)["rows"]
        where = {}
        for r in rows:
            for op in r.get("ops", []):
                where.setdefault(op, set()).add(f"{r['model']}:{r['exporter']}")
        missing = [op for op in sorted(where) if op not in every]
        print(f"op types of the corpus: {len(where)}; no fixture has {len(missing)}:")
        for op in missing:
            print(f"  {op}: {', '.join(sorted(where[op])[:6])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
