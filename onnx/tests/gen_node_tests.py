"""Writes ONNX's backend node tests (model.onnx, test_data_set_N/{input,output}_K.pb) into a
directory, from the node test generators in ONNX's source tree.

The onnx 1.23 wheel ships neither the generated data nor the generators; the generators
are in the source distribution (onnx/backend/test/case). Usage:

    python3 gen_node_tests.py OUT_DIR [ONNX_SOURCE_DIR]

With ONNX_SOURCE_DIR (an unpacked onnx-1.23.2 sdist), its onnx/backend/test/case package
is laid over a copy of the installed onnx package so the generators import it. Then point
WEFT_ONNX_NODE_TESTS at OUT_DIR for `cargo test -p weft-onnx --test node_tests`.
Only tensor-typed cases are written (sequences, maps and optionals are not weft's).
"""

import importlib.util
import os
import shutil
import sys
import tempfile


def main() -> None:
    out = sys.argv[1]
    overlay = None
    if len(sys.argv) > 2:
        # Found without importing onnx: its C extension cannot be loaded twice.
        spec = importlib.util.find_spec("onnx")
        overlay = tempfile.mkdtemp()
        pkg = os.path.join(overlay, "onnx")
        shutil.copytree(os.path.dirname(spec.origin), pkg)
        src_case = os.path.join(sys.argv[2], "onnx", "backend", "test", "case")
        dst_case = os.path.join(pkg, "backend", "test", "case")
        shutil.rmtree(dst_case, ignore_errors=True)
        shutil.copytree(src_case, dst_case)
        sys.path.insert(0, overlay)

    from onnx import TensorProto, numpy_helper
    from onnx.backend.test.case import node

    written = 0
    for case in node.collect_testcases():
        model = case.model
        io = list(model.graph.input) + list(model.graph.output)
        if not all(v.type.HasField("tensor_type") for v in io):
            continue
        case_dir = os.path.join(out, case.name)
        shutil.rmtree(case_dir, ignore_errors=True)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(set_dir)
            for kind, values, infos in (
                ("input", inputs, model.graph.input),
                ("output", outputs, model.graph.output),
            ):
                for j, value in enumerate(values):
                    if not isinstance(value, TensorProto):
                        value = numpy_helper.from_array(value, infos[j].name)
                    with open(os.path.join(set_dir, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(value.SerializeToString())
        written += 1
    print(f"wrote {written} node tests to {out}")
    if overlay:
        shutil.rmtree(overlay, ignore_errors=True)


if __name__ == "__main__":
    main()
