#!/usr/bin/env python3
"""weft's speed on the models people export, beside PyTorch in the same call (issue 59).

The architectures of issue 59's table at their usual sizes (torchvision CNNs at 224 px,
Inception-v3 at 299, Hugging Face encoders and decoders at sequence 128; random weights
brought to a realistic scale as scripts/corpus.py does), exported with PyTorch's
TorchScript exporter (opset 17; the dynamo exporter where that one fails), then timed:

- PyTorch fp16: eager, eager replayed as one CUDA graph, torch.compile
  (`mode="reduce-overhead"`, which replays CUDA graphs);
- weft: `weft model run FILE --target T --dtype D --iters N --no-check` for each of
  `--weft-targets` (the median "kernel time of the whole model").

Speed is torch.compile's time / weft's, torch.compile's time the faster of reduce-overhead
and Inductor's kernels captured into one CUDA graph by hand (reduce-overhead's replays
check guards on the host; back-to-back calls of a small model can be bound by that). Two
phases so that one device call holds it:
worker processes build, calibrate and export every model and compile it once with
torch.compile (filling Inductor's cache); then one process times everything, one model
after another, so no two timings share the GPU. Times from phase 1 are not figures.

    python3 scripts/speed.py --weft .dev/bin/weft --batch 1 --json speed.json --doc speed.md

The figures of issue 59 (batch 1 and 8, fp16 and fp32, cuda and vulkan) take more than one
device call; each call writes its own JSON and `weft report --corpus a.json,b.json,...`
merges them (a later call's figure for the same model, batch and column replaces an
earlier one's). PyTorch's columns and weft's are timed in separate calls: they share
nothing but the GPU, and each side's cost is its own compiles (torch.compile's twice a
model in phase 2, ~45 s a model; weft's once per target and dtype, a few seconds each).
`scripts/device-run.sh corpus ...` runs these calls (measurements/next/README.md,
`issue59`); by hand:

    speed.py --batch 1 --no-torch --weft-targets cuda:f16,cuda:f32,vulkan:f16,vulkan:f32 --json b1-weft.json
    speed.py --batch 1 --no-weft --models resnet50,...  --json b1-torch-a.json   # ~5 models a call
    speed.py --batch 8 --no-torch --weft-targets cuda:f16,cuda:f32,vulkan:f16,vulkan:f32 --json b8-weft.json
    speed.py --batch 8 --no-weft --models ...  --json b8-torch-a.json

`--no-torch` times weft alone: its phase 1 only builds and exports, on the CPU (the workers
see no GPU), and nothing of PyTorch's is compiled. `--no-weft` times PyTorch alone and
exports nothing (only weft reads the ONNX file). `--hold` (not yet run on a GPU) skips
phase 2's recompiles: a process per model and torch.compile mode builds, warms up,
compiles and captures, all at once (`--jobs` at a time); when every one is ready they time
one after another, the same measurements as phase 2's (`scripts/speed_hold_check.py`
checks that ordering without a GPU). `--models` splits the corpus over calls;
`--dry-run` builds and exports the models at the batch on the CPU and times nothing (a
check that the script and its models work, e.g. at batch 8).
"""
import argparse
import datetime
import json
import multiprocessing
import os
import re
import statistics
import queue
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import corpus_models as cm  # noqa: E402

SEQ = 128


def llama_shaped():
    # Four layers of TinyLlama-1.1B's shape (issue 59's "Llama-shaped decoder").
    return cm.hf("LlamaConfig", "LlamaModel", mask=True, vocab_size=32000, hidden_size=2048,
                 intermediate_size=5632, num_hidden_layers=4, num_attention_heads=32,
                 num_key_value_heads=4, max_position_embeddings=2048)


