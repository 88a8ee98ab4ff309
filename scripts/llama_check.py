#!/usr/bin/env python3
"""weft against Hugging Face transformers on the same Llama-family checkpoint.

Builds a random `LlamaForCausalLM` (or Mistral/Qwen2) from a small config with
transformers, saves it with `save_pretrained(safe_serialization=True)`, runs
`weft model run DIR` on the directory with the same token ids and compares the logits
with transformers' (eval mode, f32, eager attention). Needs torch and transformers (CPU
is enough); runs on the GPU machine too (`--target cuda`).

    python3 scripts/llama_check.py --weft target/release/weft --target cpu
    python3 scripts/llama_check.py --weft ... --target cuda --layers 4 --hidden 512 --seq 128

Exit 0 when every case is within the tolerance (f32: 1e-4 of the largest |logit|; f16:
5e-2), 1 otherwise.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers


def model_of(kind, a):
    common = dict(
        vocab_size=a.vocab,
        hidden_size=a.hidden,
        intermediate_size=a.intermediate,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        num_key_value_heads=a.kv_heads,
        max_position_embeddings=max(256, a.seq),
        rope_theta=a.rope_theta,
        rms_norm_eps=1e-5,
        tie_word_embeddings=a.tie,
        attn_implementation="eager",
    )
    if a.head_dim:
        common["head_dim"] = a.head_dim
    if kind == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    if kind == "mistral":
        return transformers.MistralForCausalLM(
            transformers.MistralConfig(sliding_window=None, **common)
        )
    if kind == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    raise SystemExit(f"unknown kind {kind}")


def check(kind, a, work):
    torch.manual_seed(a.seed)
    model = model_of(kind, a).eval()
    # HF initializes norms to ones and biases to zero: perturb them so that a weight read
    # from the wrong place shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.02 * torch.randn_like(p))
    ckpt = work / kind
    if a.save_dtype != "f32":
        # Stored in f16/bf16; the reference runs the same rounded weights in f32.
        model = model.to(getattr(torch, {"f16": "float16", "bf16": "bfloat16"}[a.save_dtype]))
    save = {"max_shard_size": a.shard_size} if a.shard_size else {}
    model.save_pretrained(ckpt, safe_serialization=True, **save)
    model = model.float()
    shards = sorted(f.name for f in ckpt.glob("*.safetensors"))
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(ids).logits.float().numpy()
    inputs, out = work / f"{kind}-in", work / f"{kind}-out"
    inputs.mkdir()
    np.save(inputs / "input_ids.npy", ids.numpy().astype(np.int64))
    cmd = [
        a.weft, "model", "run", str(ckpt), "--target", a.target, "--dtype", a.dtype,
        "--seq", str(a.seq), "--batch", str(a.batch), "--inputs", str(inputs),
        "--save", str(out), "--iters", "1", "--no-check",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        print(f"{kind}: weft exited {run.returncode}")
        return False
    got = np.load(out / "logits.npy")
    err = float(np.abs(got - want).max() / np.abs(want).max())
    tol = 1e-4 if a.dtype == "f32" else 5e-2
    same = float((got.argmax(-1) == want.argmax(-1)).mean())
    ok = err <= tol
    print(
        f"{kind:8} {a.target} {a.dtype} (stored {a.save_dtype}, {len(shards)} file(s)): logits {list(want.shape)}, max |weft − HF| / max |HF| "
        f"= {err:.2e} (tolerance {tol:.0e}), argmax agrees on {same:.1%}: "
        f"{'ok' if ok else 'WRONG'}"
    )
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--weft", default="target/release/weft")
    p.add_argument("--target", default="cpu")
    p.add_argument("--dtype", default="f32", choices=["f32", "f16"])
    p.add_argument("--kinds", default="llama,mistral,qwen2")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, help="each head's width, where not hidden / heads")
    p.add_argument("--intermediate", type=int, default=96)
    p.add_argument("--vocab", type=int, default=100)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--tie", action="store_true")
    p.add_argument("--seq", type=int, default=12)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-dtype", default="f32", choices=["f32", "f16", "bf16"])
    p.add_argument("--shard-size", help="save_pretrained's max_shard_size (e.g. 100KB): shards")
    a = p.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        results = [check(k, a, Path(tmp)) for k in a.kinds.split(",")]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
