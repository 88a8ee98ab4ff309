"""Fills a corpus fixture (fixtures/corpus/*.onnx, written without its weights by
scripts/corpus_fixtures.py) and runs it with ONNX Runtime: the graph weft checks in CI.

    python3 corpus_fill.py FIXTURE DIR

Writes DIR/model.onnx (every stubbed initializer filled, the symbolic dimensions bound to
the sizes in the model's `weft.fixture` metadata), DIR/input_N.npy (float32; token ids as
whole floats) and DIR/output_N.npy (ONNX Runtime, CPU, graph optimizations off, f32); and
DIR/symbolic.onnx, the same weights with the exporter's symbolic dimensions kept (for
tests/symbolic.rs, which runs it at several lengths).

The values are seeded (the same every run) and brought to a realistic scale, so that
activations are of order one and f16 is meaningful: each weight a product reads (Conv,
Gemm, MatMul) is drawn from N(0, 1/fan-in) and then, node after node in graph order,
scaled so that the product's output has unit standard deviation on these inputs
(layer-sequential unit variance); each BatchNormalization's mean and variance are its
input's, per channel, measured the same way; biases 0.05 N(0, 1), norm and Mul scales
1 + 0.1 N(0, 1), embedding tables N(0, 1).
"""

import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

PRODUCTS = {"Conv": 1, "ConvTranspose": 1, "Gemm": 1, "MatMul": 1}


def stubbed(model):
    return {t.name: t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}


def fan_in(op, k, shape, node):
    if op in ("Conv", "ConvTranspose"):
        return int(np.prod(shape[1:]))
    if op == "Gemm":
        trans = next((a.i for a in node.attribute if a.name == ("transB" if k == 1 else "transA")), 0)
        return shape[-1] if (trans if k == 1 else not trans) else shape[0]
    return shape[-2] if k == 1 else shape[-1]  # MatMul: B's rows, or A's columns


def initial(model, rng):
    """First values of every stub, by the first node that reads it; the calibration points."""
    stubs = stubbed(model)
    values, points = {}, []
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            if name not in stubs or name in values:
                continue
            shape = tuple(stubs[name].dims)
            op = node.op_type
            noise = rng.standard_normal(shape).astype(np.float32)
            if op in PRODUCTS and (k == 1 or (op in ("MatMul", "Gemm") and k == 0)):
                values[name] = noise / np.float32(np.sqrt(max(1, fan_in(op, k, shape, node))))
                points.append(("product", node.output[0], name))
            elif op == "BatchNormalization" and k in (3, 4):
                values[name] = np.zeros(shape, np.float32) if k == 3 else np.ones(shape, np.float32)
                if k == 3:
                    points.append(("batchnorm", node.input[0], (node.input[3], node.input[4])))
            elif op == "Gather":
                values[name] = noise
            elif op in ("Mul", "BatchNormalization", "LayerNormalization", "InstanceNormalization",
                        "GroupNormalization") and (op == "Mul" or k == 1):
                values[name] = 1 + 0.1 * noise
            elif op == "PRelu":
                values[name] = 0.25 + 0.05 * noise
            else:  # a bias: Conv's or Gemm's third input, an Add's operand, a norm's shift
                values[name] = 0.05 * noise
    return values, points


def bind(model, meta):
    dims = meta.get("dims", {})
    for v in list(model.graph.input) + list(model.graph.output):
        for d in v.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    del model.graph.value_info[:]


def inputs_of(model, meta, rng):
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        kind = meta["inputs"].get(v.name, ["normal"])
        if kind[0] == "ids":
            feeds[v.name] = rng.integers(0, kind[1], size=shape, dtype=np.int64)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def session(model):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def calibrate(model, values, points, feeds):
    """Scales each product's weight and sets each batch norm's statistics, in graph order,
    from one ONNX Runtime session that takes the weights as inputs."""
    if not points:
        return
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    g = probe.graph
    keep = [t for t in g.initializer if t.name not in values]
    del g.initializer[:]
    g.initializer.extend(keep)
    for name, v in values.items():
        g.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(v.shape)))
    have = {o.name for o in g.output}
    for _, tensor, _ in points:
        if tensor not in have:
            g.output.append(helper.make_tensor_value_info(tensor, TensorProto.FLOAT, None))
            have.add(tensor)
    sess = session(probe)
    for kind, tensor, target in points:
        (x,) = sess.run([tensor], {**feeds, **values})
        x = x.astype(np.float64)
        if kind == "product":
            std = float(x.std())
            if np.isfinite(std) and std > 1e-12:
                values[target] = (values[target] / std).astype(np.float32)
        else:
            axes = tuple(a for a in range(x.ndim) if a != 1)
            mean, var = target
            values[mean] = x.mean(axis=axes).astype(np.float32)
            values[var] = np.maximum(x.var(axis=axes), 1e-3).astype(np.float32)


def main():
    fixture, out = sys.argv[1], sys.argv[2]
    model = onnx.load(fixture, load_external_data=False)
    meta = json.loads(next(p.value for p in model.metadata_props if p.key == "weft.fixture"))
    free = onnx.ModelProto()
    free.CopyFrom(model)
    del free.graph.value_info[:]
    bind(model, meta)
    rng = np.random.default_rng(57)
    values, points = initial(model, rng)
    feeds = inputs_of(model, meta, rng)
    calibrate(model, values, points, feeds)
    for t in model.graph.initializer:
        if t.name in values:
            t.CopyFrom(numpy_helper.from_array(values[t.name].astype(np.float32), t.name))
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save(model, path)
    del free.graph.initializer[:]
    free.graph.initializer.extend(model.graph.initializer)
    onnx.save(free, os.path.join(out, "symbolic.onnx"))
    for k, x in enumerate(feeds.values()):
        np.save(os.path.join(out, f"input_{k}.npy"), x.astype(np.float32))
    for k, y in enumerate(session(model).run(None, feeds)):
        np.save(os.path.join(out, f"output_{k}.npy"), np.asarray(y, dtype=np.float32))


if __name__ == "__main__":
    main()
