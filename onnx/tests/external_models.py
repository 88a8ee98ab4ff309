"""Models whose weights are in a file beside them (ONNX external data), for
external_data.rs. Usage: python3 external_models.py DIR

DIR/model.onnx with DIR/weights.bin (a 2-layer MLP, x [2, 16] -> [2, 8], its weights
seeded; every initializer external, one file, at offsets), and variants of the same
graph whose external data weft must refuse: DIR/escape.onnx (location `../weights.bin`),
DIR/missing.onnx (a file that is not there), DIR/short.onnx (a length past the file's
end)."""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32) / 4, "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32) / 10, "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32) / 6, "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w1, b1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, os.path.join(d, "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    saved = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)

    def variant(name, key, value):
        v = onnx.ModelProto()
        v.CopyFrom(saved)
        t = v.graph.initializer[0]
        for e in t.external_data:
            if e.key == key:
                e.value = value
                break
        else:
            t.external_data.add(key=key, value=value)
        with open(os.path.join(d, name), "wb") as f:
            f.write(v.SerializeToString())

    variant("escape.onnx", "location", "../weights.bin")
    variant("missing.onnx", "location", "nothere.bin")
    variant("short.onnx", "length", str(1 << 20))


if __name__ == "__main__":
    main()
