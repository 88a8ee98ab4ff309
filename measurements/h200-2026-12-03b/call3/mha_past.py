"""(KV=heads: multi-head attention, every query head its own KV head.) A TinyLlama-shaped Hugging Face Llama (random weights, seeded) exported the way
optimum writes a decoder with past keys and values (scripts/past_fixtures.py's wrapper,
TorchScript exporter, f32, external data), and Hugging Face's greedy `generate` on the
same model in f32 on the GPU: the ids weft's ONNX path must give.

    python3 tinyllama_past.py OUTDIR LAYERS PROMPT NEW
Writes OUTDIR/model.onnx (+ its external data), OUTDIR/prompt.txt (comma-separated ids)
and OUTDIR/hf_ids.txt; prints the timings."""
import os
import sys
import time

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../scripts"))
import past_fixtures as pf  # noqa: E402

out, layers, prompt_len, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                               num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=int(os.environ.get("KV", "4")),
                               max_position_embeddings=2048, rms_norm_eps=1e-5)
cfg._attn_implementation = "eager"
model = transformers.LlamaForCausalLM(cfg).eval()
# Random init gives std 0.02 everywhere: keep it (the logits stay distinct enough).
rng = np.random.default_rng(5)
ids = rng.integers(0, 32000, size=(1, prompt_len))
with open(os.path.join(out, "prompt.txt"), "w") as f:
    f.write(",".join(str(int(i)) for i in ids[0]))
t = time.time()
with torch.no_grad():
    m = model.cuda()
    g = m.generate(torch.from_numpy(ids).cuda(), attention_mask=torch.ones_like(torch.from_numpy(ids)).cuda(),
                   max_new_tokens=new, do_sample=False, pad_token_id=0)
hf = g[0, prompt_len:].tolist()
with open(os.path.join(out, "hf_ids.txt"), "w") as f:
    f.write(",".join(str(i) for i in hf))
print(f"hf generate f32: {time.time() - t:.1f} s, ids {hf}", flush=True)
model = model.cpu()

# The export, through past_fixtures' wrapper (its config replaced by this one).
class Wrap(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = transformers.DynamicCache()
        for i in range(layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        o = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                   past_key_values=cache, use_cache=True, return_dict=True)
        flat = []
        for i in range(layers):
            flat += [o.past_key_values.layers[i].keys, o.past_key_values.layers[i].values]
        return (o.logits, *flat)

sample = {"input_ids": torch.zeros((1, 3), dtype=torch.long), "attention_mask": torch.ones((1, 8), dtype=torch.long),
          "position_ids": torch.arange(5, 8)[None]}
for i in range(layers):
    sample[f"past_key_values.{i}.key"] = torch.zeros((1, cfg.num_key_value_heads, 5, 64))
    sample[f"past_key_values.{i}.value"] = torch.zeros((1, cfg.num_key_value_heads, 5, 64))
outputs = ["logits"] + [f"present.{i}.{k}" for i in range(layers) for k in ("key", "value")]
total = "past_sequence_length + sequence_length"
dyn = {}
for n in sample:
    dyn[n] = ({0: "batch_size", 1: "sequence_length"} if n in ("input_ids", "position_ids")
              else {0: "batch_size", 1: total} if n == "attention_mask" else {0: "batch_size", 2: "past_sequence_length"})
for n in outputs:
    dyn[n] = {0: "batch_size", 1: "sequence_length"} if n == "logits" else {0: "batch_size", 2: total}
t = time.time()
path = os.path.join(out, "model.onnx")
torch.onnx.export(Wrap(model), tuple(sample.values()), path, dynamo=False, opset_version=17,
                  input_names=list(sample), output_names=outputs, dynamic_axes=dyn, do_constant_folding=True)
import onnx  # noqa: E402
m = onnx.load(path, load_external_data=False)
ext = sum(1 for t in m.graph.initializer if t.external_data)
print(f"exported in {time.time() - t:.1f} s: {len(m.graph.node)} nodes, {ext} external initializers, "
      f"files {sorted(os.listdir(out))[:5]}... ({len(os.listdir(out))})", flush=True)
