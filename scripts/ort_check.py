"""ONNX Runtime's side of `weft model check` (the weft binary embeds this file and runs
it as `python3 -c SCRIPT MANIFEST`; it is here to be read, and run by hand).

MANIFEST is a JSON file:

    {"model": "m.onnx",                      # the file ONNX Runtime runs, as written
     "inputs": [["x", "in/0.npy"], ...],      # one .npy per graph input, by ONNX name
     "expose": ["/layer1/Conv_output_0", ...],  # node outputs to return besides the outputs
     "out": "DIR"}

ONNX Runtime returns only graph outputs, so each name of `expose` is added to the graph's
outputs (with the onnx package) before the session is made; graph optimizations are off,
so what it computes is the file's graph as written. Written to DIR:

    value_K.npy   float64, the graph outputs in order, then the exposed tensors in order
    info.json     {"version": ORT's version, "outputs": [graph output names],
                   "values": {tensor: {"node": node name, "op": op type,
                                       "attributes": "name=value, ..."}}
                   for every node output}

Node names are the file's, or `{op_type}_{index}` where a node has none (as weft names
them). Where a package is missing the script exits with status 3 and `missing: NAME ...`
(every one missing) on stderr.
"""

import importlib.util
import json
import os
import sys
import tempfile

# weft names everything there is to install, not only the first package missing.
MISSING = [m for m in ("numpy", "onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
if MISSING:
    print("missing: " + " ".join(MISSING), file=sys.stderr)
    sys.exit(3)

# A package present but broken fails here, and weft shows the error's last line.
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

# A model past this size is handed to ONNX Runtime as a file with external data:
# protobuf's own limit is 2 GiB.
INLINE_LIMIT = 1 << 30


def attribute_text(a: onnx.AttributeProto) -> str:
    """An attribute as `name=value`; a tensor or graph by its kind and shape only."""
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        v = f"tensor {onnx.helper.tensor_dtype_to_np_dtype(v.data_type)} {list(v.dims)}"
    elif isinstance(v, onnx.GraphProto):
        v = f"graph of {len(v.node)} nodes"
    elif isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    elif isinstance(v, list) and v and isinstance(v[0], bytes):
        v = [x.decode("utf-8", "replace") for x in v]
    return f"{a.name}={v}"


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        manifest = json.load(f)
    model = onnx.load(manifest["model"])
    graph = model.graph
    values = {}
    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        attributes = ", ".join(attribute_text(a) for a in node.attribute)
        for out in node.output:
            if out:
                values[out] = {"node": name, "op": node.op_type, "attributes": attributes}
    outputs = [o.name for o in graph.output]
    present = set(outputs)
    for name in manifest["expose"]:
        if name not in values:
            raise SystemExit(f"no node of {manifest['model']} computes `{name}`")
        if name not in present:
            graph.output.append(onnx.ValueInfoProto(name=name))
            present.add(name)

    opts = ort.SessionOptions()
    # The file's semantics: nothing rewritten, nothing fused.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    providers = ["CPUExecutionProvider"]
    with tempfile.TemporaryDirectory() as tmp:
        if model.ByteSize() < INLINE_LIMIT:
            sess = ort.InferenceSession(model.SerializeToString(), opts, providers=providers)
        else:
            path = os.path.join(tmp, "model.onnx")
            onnx.save_model(model, path, save_as_external_data=True, location="weights.bin")
            sess = ort.InferenceSession(path, opts, providers=providers)
        types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32,
                 "tensor(bool)": np.bool_, "tensor(float16)": np.float16,
                 "tensor(double)": np.float64}
        files = dict(manifest["inputs"])
        feeds = {}
        for i in sess.get_inputs():
            if i.name not in files:
                raise SystemExit(f"no input file for graph input `{i.name}`")
            feeds[i.name] = np.load(files[i.name]).astype(types.get(i.type, np.float32))
        wanted = outputs + [n for n in manifest["expose"] if n not in outputs]
        got = dict(zip(wanted, sess.run(wanted, feeds)))
    order = outputs + list(manifest["expose"])
    for k, name in enumerate(order):
        np.save(os.path.join(manifest["out"], f"value_{k}.npy"),
                np.asarray(got[name], dtype=np.float64))
    info = {"version": ort.__version__, "outputs": outputs, "values": values}
    with open(os.path.join(manifest["out"], "info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f)


if __name__ == "__main__":
    main()