def models(batch):
    img = lambda size=224: cm.image(size=size, batch=batch)  # noqa: E731
    ids = lambda vocab: batched_ids(vocab, batch)  # noqa: E731
    if batch == 1:  # the ids of the batch-1 figures measured so far, kept as they were
        ids = lambda vocab: cm.ids(tokens=SEQ, vocab=vocab)  # noqa: E731
    return [
        cm.Entry("resnet50", "torchvision", cm.tv("resnet50"), img()),
        cm.Entry("inception_v3", "torchvision", cm.tv("inception_v3", aux_logits=False, init_weights=True), img(299)),
        cm.Entry("googlenet", "torchvision", cm.tv("googlenet", aux_logits=False, init_weights=True), img()),
        cm.Entry("shufflenet_v2", "torchvision", cm.tv("shufflenet_v2_x1_0"), img()),
        cm.Entry("mobilenet_v2", "torchvision", cm.tv("mobilenet_v2"), img()),
        cm.Entry("regnet_y_400mf", "torchvision", cm.tv("regnet_y_400mf"), img()),
        cm.Entry("densenet121", "torchvision", cm.tv("densenet121"), img()),
        cm.Entry("efficientnet_b0", "torchvision", cm.tv("efficientnet_b0"), img()),
        cm.Entry("resnext50_32x4d", "torchvision", cm.tv("resnext50_32x4d"), img()),
        cm.Entry("convnext_tiny", "torchvision", cm.tv("convnext_tiny"), img()),
        cm.Entry("t5_encoder", "hf", cm.hf("T5Config", "T5EncoderModel"), ids(32128)),
        cm.Entry("gpt2", "hf", cm.hf("GPT2Config", "GPT2Model"), ids(50257)),
        cm.Entry("distilbert", "hf", cm.hf("DistilBertConfig", "DistilBertModel"), ids(30522)),
        cm.Entry("bert_base", "hf", cm.hf("BertConfig", "BertModel"), ids(30522)),
        cm.Entry("llama_shaped", "hf", llama_shaped(), ids(32000)),
    ]


def batched_ids(vocab, batch):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"input_ids": rng.integers(0, vocab, size=(batch, SEQ), dtype=np.int64)}
    return make


def time_fn(torch, fn, runs=20, repeats=10):
    """GPU time per call: CUDA events around `runs` back-to-back calls, median of repeats."""
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


def graph_of(torch, fn):
    """`fn` captured as one CUDA graph after warm-up runs on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def bar(row):
    """torch.compile's time: the faster of reduce-overhead and its kernels in one graph."""
    times = [t for t in (row.get("torch_compile"), row.get("inductor_graph")) if t]
    return min(times) if times else None


def build(entry, torch, calibrate=True):
    torch.manual_seed(0)
    model = entry.build()
    if calibrate:  # the export's weights; the timings need none (and the time it takes)
        corpus.realistic(model, entry, torch)
    return model.eval()


def prepare(args):
    """Phase 1 (a worker): build, export, save the inputs, compile once with torch.compile."""
    a, name = args
    entry = next(e for e in models(a.batch) if e.name == name)  # closures do not pickle
    if not a.torch:
        # A weft-only call's workers build and export on the CPU: the GPU is weft's alone.
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    torch.set_num_threads(2)
    work = os.path.join(a.work, entry.name)
    os.makedirs(os.path.join(work, "in"), exist_ok=True)
    t = time.time()
    try:
        model = build(entry, torch)
        inputs = entry.inputs(corpus.INPUT_SEED)
        for k, v in inputs.items():
            np.save(os.path.join(work, "in", corpus.clean(k) + ".npy"), v)
        xs = tuple(torch.from_numpy(v) for v in inputs.values())
        path = os.path.join(work, "model.onnx")
        exporter = None  # a PyTorch-only call exports nothing: weft's call names it
        if a.export:
            exporter = "torchscript17"
            try:
                corpus.export(torch, model, xs, list(inputs), path, "torchscript", 17)
            except Exception:  # noqa: BLE001 - the other exporter, as a user would try next
                exporter = "dynamo18"
                corpus.export(torch, model, xs, list(inputs), path, "dynamo", 18)
        if a.dry_run:  # a CPU check: one eager run of the model at this batch
            with torch.inference_mode():
                model(*xs)
            shapes = {k: list(v.shape) for k, v in inputs.items()}
            return entry.name, {"exporter": exporter, "inputs": shapes, "prepare_s": round(time.time() - t, 1)}
        if a.torch and a.torch_compile and not a.hold:  # --hold's workers compile their own
            m = model.cuda().half()
            dx = tuple(x.cuda() if x.dtype == torch.int64 else x.cuda().half() for x in xs)
            for mode in ("reduce-overhead", "default"):
                compiled = torch.compile(m, mode=mode)
                with torch.inference_mode():
                    for _ in range(3):
                        compiled(*dx)
                torch.cuda.synchronize()
                torch._dynamo.reset()
        prep = {"prepare_s": round(time.time() - t, 1)}
        if exporter:
            prep["exporter"] = exporter
        return entry.name, prep
    except Exception as e:  # noqa: BLE001 - a model that fails is a row
        return entry.name, {"error": f"{type(e).__name__}: {str(e)[:300]}"}


