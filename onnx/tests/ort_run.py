"""Runs an ONNX model with ONNX Runtime (CPU): inputs from DIR/input_N.npy, outputs to
DIR/output_N.npy. Usage: python3 ort_run.py MODEL DIR"""

import os
import sys

import numpy as np
import onnxruntime as ort


def main() -> None:
    model, d = sys.argv[1], sys.argv[2]
    opts = ort.SessionOptions()
    # weft compares with the model as written, not as ONNX Runtime would rewrite it.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    # weft's inputs are f32; an integer or bool input is cast to the type the model takes.
    types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
             "tensor(float16)": np.float16}
    feeds = {
        i.name: np.load(os.path.join(d, f"input_{k}.npy")).astype(types.get(i.type, np.float32))
        for k, i in enumerate(sess.get_inputs())
    }
    for k, y in enumerate(sess.run(None, feeds)):
        np.save(os.path.join(d, f"output_{k}.npy"), np.asarray(y, dtype=np.float32))


if __name__ == "__main__":
    main()
