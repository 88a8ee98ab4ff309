"""Greedy generation with ONNX Runtime over a decoder exported with past keys and values
(fixtures/past/*.onnx, written without weights by scripts/past_fixtures.py): the
reference onnx/tests/past_kv.rs checks weft's KV-cache import against.

    python3 past_generate.py FIXTURE DIR PROMPT_IDS NEW

PROMPT_IDS: `1,5,9;3,3,7` (a sequence per batch entry, `;`-separated, all one length).
Writes DIR/model.onnx (every stubbed weight filled: seeded, products by N(0, 1/fan-in),
norm scales 1 + 0.1 N(0, 1), biases 0.05 N(0, 1), embedding tables N(0, 1): corpus_fill's
rules without its calibration) and prints two lines: `ids 5,9,...;...` (per sequence, the
NEW ids generated) and `margins 0.3,...;...` (per sequence and step, the top logit minus
the runner-up: how near a tie each pick was). The loop is Hugging Face's: the prompt with an empty past
(position ids 0..n, a mask of ones), then one token at a time, the `present.*` outputs
fed back as `past_key_values.*`.
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_fill as cf  # noqa: E402


def fill(model):
    rng = np.random.default_rng(11)
    values, _ = cf.initial(model, rng)
    stubs = cf.stubbed(model)
    for name, t in stubs.items():
        v = values[name]
        t.CopyFrom(numpy_helper.from_array(v.astype(np.float32), name))


def main():
    fixture, out, prompt, new = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    model = onnx.load(fixture, load_external_data=False)
    fill(model)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save(model, path)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    ids = np.array([[int(x) for x in row.split(",")] for row in prompt.split(";")], dtype=np.int64)
    batch, n = ids.shape
    names = [i.name for i in sess.get_inputs()]
    pasts = [i for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
    past = {i.name: np.zeros((batch, i.shape[1], 0, i.shape[3]), np.float32) for i in pasts}
    outputs = [o.name for o in sess.get_outputs()]
    got, margins = [[] for _ in range(batch)], []
    length = 0
    for step in range(new):
        feeds = {"input_ids": ids, "attention_mask": np.ones((batch, length + ids.shape[1]), np.int64)}
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(length, length + ids.shape[1], dtype=np.int64)[None].repeat(batch, 0)
        feeds.update(past)
        ys = dict(zip(outputs, sess.run(None, feeds)))
        last = ys["logits"][:, -1, :].astype(np.float64)
        pick = last.argmax(axis=-1)
        top2 = np.sort(last, axis=-1)[:, -2:]
        margins.append([float(t[1] - t[0]) for t in top2])
        for b in range(batch):
            got[b].append(int(pick[b]))
        length += ids.shape[1]
        past = {p.name: ys[p.name.replace("past_key_values.", "present.")] for p in pasts}
        ids = pick[:, None].astype(np.int64)
    print("ids " + ";".join(",".join(str(i) for i in row) for row in got))
    print("margins " + ";".join(",".join(f"{m[b]:.6g}" for m in margins) for b in range(batch)))


if __name__ == "__main__":
    main()
