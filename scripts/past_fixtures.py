#!/usr/bin/env python3
"""Decoders with past keys and values, exported the way Hugging Face's optimum writes them
(issue 60, item 2): the graphs weft's import of `past_key_values.*` is tested on.

A wrapper takes the optimum inputs as flat tensors — `input_ids`, `attention_mask`
(past + new positions), `position_ids` (where the family takes them) and
`past_key_values.{i}.key` / `.value` `[batch, kv_heads, past, head_dim]` — fills a
`transformers.DynamicCache` with them, runs the model with `use_cache=True` and returns
`logits` and `present.{i}.key` / `.value`: the Concat of past and new along the sequence is
the cache's own `torch.cat`, as in optimum's exports. Both PyTorch exporters; the symbolic
dimensions named as optimum names them (`batch_size`, `sequence_length`,
`past_sequence_length`, `past_sequence_length + sequence_length`).

Each graph is written with its weights taken out (scripts/corpus_fixtures.py's `strip`);
onnx/tests/corpus_fill.py fills them at test time. The metadata `weft.fixture` says how a
test binds it: `dims` (the sizes of the sample below), `inputs` (`ids`, `ones`,
`positions` from the past length, or `normal`).

    python3 scripts/past_fixtures.py [--out onnx/tests/fixtures/past]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_fixtures as cf  # noqa: E402
import corpus_models as cm  # noqa: E402

BATCH, PAST, NEW = 1, 5, 3
# name -> (config class, model class, config, whether the model is given position ids)
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(cm.DECODER), True),
    "llama_nopos": ("LlamaConfig", "LlamaForCausalLM", dict(cm.DECODER), False),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(vocab_size=cm.VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64), True),
    # GPT-2 given no position ids computes them from the past's length (`cache_position`)
    # and gathers its position table at them.
    "gpt2_nopos": ("GPT2Config", "GPT2LMHeadModel",
                   dict(vocab_size=cm.VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64), False),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(cm.DECODER), True),
}


def build(torch, transformers, family):
    config_name, model_name, cfg, with_pos = FAMILIES[family]
    config = getattr(transformers, config_name)(**cfg)
    config._attn_implementation = "eager"
    config.use_cache = True
    model = getattr(transformers, model_name)(config).eval()
    layers = config.num_hidden_layers
    kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head = config.hidden_size // config.num_attention_heads

    class WithPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, *rest):
            position_ids = rest[0] if with_pos else None
            past = rest[1:] if with_pos else rest
            cache = transformers.DynamicCache()
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True, return_dict=True)
            pkv = out.past_key_values
            flat = []
            for i in range(layers):
                if hasattr(pkv, "layers"):
                    flat += [pkv.layers[i].keys, pkv.layers[i].values]
                else:
                    flat += [pkv.key_cache[i], pkv.value_cache[i]]
            return (out.logits, *flat)

    rng = np.random.default_rng(7)
    sample = {"input_ids": rng.integers(0, cm.VOCAB, size=(BATCH, NEW), dtype=np.int64),
              "attention_mask": np.ones((BATCH, PAST + NEW), dtype=np.int64)}
    kinds = {"input_ids": ["ids", cm.VOCAB], "attention_mask": ["ones"]}
    if with_pos:
        sample["position_ids"] = np.arange(PAST, PAST + NEW, dtype=np.int64)[None].repeat(BATCH, 0)
        kinds["position_ids"] = ["positions"]
    for i in range(layers):
        for kind in ("key", "value"):
            name = f"past_key_values.{i}.{kind}"
            sample[name] = rng.standard_normal((BATCH, kv, PAST, head)).astype(np.float32)
            kinds[name] = ["normal"]
    outputs = ["logits"] + [f"present.{i}.{k}" for i in range(layers) for k in ("key", "value")]
    return WithPast(model), sample, kinds, outputs


def export(torch, model, sample, outputs, path, exporter, opset):
    names = list(sample)
    xs = tuple(torch.from_numpy(v) for v in sample.values())
    total = "past_sequence_length + sequence_length"
    if exporter == "torchscript":
        dyn = {}
        for n in names:
            if n in ("input_ids", "position_ids"):
                dyn[n] = {0: "batch_size", 1: "sequence_length"}
            elif n == "attention_mask":
                dyn[n] = {0: "batch_size", 1: total}
            else:
                dyn[n] = {0: "batch_size", 2: "past_sequence_length"}
        for n in outputs:
            dyn[n] = {0: "batch_size", 1: "sequence_length"} if n == "logits" else {0: "batch_size", 2: total}
        torch.onnx.export(model, xs, path, dynamo=False, opset_version=opset, input_names=names,
                          output_names=outputs, do_constant_folding=True, dynamic_axes=dyn)
    else:
        auto = torch.export.Dim.AUTO
        shapes = tuple({0: auto, 1: auto} if n in ("input_ids", "position_ids", "attention_mask")
                       else {0: auto, 2: auto} for n in names)
        torch.onnx.export(model, xs, path, dynamo=True, opset_version=opset, external_data=False,
                          input_names=names, output_names=outputs, dynamic_shapes=(shapes,))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--out", default=os.path.join(here, "..", "onnx", "tests", "fixtures", "past"))
    p.add_argument("--only", default=None, help="family names, comma-separated")
    p.add_argument("--full", default=None, help="also keep the weighted files and ORT outputs here")
    a = p.parse_args()
    import onnx
    import torch
    import transformers

    os.makedirs(a.out, exist_ok=True)
    for family in FAMILIES:
        if a.only and family not in a.only.split(","):
            continue
        torch.manual_seed(0)
        model, sample, kinds, outputs = build(torch, transformers, family)
        with torch.no_grad():
            ref = model(*(torch.from_numpy(v) for v in sample.values()))
        for exporter, opset in cf.EXPORTS:
            path = os.path.join(a.out, f"{family}_{exporter}.onnx")
            try:
                export(torch, model, sample, outputs, path, exporter, opset)
            except Exception as e:  # noqa: BLE001 - report and go on with the next
                print(f"{family} {exporter}: export failed: {type(e).__name__}: {str(e)[:400]}", flush=True)
                continue
            m = onnx.load(path)
            binding = {}
            for i in m.graph.input:
                for axis, d in enumerate(i.type.tensor_type.shape.dim):
                    if d.dim_param:
                        binding[d.dim_param] = int(sample[i.name].shape[axis])
            if a.full:
                import onnxruntime as ort

                os.makedirs(a.full, exist_ok=True)
                onnx.save(m, os.path.join(a.full, f"{family}_{exporter}.onnx"))
                s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                got = s.run(None, {k: v for k, v in sample.items() if k in {i.name for i in s.get_inputs()}})
                err = max(float(np.abs(g - r.numpy()).max()) for g, r in zip(got, ref))
                print(f"{family}_{exporter}: ORT against PyTorch max |diff| {err:.3g}", flush=True)
            stubbed = cf.strip(m)
            for n in m.graph.node:
                del n.metadata_props[:]
                n.doc_string = ""
            meta = {"dims": binding, "inputs": kinds, "model": family, "exporter": exporter, "opset": opset,
                    "torch": torch.__version__, "transformers": transformers.__version__, "past": PAST}
            del m.metadata_props[:]
            e = m.metadata_props.add()
            e.key, e.value = "weft.fixture", json.dumps(meta, sort_keys=True)
            onnx.save(m, path)
            ins = [(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]) for i in m.graph.input]
            print(f"{family}_{exporter}: {len(m.graph.node)} nodes, {stubbed} stubbed, inputs {ins}, "
                  f"ops {sorted({n.op_type for n in m.graph.node})}, {os.path.getsize(path) / 1024:.0f} KiB",
                  flush=True)


if __name__ == "__main__":
    main()