def weft_time(a, work, target, dtype):
    """One `weft model run`: its median, and what the call spent on it (the process's wall
    time and weft's compile, passes to the device's kernels: what a call's cost is made of)."""
    cmd = [a.weft, "model", "run", os.path.join(work, "model.onnx"), "--target", target, "--dtype", dtype,
           "--inputs", os.path.join(work, "in"), "--no-check", "--iters", str(a.iters)]
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.weft_timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {a.weft_timeout} s"}
    wall = round(time.time() - t, 2)
    m = re.search(r"^median\s+([\d.]+)\s*(us|ms|s)\b", r.stdout, re.M)
    if r.returncode != 0 or not m:
        return {"error": corpus.refusal((r.stderr or "") + "\n" + (r.stdout or "")), "wall_s": wall}
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    out = {"ms": float(m.group(1)) * scale, "wall_s": wall}
    c = re.search(r"^compiled\s.*\bin\s+([\d.]+)\s*s\b", r.stdout, re.M)
    if c:
        out["compile_s"] = float(c.group(1))
    return out


def measure(a, entry, prep, torch, held=None):
    """Phase 2: every timing of one model, alone on the GPU."""
    row = {"model": entry.name, "batch": a.batch, "source": entry.family, **prep}
    if "error" in prep:
        return row
    work = os.path.join(a.work, entry.name)
    if a.torch and held is not None:
        row.update(held.get(entry.name, {}))
    elif a.torch:
        torch_times(a, entry, row, torch)
    for target, dtype in a.columns:
        row[f"weft_{target}_{dtype}"] = weft_time(a, work, target, dtype)
    return row


