"""Writes the models of tests/symbolic.rs: ONNX files whose inputs have a `sequence`
dim_param, built with onnx.helper (seeded weights). Usage: python3 symbolic_models.py DIR

- encoder.onnx: a transformer encoder layer — token and position embeddings (Gather), a
  LayerNormalization, two-head self-attention with a softmax over all keys (no padding
  mask), an Erf GELU MLP, residuals; outputs the hidden states [1, sequence, 32], their
  mean over the sequence [1, 32] and the first token's [1, 32].
- norm_over_sequence.onnx: a LayerNormalization over the sequence axis (refused).
- shape_of_sequence.onnx: the hidden states divided by the length read with Shape
  (refused at import).
- table_of_maximum_length.onnx: a constant of 24 rows added along the sequence (a file
  valid at 24 only: refused at import).
- positions_from_shape.onnx: what exporters compute from `Shape` of the input — position
  ids `Range(0, n)` gathered from a position table, a causal mask comparing two ranges,
  the heads' Reshape targets concatenated from the shape, a mask of ones
  `ConstantOfShape([1, n, 1])`, a table's first `n` rows by Slice — in one attention layer.
- range_past_length.onnx: position ids `Range(1, n + 1)`: refused at import.
- slice_short_of_length.onnx: the hidden states sliced to `n - 1`: refused at import.
- positions_plus_table.onnx: positions `Range(0, n)` plus a constant of 24 entries (valid
  at 24 only): refused at import.
- positions_from_two.onnx: position ids `Range(2, n)`, fewer than the tokens: refused.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, POSITIONS, HIDDEN, HEADS, FF = 50, 64, 32, 2, 64
MAX_LEN = 24  # tests/symbolic.rs's and symbolic_shapes.rs's maximum
HEAD = HIDDEN // HEADS
rng = np.random.default_rng(60)


def weight(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def save(nodes, inits, inputs, outputs, path):
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def tokens(name):
    return helper.make_tensor_value_info(name, TensorProto.INT64, [1, "sequence"])


def hidden_out(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, "sequence", HIDDEN])


def encoder(path):
    n, inits = [], []
    inits += [weight("tok_emb", VOCAB, HIDDEN), weight("pos_emb", POSITIONS, HIDDEN)]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    n.append(helper.make_node("Gather", ["pos_emb", "position_ids"], ["pos"], name="pos_gather"))
    n.append(helper.make_node("Add", ["tok", "pos"], ["emb"], name="emb_add"))
    inits += [weight("ln0_g", HIDDEN, scale=0.1), weight("ln0_b", HIDDEN, scale=0.1)]
    n.append(helper.make_node("LayerNormalization", ["emb", "ln0_g", "ln0_b"], ["x0"],
                              name="ln0", axis=-1, epsilon=1e-5))
    inits += [ints("heads_shape", [0, 0, HEADS, HEAD]), ints("merged_shape", [0, 0, HIDDEN])]
    for p in "qkv":
        inits += [weight(f"w{p}", HIDDEN, HIDDEN), weight(f"b{p}", HIDDEN, scale=0.1)]
        n.append(helper.make_node("MatMul", ["x0", f"w{p}"], [f"{p}_mm"], name=f"{p}_proj"))
        n.append(helper.make_node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_b"], name=f"{p}_bias"))
        n.append(helper.make_node("Reshape", [f"{p}_b", "heads_shape"], [f"{p}_h"],
                                  name=f"{p}_split"))
    n.append(helper.make_node("Transpose", ["q_h"], ["q"], name="q_t", perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Transpose", ["k_h"], ["kt"], name="k_t", perm=[0, 2, 3, 1]))
    n.append(helper.make_node("Transpose", ["v_h"], ["v"], name="v_t", perm=[0, 2, 1, 3]))
    n.append(helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"))
    inits.append(numpy_helper.from_array(np.array(HEAD ** -0.5, dtype=np.float32), "scale"))
    n.append(helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale_mul"))
    n.append(helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1))
    n.append(helper.make_node("MatMul", ["probs", "v"], ["ctx_h"], name="context"))
    n.append(helper.make_node("Transpose", ["ctx_h"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Reshape", ["ctx_t", "merged_shape"], ["ctx"], name="ctx_merge"))
    inits += [weight("wo", HIDDEN, HIDDEN), weight("bo", HIDDEN, scale=0.1)]
    n.append(helper.make_node("MatMul", ["ctx", "wo"], ["o_mm"], name="o_proj"))
    n.append(helper.make_node("Add", ["o_mm", "bo"], ["o"], name="o_bias"))
    n.append(helper.make_node("Add", ["x0", "o"], ["res1"], name="res1"))
    inits += [weight("ln1_g", HIDDEN, scale=0.1), weight("ln1_b", HIDDEN, scale=0.1)]
    n.append(helper.make_node("LayerNormalization", ["res1", "ln1_g", "ln1_b"], ["x1"],
                              name="ln1", axis=-1, epsilon=1e-5))
    inits += [weight("w1", HIDDEN, FF), weight("b1", FF, scale=0.1),
              weight("w2", FF, HIDDEN), weight("b2", HIDDEN, scale=0.1)]
    n.append(helper.make_node("MatMul", ["x1", "w1"], ["f1_mm"], name="ff1"))
    n.append(helper.make_node("Add", ["f1_mm", "b1"], ["f1"], name="ff1_bias"))
    inits += [numpy_helper.from_array(np.array(c, dtype=np.float32), nm)
              for nm, c in [("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5)]]
    n.append(helper.make_node("Div", ["f1", "sqrt2"], ["g0"], name="gelu_div"))
    n.append(helper.make_node("Erf", ["g0"], ["g1"], name="gelu_erf"))
    n.append(helper.make_node("Add", ["g1", "one"], ["g2"], name="gelu_add"))
    n.append(helper.make_node("Mul", ["f1", "g2"], ["g3"], name="gelu_mul"))
    n.append(helper.make_node("Mul", ["g3", "half"], ["gelu"], name="gelu_half"))
    n.append(helper.make_node("MatMul", ["gelu", "w2"], ["f2_mm"], name="ff2"))
    n.append(helper.make_node("Add", ["f2_mm", "b2"], ["f2"], name="ff2_bias"))
    n.append(helper.make_node("Add", ["x1", "f2"], ["hidden"], name="res2"))
    n.append(helper.make_node("ReduceMean", ["hidden"], ["mean"], name="mean_pool",
                              axes=[1], keepdims=0))
    inits.append(ints("first", 0))
    n.append(helper.make_node("Gather", ["hidden", "first"], ["first_token"], name="first_token",
                              axis=1))
    outs = [hidden_out("hidden"),
            helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, HIDDEN]),
            helper.make_tensor_value_info("first_token", TensorProto.FLOAT, [1, HIDDEN])]
    save(n, inits, [tokens("input_ids"), tokens("position_ids")], outs, path)


def norm_over_sequence(path):
    inits = [weight("tok_emb", VOCAB, HIDDEN), weight("g", 1, HIDDEN), weight("b", 1, HIDDEN)]
    n = [helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"),
         helper.make_node("LayerNormalization", ["tok", "g", "b"], ["hidden"],
                          name="norm_over_sequence", axis=1)]
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def shape_of_sequence(path):
    inits = [weight("tok_emb", VOCAB, HIDDEN), ints("one", [1])]
    n = [helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"),
         helper.make_node("Shape", ["tok"], ["shape"], name="length_of_sequence"),
         helper.make_node("Gather", ["shape", "one"], ["len_i"], name="pick_length"),
         helper.make_node("Cast", ["len_i"], ["len"], name="length_float", to=TensorProto.FLOAT),
         helper.make_node("Div", ["tok", "len"], ["hidden"], name="per_length")]
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def table_of_maximum_length(path):
    """A [24, 32] table added to the [1, sequence, 32] embeddings: valid at 24 only."""
    inits = [weight("tok_emb", VOCAB, HIDDEN), weight("table", 24, HIDDEN)]
    n = [helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"),
         helper.make_node("Add", ["tok", "table"], ["hidden"], name="add_table")]
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def length_nodes(n, tensor):
    """`len` (int64 scalar) and `len1` ([1]) read with Shape from `tensor`."""
    n.append(helper.make_node("Shape", [tensor], ["shape"], name="length_of_sequence"))
    n.append(helper.make_node("Gather", ["shape", "one_i"], ["len"], name="pick_length", axis=0))
    n.append(helper.make_node("Unsqueeze", ["len", "zero_axis"], ["len1"], name="length_1d"))


def positions_from_shape(path):
    n, inits = [], [weight("tok_emb", VOCAB, HIDDEN), weight("pos_emb", POSITIONS, HIDDEN),
                    weight("extra", POSITIONS, HIDDEN, scale=0.1),
                    ints("zero_s", 0), ints("one_i", 1), ints("one_s", 1), ints("zero_axis", [0]),
                    ints("zero_1", [0]), ints("one_1", [1]), ints("heads_1", [HEADS]),
                    ints("head_1", [HEAD]), ints("hidden_1", [HIDDEN]), ints("perm_axis", [1]),
                    numpy_helper.from_array(np.array(-1e9, dtype=np.float32), "masked"),
                    numpy_helper.from_array(np.array(HEAD ** -0.5, dtype=np.float32), "scale")]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    length_nodes(n, "input_ids")
    n.append(helper.make_node("Range", ["zero_s", "len", "one_s"], ["pos"], name="positions"))
    n.append(helper.make_node("Unsqueeze", ["pos", "zero_axis"], ["pos2"], name="positions_2d"))
    n.append(helper.make_node("Gather", ["pos_emb", "pos2"], ["pe"], name="pos_gather"))
    n.append(helper.make_node("Add", ["tok", "pe"], ["emb0"], name="emb_add"))
    # A table's first n rows, by Slice.
    n.append(helper.make_node("Slice", ["extra", "zero_1", "len1", "zero_1"], ["extra_n"],
                              name="first_rows"))
    n.append(helper.make_node("Add", ["emb0", "extra_n"], ["emb"], name="extra_add"))
    # The heads' shape [1, n, HEADS, HEAD] from the input's shape.
    n.append(helper.make_node("Concat", ["one_1", "len1", "heads_1", "head_1"], ["heads_shape"],
                              name="heads_shape", axis=0))
    n.append(helper.make_node("Concat", ["one_1", "len1", "hidden_1"], ["merged_shape"],
                              name="merged_shape", axis=0))
    for p in "qkv":
        inits.append(weight(f"w{p}", HIDDEN, HIDDEN))
        n.append(helper.make_node("MatMul", ["emb", f"w{p}"], [f"{p}0"], name=f"{p}_proj"))
        n.append(helper.make_node("Reshape", [f"{p}0", "heads_shape"], [f"{p}1"], name=f"{p}_heads"))
        perm = [0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]
        n.append(helper.make_node("Transpose", [f"{p}1"], [f"{p}h"], name=f"{p}_t", perm=perm))
    n.append(helper.make_node("MatMul", ["qh", "kh"], ["s0"], name="scores"))
    n.append(helper.make_node("Mul", ["s0", "scale"], ["s1"], name="scaled"))
    # Causal: key position <= query position, from two ranges.
    n.append(helper.make_node("Unsqueeze", ["pos", "perm_axis"], ["rows"], name="query_positions"))
    n.append(helper.make_node("LessOrEqual", ["pos2", "rows"], ["allowed"], name="causal"))
    n.append(helper.make_node("Where", ["allowed", "s1", "masked"], ["s2"], name="causal_mask"))
    n.append(helper.make_node("Softmax", ["s2"], ["p"], name="softmax", axis=-1))
    n.append(helper.make_node("MatMul", ["p", "vh"], ["ctx0"], name="context"))
    n.append(helper.make_node("Transpose", ["ctx0"], ["ctx1"], name="ctx_t", perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Reshape", ["ctx1", "merged_shape"], ["ctx"], name="ctx_merge"))
    # A mask of ones [1, n, 1] from the shape, multiplied in.
    n.append(helper.make_node("Concat", ["one_1", "len1", "one_1"], ["ones_shape"],
                              name="ones_shape", axis=0))
    n.append(helper.make_node("ConstantOfShape", ["ones_shape"], ["ones"], name="ones",
                              value=numpy_helper.from_array(np.array([1.0], dtype=np.float32))))
    n.append(helper.make_node("Mul", ["ctx", "ones"], ["ctx_m"], name="ones_mul"))
    n.append(helper.make_node("Add", ["emb", "ctx_m"], ["hidden"], name="residual"))
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def range_past_length(path):
    n, inits = [], [weight("tok_emb", VOCAB, HIDDEN), weight("pos_emb", POSITIONS, HIDDEN),
                    ints("zero_s", 0), ints("one_i", 1), ints("one_s", 1), ints("zero_axis", [0])]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    length_nodes(n, "input_ids")
    n.append(helper.make_node("Add", ["len", "one_s"], ["len_more"], name="one_more"))
    # Positions 1..n: n of them, each one more than its index.
    n.append(helper.make_node("Range", ["one_s", "len_more", "one_s"], ["pos_n"], name="positions"))
    n.append(helper.make_node("Unsqueeze", ["pos_n", "zero_axis"], ["pos2"], name="positions_2d"))
    n.append(helper.make_node("Gather", ["pos_emb", "pos2"], ["pe"], name="pos_gather"))
    n.append(helper.make_node("Add", ["tok", "pe"], ["hidden"], name="emb_add"))
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def slice_short_of_length(path):
    n, inits = [], [weight("tok_emb", VOCAB, HIDDEN), ints("one_i", 1), ints("zero_axis", [0]),
                    ints("one_1", [1]), ints("zero_1", [0])]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    length_nodes(n, "input_ids")
    n.append(helper.make_node("Sub", ["len1", "one_1"], ["short"], name="one_less"))
    n.append(helper.make_node("Slice", ["tok", "zero_1", "short", "one_1"], ["hidden"],
                              name="short_slice"))
    out = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "shorter", HIDDEN])
    save(n, inits, [tokens("input_ids")], [out], path)


def positions_plus_table(path):
    n, inits = [], [weight("tok_emb", VOCAB, HIDDEN), weight("table", MAX_LEN, scale=1.0),
                    ints("zero_s", 0), ints("one_i", 1), ints("one_s", 1), ints("zero_axis", [0]),
                    ints("last_axis", [2])]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    length_nodes(n, "input_ids")
    n.append(helper.make_node("Range", ["zero_s", "len", "one_s"], ["pos"], name="positions"))
    n.append(helper.make_node("Cast", ["pos"], ["pos_f"], name="positions_f", to=TensorProto.FLOAT))
    n.append(helper.make_node("Add", ["pos_f", "table"], ["shifted"], name="plus_table"))
    n.append(helper.make_node("Unsqueeze", ["shifted", "zero_axis"], ["s2"], name="shifted_2d"))
    n.append(helper.make_node("Unsqueeze", ["s2", "last_axis"], ["s3"], name="shifted_3d"))
    n.append(helper.make_node("Add", ["tok", "s3"], ["hidden"], name="emb_add"))
    save(n, inits, [tokens("input_ids")], [hidden_out("hidden")], path)


def positions_from_two(path):
    n, inits = [], [weight("tok_emb", VOCAB, HIDDEN), weight("pos_emb", POSITIONS, HIDDEN),
                    ints("two_s", 2), ints("one_i", 1), ints("one_s", 1), ints("zero_axis", [0])]
    n.append(helper.make_node("Gather", ["tok_emb", "input_ids"], ["tok"], name="tok_gather"))
    length_nodes(n, "input_ids")
    n.append(helper.make_node("Range", ["two_s", "len", "one_s"], ["pos"], name="positions"))
    n.append(helper.make_node("Unsqueeze", ["pos", "zero_axis"], ["pos2"], name="positions_2d"))
    n.append(helper.make_node("Gather", ["pos_emb", "pos2"], ["pe"], name="pos_gather"))
    out = helper.make_tensor_value_info("pe", TensorProto.FLOAT, [1, "fewer", HIDDEN])
    save(n, inits, [tokens("input_ids")], [out], path)


if __name__ == "__main__":
    d = sys.argv[1]
    encoder(os.path.join(d, "encoder.onnx"))
    norm_over_sequence(os.path.join(d, "norm_over_sequence.onnx"))
    shape_of_sequence(os.path.join(d, "shape_of_sequence.onnx"))
    table_of_maximum_length(os.path.join(d, "table_of_maximum_length.onnx"))
    positions_from_shape(os.path.join(d, "positions_from_shape.onnx"))
    range_past_length(os.path.join(d, "range_past_length.onnx"))
    slice_short_of_length(os.path.join(d, "slice_short_of_length.onnx"))
    positions_plus_table(os.path.join(d, "positions_plus_table.onnx"))
    positions_from_two(os.path.join(d, "positions_from_two.onnx"))
