# An embedding lookup: ids [1, 7] int64 into a [50, 8] table; `ok` ids in range, `bad` one id 50.
import os, sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
os.makedirs(d + "/ok", exist_ok=True); os.makedirs(d + "/bad", exist_ok=True)
table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32), "table")
# The index is computed on the device (ids + 10), so only the guard can catch it.
add = helper.make_node("Add", ["ids", "ten"], ["shifted"], name="shift")
node = helper.make_node("Gather", ["table", "shifted"], ["y"], name="embed")
g = helper.make_graph([add, node], "idx", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 7])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7, 8])],
                      [table, numpy_helper.from_array(np.array(10, dtype=np.int64), "ten")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, d + "/model.onnx")
np.save(d + "/ok/ids.npy", np.array([[0, 3, 39, 7, 1, 2, 9]], dtype=np.int64))
np.save(d + "/bad/ids.npy", np.array([[0, 3, 40, 7, 1, 2, 9]], dtype=np.int64))
print("written", d)