def torch_times(a, entry, row, torch):
    """PyTorch's columns of one model: eager, one CUDA graph, torch.compile (two ways)."""
    model = build(entry, torch, calibrate=False).cuda().half()
    inputs = entry.inputs(corpus.INPUT_SEED)
    xs = tuple(torch.from_numpy(v).cuda() if v.dtype == np.int64 else torch.from_numpy(v).cuda().half()
               for v in inputs.values())
    with torch.inference_mode():
        for _ in range(3):
            model(*xs)
        torch.cuda.synchronize()
        row["eager"] = time_fn(torch, lambda: model(*xs))
        try:  # a model that copies from the host while it runs cannot be captured
            row["cuda_graph"] = time_fn(torch, graph_of(torch, lambda: model(*xs)).replay)
        except Exception as e:  # noqa: BLE001
            row["cuda_graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            torch.cuda.synchronize()
        if a.torch_compile:
            compiled = torch.compile(model, mode="reduce-overhead")
            for _ in range(5):
                compiled(*xs)
            torch.cuda.synchronize()
            row["torch_compile"] = time_fn(torch, lambda: compiled(*xs))
            torch._dynamo.reset()
            # reduce-overhead's replays carry guard checks on the host, which back-to-back
            # calls of a small model can be bound by; Inductor's kernels captured into one
            # CUDA graph by hand time the kernels alone. The faster of the two is the bar.
            try:
                inductor = torch.compile(model)
                row["inductor_graph"] = time_fn(torch, graph_of(torch, lambda: inductor(*xs)).replay)
            except Exception as e:  # noqa: BLE001
                row["inductor_graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    del model
    torch.cuda.empty_cache()


def torch_ready(a, name, part):
    """--hold: one model's PyTorch columns made ready to time, in a worker of its own.
    `part` "eager": eager, its CUDA graph and torch.compile's reduce-overhead; "inductor":
    Inductor's default mode captured into one CUDA graph (a process each: torch.compile's
    two modes in one process need `torch._dynamo.reset()` between them). Returns the
    (column, function) pairs to time and the columns that failed."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 2) // a.jobs)))
    import torch

    torch.set_num_threads(2)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    entry = next(e for e in models(a.batch) if e.name == name)
    model = build(entry, torch, calibrate=False).cuda().half()
    inputs = entry.inputs(corpus.INPUT_SEED)
    xs = tuple(torch.from_numpy(v).cuda() if v.dtype == np.int64 else torch.from_numpy(v).cuda().half()
               for v in inputs.values())
    ready, failed = [], {}
    with torch.inference_mode():
        if part == "eager":
            for _ in range(3):
                model(*xs)
            torch.cuda.synchronize()
            ready.append(("eager", lambda: model(*xs)))
            try:  # a model that copies from the host while it runs cannot be captured
                ready.append(("cuda_graph", graph_of(torch, lambda: model(*xs)).replay))
            except Exception as e:  # noqa: BLE001
                failed["cuda_graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                torch.cuda.synchronize()
            if a.torch_compile:
                compiled = torch.compile(model, mode="reduce-overhead")
                for _ in range(5):
                    compiled(*xs)
                ready.append(("torch_compile", lambda: compiled(*xs)))
        else:
            try:
                inductor = torch.compile(model)
                ready.append(("inductor_graph", graph_of(torch, lambda: inductor(*xs)).replay))
            except Exception as e:  # noqa: BLE001
                failed["inductor_graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    torch.cuda.synchronize()
    return ready, failed


def torch_time(fn):
    """--hold: one column's time, as torch_times takes it (under inference_mode), after
    three untimed calls: the GPU may have idled while the workers before it timed."""
    import torch

    with torch.inference_mode():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        return time_fn(torch, fn)


def held_worker(ready_fn, time_one, task, slots, barrier, lock, results, timeout):
    """--hold: one task's worker. Everything that runs on the GPU before a timing
    (building, warm-up, compiling, capturing: `ready_fn(*task)`) happens before `barrier`,
    which every worker reaches; then each times its columns under `lock`, one worker at a
    time, so no timing shares the GPU with anything. A worker that fails still reaches the
    barrier (the others would wait out `timeout`), with nothing to time; when the barrier
    breaks (a worker not ready in time, or dead), nobody times: one may still be compiling."""
    ready, out = [], {}
    try:
        with slots:  # at most --jobs builds and compiles at once (memory, cores)
            ready, out = ready_fn(*task)
    except Exception as e:  # noqa: BLE001 - a model that fails is a row
        ready, out = [], {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    try:
        barrier.wait(timeout=timeout)
    except threading.BrokenBarrierError:
        results.put((task[1:], {"error": f"not timed: not every worker was ready within {timeout} s"}))
        return
    if ready:
        with lock:
            for key, fn in ready:
                out[key] = time_one(fn)
    results.put((task[1:], out))


def held(tasks, ready_fn, time_one, jobs, timeout):
    """--hold's orchestration: a process per task (`ready_fn`, `time_one`: module-level
    functions), at most `jobs` getting ready at once, all timed one at a time after all
    are ready. Returns {task[1:]: what its worker reported}; a worker that died or did
    not report in time is an error."""
    ctx = multiprocessing.get_context("spawn")
    slots, barrier, lock, results = ctx.Semaphore(jobs), ctx.Barrier(len(tasks)), ctx.Lock(), ctx.Queue()
    procs = [ctx.Process(target=held_worker, args=(ready_fn, time_one, t, slots, barrier, lock, results, timeout))
             for t in tasks]
    for proc in procs:
        proc.start()
    got = {}
    # Ready within `timeout`, then one worker's timings at a time.
    deadline = time.time() + timeout + 60 + 30 * len(tasks)
    while len(got) < len(tasks) and time.time() < deadline:
        try:
            key, out = results.get(timeout=1)
            got[key] = out
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                while True:  # what the last ones put before they ended
                    try:
                        key, out = results.get(timeout=0.5)
                        got[key] = out
                    except queue.Empty:
                        break
                break
    for proc in procs:
        proc.join(timeout=30)
        if proc.is_alive():  # its figures are lost either way; it must not hold the GPU
            proc.terminate()
    for t in tasks:
        got.setdefault(t[1:], {"error": "its worker died or did not report"})
    return got


def held_torch(a, names):
    """--hold: every model's PyTorch columns; {model: the row's PyTorch keys}."""
    parts = ["eager", "inductor"] if a.torch_compile else ["eager"]
    got = held([(a, n, p) for n in names for p in parts], torch_ready, torch_time, a.jobs, a.hold_timeout)
    rows = {n: {} for n in names}
    for (name, _), out in got.items():
        rows[name].update(out)
    return rows


def fmt_ms(x):
    return "" if x is None else f"{x:.3f} ms"


def columns(text):
    """`cuda:f16,vulkan:f32` as (target, dtype) pairs; what is not that form is refused."""
    out = []
    for td in filter(None, text.split(",")):
        target, _, dtype = td.partition(":")
        if not target or dtype not in ("f16", "f32"):
            raise argparse.ArgumentTypeError(f"`{td}` is not TARGET:f16 or TARGET:f32")
        out.append((target, dtype))
    return out


def doc(meta, rows):
    targets = [f"{t}:{d}" for t, d in columns(meta["weft_targets"])]
    out = ["# weft against PyTorch on exported models", "",
           f"- {meta['date']}, GPU {meta['gpu']}, batch {meta['batch']}, PyTorch fp16 (torch {meta['torch']}, "
           f"transformers {meta['transformers']}); weft {meta['weft']}",
           f"- command: `{meta['command']}`", "",
           "- PyTorch: eager and eager replayed as one CUDA graph; torch.compile with "
           "`mode=\"reduce-overhead\"` and Inductor's kernels (default mode) captured into one CUDA graph by hand. "
           "Times: CUDA events around 20 back-to-back calls, median of 10; weft: `weft model run --iters N`'s "
           "median kernel time of the whole model. speed = the faster torch.compile time / weft cuda f16.", "",
           "| " + " | ".join(["model", "export", "eager", "CUDA graph", "torch.compile", "Inductor in one graph"]
                             + [f"weft {t}" for t in targets] + ["speed"]) + " |",
           "|---|---|---:|---:|---:|---:|" + "---:|" * len(targets) + "---:|"]
    speeds = []
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | failed: {r['error']} |")
            continue
        cells = []
        for t in targets:
            w = r.get("weft_" + t.replace(":", "_"), {})
            cells.append(fmt_ms(w.get("ms")) if "ms" in w else f"refused: {w.get('error', '')[:120]}")
        w16 = r.get("weft_cuda_f16", {}).get("ms")
        speed = bar(r) / w16 if w16 and bar(r) else None
        if speed:
            speeds.append(speed)
        torch_cells = [fmt_ms(r.get(k)) for k in ("eager", "cuda_graph", "torch_compile", "inductor_graph")]
        cells = [r["model"], r.get("exporter", "-")] + torch_cells + cells + ["" if speed is None else f"{speed:.2f}x"]
        out.append("| " + " | ".join(cells) + " |")
    if speeds:
        geo = float(np.exp(np.mean(np.log(speeds))))
        out += ["", f"Geometric mean of the speed over {len(speeds)} models: {geo:.2f}x; "
                f"at least torch.compile's speed on {sum(s >= 1.0 for s in speeds)} of {len(speeds)}."]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weft", default="target/release/weft")
    p.add_argument("--weft-targets", default="cuda:f16,cuda:f32,vulkan:f16")
    p.add_argument("--models", default="all")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--work", default="/tmp/weft-speed")
    p.add_argument("--json", default="speed.json")
    p.add_argument("--doc", default=None)
    p.add_argument("--weft-timeout", type=int, default=120)
    p.add_argument("--no-torch-compile", dest="torch_compile", action="store_false")
    p.add_argument("--no-torch", dest="torch", action="store_false",
                   help="time weft alone (PyTorch's columns from another call's file)")
    p.add_argument("--no-weft", dest="weft_columns", action="store_false",
                   help="time PyTorch alone and export nothing (weft's columns from another call's file)")
    p.add_argument("--hold", action="store_true",
                   help="PyTorch's columns: every model compiled at once in processes of its own, each "
                        "holding it until all are ready, then timed one at a time (no phase-2 recompiles)")
    p.add_argument("--hold-timeout", type=int, default=420,
                   help="seconds --hold's workers wait for each other before timing nothing")
    p.add_argument("--dry-run", action="store_true",
                   help="build, export and run each model once on the CPU at --batch; time nothing")
    a = p.parse_args()
    a.weft = os.path.abspath(a.weft)
    try:
        a.columns = columns(a.weft_targets) if a.weft_columns else []
    except argparse.ArgumentTypeError as e:
        p.error(f"--weft-targets: {e}")
    if not a.weft_columns:
        a.weft_targets = ""
    if not a.torch and not a.columns:
        p.error("--no-torch with no weft column leaves nothing to time")
    # Read by the workers: a PyTorch-only call exports nothing (a dry run checks the export).
    a.export = bool(a.columns) or a.dry_run
    names = [e.name for e in models(a.batch)]
    wanted = names if a.models == "all" else a.models.split(",")
    unknown = [m for m in wanted if m not in names]
    if unknown:
        p.error(f"--models: not in the corpus: {', '.join(unknown)} (it has {', '.join(names)})")
    entries = [e for e in models(a.batch) if e.name in wanted]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    start = time.time()
    ctx = multiprocessing.get_context("spawn")
    if a.hold and a.torch and not a.export:  # nothing for phase 1 to do: the workers build their own
        prepared = {e.name: {} for e in entries}
    else:
        with ctx.Pool(a.jobs, maxtasksperchild=1) as pool:
            prepared = dict(pool.imap_unordered(prepare, [(a, e.name) for e in entries]))
    prepared_s = time.time() - start
    print(f"prepared {len(prepared)} models in {prepared_s:.0f} s", flush=True)
    if a.dry_run:
        for name, prep in prepared.items():
            print(json.dumps({"model": name, "batch": a.batch, **prep}), flush=True)
        return 0 if all("error" not in p for p in prepared.values()) else 1
    import torch
    import transformers

    weft_version = "not timed (--no-weft)"
    if a.columns:
        weft_version = subprocess.run([a.weft, "--version"], capture_output=True, text=True).stdout.strip()
    # Written with every partial file too: a call cut short still says what it measured.
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device (a CPU check)", torch=torch.__version__, transformers=transformers.__version__,
                weft=weft_version, batch=a.batch, weft_targets=a.weft_targets, pytorch=a.torch,
                command=" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]))

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    held = None
    if a.hold and a.torch:
        held = held_torch(a, [e.name for e in entries if "error" not in prepared[e.name]])
        print(f"PyTorch's columns held and timed at {time.time() - start:.0f} s", flush=True)
    rows = []
    for e in entries:
        try:
            row = measure(a, e, prepared[e.name], torch, held)
        except Exception as ex:  # noqa: BLE001
            row = {"model": e.name, "error": f"{type(ex).__name__}: {str(ex)[:300]}"}
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(a.json + ".partial", "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    meta["wall_s"] = time.time() - start
    meta["prepare_wall_s"] = round(prepared_s, 1)  # phase 1; the rest is phase 2
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if os.path.exists(a.json + ".partial"):  # the whole file says it all (and $OUT brings few files back)
        os.remove(a.json + ".partial")
    if a.doc:
        with open(a.doc, "w") as f:
            f.write(doc(meta, rows))
    print(doc(meta, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
