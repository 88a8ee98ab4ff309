#!/usr/bin/env python3
"""weft's generation against Hugging Face transformers in the same call (issue 60).

Two parts, each optional:

- `--check`: a random `LlamaForCausalLM` (or Qwen2) saved with `save_pretrained`, greedy
  `generate` by transformers in f32 (eager attention) and `weft model generate DIR
  --dtype f32` on the same directory and prompt ids: the ids must be the same. A
  mismatch prints both sequences and transformers' top-2 logit margin at the first
  differing step (a near tie is reported as such, never counted as equal).
- `--speed`: TinyLlama-1.1B's shape in fp16 (random weights), decode tokens/s at each
  batch and prompt length of `--cases` (`1x128,8x128,1x1024`): transformers with a
  StaticCache, one decode step captured as a CUDA graph and replayed (the figure issue
  60 quotes), then `weft model generate zoo:llama` on each of `--targets` (targets other
  than cuda at the first case only, unless `--every-case`). Speed is weft's tokens/s over
  PyTorch's; the bound is HBM bandwidth (`hbm_gbs`: `--hbm-gbs`, else the GPU's from a
  small table) over the bytes one step reads.

    python3 scripts/generate_check.py --weft .dev/bin/weft --check --speed --json gen.json

The JSON (`device`, `date`, `weft`, `command`, `hbm_gbs`, and `speed` rows) is what
`weft report --generation gen.json` reads; several calls' files merge there (a later
row of the same batch, prompt and target replaces an earlier one).

Exit 0 when every check generated the same ids (and every run ran), 1 otherwise.
"""

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time

import torch
import transformers


def tiny_config(kind, layers, hidden, heads, kv_heads, vocab, tie):
    common = dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 2 + 64,
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                  max_position_embeddings=512, rms_norm_eps=1e-5, tie_word_embeddings=tie)
    if kind == "qwen2":
        return transformers.Qwen2Config(**common)
    return transformers.LlamaConfig(**common)


def tinyllama_config():
    return transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                                    num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
                                    max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0)


# Memory bandwidth in GB/s by GPU name (the first key the name contains): the HBM bound
# of a decode step. H200's is issue 60's figure; `--hbm-gbs` overrides.
HBM_GBS = (("H200", 4800.0), ("H100 80GB HBM3", 3350.0), ("H100 PCIe", 2000.0),
           ("A100-SXM4-80GB", 2039.0), ("A100 80GB PCIe", 1935.0))


def hbm_gbs(a, device):
    if a.hbm_gbs:
        return a.hbm_gbs
    return next((gbs for name, gbs in HBM_GBS if name in device), None)


def weft_generate(a, model, extra, timeout=300):
    cmd = [a.weft, "model", "generate", model] + extra
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"cmd": " ".join(cmd[1:]), "rc": None, "ids": [], "error": f"timeout after {timeout} s"}
    out = p.stdout + p.stderr
    res = {"cmd": " ".join(cmd[1:]), "rc": p.returncode, "wall_s": round(time.time() - t0, 1)}
    # `llama on vulkan (NVIDIA H200 (Vulkan, DiscreteGpu)), f16 storage, ...`: the device.
    m = re.search(r"^\S+ on \S+ \((.*)\), \S+ storage", out, re.M)
    if m:
        res["device"] = m.group(1)
    seqs = re.findall(r"^sequence (\d+): ([\d,]+)", out, re.M)
    res["ids"] = [[int(t) for t in s.split(",")] for _, s in seqs]
    m = re.search(r"decode step\s+([\d.]+) (ms|us|µs) \(device.*?= ([\d.]+) tokens/s per sequence, ([\d.]+) tokens/s in all", out)
    if m:
        step = float(m.group(1)) * (1.0 if m.group(2) == "ms" else 1e-3)
        res.update(step_ms=step, tok_s_seq=float(m.group(3)), tok_s_all=float(m.group(4)))
    for key in ("prefill", "first token", "memory", "bandwidth"):
        m = re.search(rf"^{key}\s+(.*)$", out, re.M)
        if m:
            res[key.replace(" ", "_")] = m.group(1).strip()
    if p.returncode != 0 or "step_ms" not in res:
        res["tail"] = out[-1500:]
    if a.save:
        with open(a.save, "a") as f:
            f.write(f"$ weft {res['cmd']}\n{out}\n")
    return res


def check(a, dev):
    results, ok = [], True
    for kind, tie in (("llama", False), ("qwen2", True)):
        torch.manual_seed(0)
        cfg = tiny_config(kind, a.check_layers, a.check_hidden, 8, 2, 1000, tie)
        cfg._attn_implementation = "eager"
        model = transformers.AutoModelForCausalLM.from_config(cfg).eval().to(dev)
        # Weights brought to a scale where greedy decoding does not sit on ties: random init
        # gives near-uniform logits.
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 2:
                    p.mul_(3.0)
        g = torch.Generator().manual_seed(1)
        prompt = torch.randint(0, cfg.vocab_size, (1, a.check_prompt), generator=g)
        with torch.no_grad():
            out = model.generate(prompt.to(dev), max_new_tokens=a.check_new, do_sample=False,
                                 min_new_tokens=a.check_new, output_scores=True,
                                 return_dict_in_generate=True, pad_token_id=0, eos_token_id=None)
        hf_ids = out.sequences[0, a.check_prompt:].tolist()
        with tempfile.TemporaryDirectory() as d:
            model.to("cpu").save_pretrained(d, safe_serialization=True)
            ids = ",".join(str(t) for t in prompt[0].tolist())
            r = weft_generate(a, d, ["--target", a.check_target, "--dtype", "f32", "--prompt-ids", ids,
                                     "--new-tokens", str(a.check_new), "--iters", "3"])
        weft_ids = r["ids"][0] if r["ids"] else []
        same = weft_ids == hf_ids
        row = {"kind": kind, "tied": tie, "hf": hf_ids, "weft": weft_ids, "same": same, "weft_rc": r["rc"]}
        if not same:
            ok = False
            first = next((i for i, (x, y) in enumerate(zip(hf_ids, weft_ids)) if x != y), min(len(hf_ids), len(weft_ids)))
            if first < len(out.scores):
                top = torch.topk(out.scores[first][0].float(), 2).values
                row["first_diff"] = first
                row["hf_top2_margin"] = float(top[0] - top[1])
            row["tail"] = r.get("tail", "")
        print(json.dumps(row), flush=True)
        results.append(row)
    return results, ok


def static_cache(cfg, batch, length, dev):
    try:  # transformers 5: batch, device and type taken from the first update
        return transformers.StaticCache(config=cfg, max_cache_len=length)
    except TypeError:
        return transformers.StaticCache(config=cfg, max_batch_size=batch, max_cache_len=length,
                                        device=dev, dtype=torch.float16)


def torch_static_decode(model, batch, prompt, steps=32, dev="cuda"):
    """Decode tokens/s with a StaticCache, one step captured as a CUDA graph."""
    cfg = model.config
    cache = static_cache(cfg, batch, prompt + steps + 8, dev)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device=dev)
    with torch.no_grad():
        pos = torch.arange(prompt, device=dev)
        model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
        tok = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        cpos = torch.tensor([prompt], device=dev)

        def step():
            logits = model(input_ids=tok, past_key_values=cache, cache_position=cpos, use_cache=True).logits
            return logits[:, -1].argmax(-1)

        if dev != "cuda":  # a dry run of the calls (no graph, no timing)
            step()
            return {}
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            nxt = step()
        times = []
        for i in range(steps):
            cpos.fill_(prompt + (i % 8))
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            graph.replay()
            e1.record()
            torch.cuda.synchronize()
            tok.copy_(nxt.view(batch, 1))
            times.append(e0.elapsed_time(e1))
    times.sort()
    ms = times[len(times) // 2]
    return {"step_ms": ms, "tok_s_seq": 1000.0 / ms, "tok_s_all": batch * 1000.0 / ms}


def speed(a):
    rows = []
    cases = [tuple(int(v) for v in c.split("x")) for c in a.cases.split(",")]
    torch_rows = {}
    if a.torch:
        torch.manual_seed(0)
        cfg = tinyllama_config()
        model = transformers.LlamaForCausalLM(cfg).to(torch.float16).to("cuda").eval()
        for b, p in cases:
            try:
                torch_rows[(b, p)] = torch_static_decode(model, b, p)
            except Exception as ex:  # noqa: BLE001
                torch_rows[(b, p)] = {"error": f"{type(ex).__name__}: {str(ex)[:300]}"}
            print(json.dumps({"torch": [b, p], **torch_rows[(b, p)]}), flush=True)
        del model
        torch.cuda.empty_cache()
    for b, p in cases:
        for t in a.targets.split(","):
            if t != "cuda" and (b, p) != cases[0] and not a.every_case:
                continue  # other targets at the first case only (compiles are long)
            extra = ["--kernels"] if a.kernels and (b, p) == cases[0] else []
            r = weft_generate(a, "zoo:llama", ["--target", t, "--dtype", "f16", "--batch", str(b),
                                               "--prompt-tokens", str(p), "--new-tokens", str(a.new),
                                               "--iters", "20"] + extra, timeout=a.weft_timeout)
            tr = torch_rows.get((b, p), {})
            row = {"batch": b, "prompt": p, "target": t, "dtype": "f16", "weft": r, "torch_cuda_graph": tr}
            if "tok_s_seq" in r and "tok_s_seq" in tr:
                row["speed"] = r["tok_s_seq"] / tr["tok_s_seq"]
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weft", required=True)
    p.add_argument("--check", action="store_true")
    p.add_argument("--check-target", default="cuda")
    p.add_argument("--check-layers", type=int, default=4)
    p.add_argument("--check-hidden", type=int, default=256)
    p.add_argument("--check-prompt", type=int, default=12)
    p.add_argument("--check-new", type=int, default=24)
    p.add_argument("--speed", action="store_true")
    p.add_argument("--targets", default="cuda,vulkan")
    p.add_argument("--cases", default="1x128,8x128,1x1024,8x1024")
    p.add_argument("--every-case", action="store_true", help="every target at every case (else cuda only past the first)")
    p.add_argument("--hbm-gbs", type=float, default=None, help="the GPU's memory bandwidth, GB/s (else from a table)")
    p.add_argument("--new", type=int, default=64)
    p.add_argument("--no-torch", dest="torch", action="store_false")
    p.add_argument("--weft-timeout", type=int, default=300)
    p.add_argument("--kernels", action="store_true", help="the first case's decode step per kernel")
    p.add_argument("--save", default=None, help="append every weft output to this file")
    p.add_argument("--json", default="generate.json")
    a = p.parse_args()
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    weft_version = subprocess.run([a.weft, "--version"], capture_output=True, text=True).stdout.strip()
    out, ok = {"device": device, "torch": torch.__version__, "transformers": transformers.__version__,
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "weft": weft_version, "hbm_gbs": hbm_gbs(a, device),
               "command": " ".join(["generate_check.py"] + sys.argv[1:])}, True
    if a.check:
        dev = "cuda" if a.check_target == "cuda" and torch.cuda.is_available() else "cpu"
        out["check"], ok = check(a, dev)
    if a.speed:
        out["speed"] = speed(a)
        ok = ok and all("step_ms" in r["weft"] for r in out["speed"])
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
