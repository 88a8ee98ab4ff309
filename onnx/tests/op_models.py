"""Builds single-op ONNX models covering every op and attribute form weft imports, with
random inputs of odd sizes, and ONNX Runtime's (CPU) outputs for them. Each case is a
folder OUT/NAME with model.onnx, input_N.npy and output_N.npy. Usage:

    python3 op_models.py OUT
"""

import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(25)
CASES = []


def case(name, op, inputs, attrs=None, consts=None, opset=17, outputs=1, low=-2.0, high=2.0, node_inputs=None):
    """One node `op` reading `inputs` (name → shape, graph inputs) and `consts` (name →
    array, initializers), in the order of `node_inputs` (default: inputs then consts)."""
    CASES.append((name, op, inputs, attrs or {}, consts or {}, opset, outputs, low, high, node_inputs))


def rand(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


X4 = {"x": [2, 3, 7, 9]}

# Conv: groups, strides, dilations, symmetric and asymmetric pads, auto_pad, no bias,
# kernel_shape given or not.
case("conv_basic", "Conv", {"x": [2, 3, 11, 9]}, {"pads": [1, 1, 1, 1]},
     {"w": rand(5, 3, 3, 3), "b": rand(5)})
case("conv_kernel_shape_attr", "Conv", {"x": [1, 3, 8, 7]}, {"kernel_shape": [3, 2]},
     {"w": rand(4, 3, 3, 2)})
case("conv_strides_dilations_asym_pads", "Conv", {"x": [1, 4, 13, 11]},
     {"strides": [2, 1], "dilations": [2, 1], "pads": [1, 0, 2, 1]}, {"w": rand(3, 4, 3, 3), "b": rand(3)})
case("conv_groups", "Conv", {"x": [1, 6, 9, 7]}, {"group": 3, "pads": [1, 1, 1, 1]},
     {"w": rand(6, 2, 3, 3), "b": rand(6)})
case("conv_depthwise_stride2", "Conv", {"x": [2, 4, 9, 8]}, {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"w": rand(4, 1, 3, 3)})
for mode in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    case(f"conv_auto_pad_{mode.lower()}", "Conv", {"x": [1, 2, 10, 9]},
         {"auto_pad": mode, "strides": [2, 2], "kernel_shape": [4, 3]}, {"w": rand(3, 2, 4, 3), "b": rand(3)})
case("conv_1x1", "Conv", {"x": [1, 5, 7, 5]}, {}, {"w": rand(8, 5, 1, 1), "b": rand(8)})

case("batchnorm", "BatchNormalization", {"x": [2, 5, 7, 3]}, {"epsilon": 1e-3},
     {"scale": rand(5), "bias": rand(5), "mean": rand(5), "var": rand(5, low=0.5, high=2.0)}, opset=15)
case("batchnorm_rank2", "BatchNormalization", {"x": [3, 5]}, {},
     {"scale": rand(5), "bias": rand(5), "mean": rand(5), "var": rand(5, low=0.5, high=2.0)}, opset=13)

case("clip_both", "Clip", {"x": [2, 3, 5, 7]}, {}, {"lo": np.float32(-0.5), "hi": np.float32(0.7)})
case("clip_min_only", "Clip", {"x": [3, 5, 7]}, {}, {"lo": np.float32(-0.3)})
case("clip_max_only", "Clip", {"x": [3, 5, 7]}, {}, {"hi": np.float32(0.2)}, node_inputs=["x", "", "hi"])
case("clip_unbounded", "Clip", {"x": [3, 5]})
case("clip_relu6", "Clip", {"x": [1, 4, 5, 3]}, {}, {"lo": np.float32(0.0), "hi": np.float32(6.0)}, low=-8, high=8)
case("clip_computed_bounds", "Clip", {"x": [3, 5], "lo": [], "hi": []})

# Pooling.
case("maxpool_k3_s2_p1", "MaxPool", X4, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
case("maxpool_ceil", "MaxPool", {"x": [1, 2, 8, 10]}, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1})
case("maxpool_asym_pads", "MaxPool", X4, {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [0, 1, 1, 2]})
case("maxpool_rect_default_strides", "MaxPool", X4, {"kernel_shape": [2, 2]})
for mode in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    case(f"maxpool_auto_pad_{mode.lower()}", "MaxPool", X4, {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": mode})
case("maxpool_indices_unused", "MaxPool", X4, {"kernel_shape": [2, 2], "strides": [2, 2]}, outputs=2)
for cip in [0, 1]:
    case(f"avgpool_pads_cip{cip}", "AveragePool", X4,
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": cip})
    case(f"avgpool_ceil_cip{cip}", "AveragePool", {"x": [1, 3, 9, 8]},
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1, "count_include_pad": cip})
case("avgpool_same_upper", "AveragePool", X4, {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"})
case("avgpool_inception_3x3_s1_p1", "AveragePool", {"x": [1, 4, 7, 7]},
     {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "count_include_pad": 0})
case("global_avgpool", "GlobalAveragePool", X4)
case("global_maxpool", "GlobalMaxPool", X4)

case("concat_axis1", "Concat", {"a": [2, 3, 5], "b": [2, 4, 5], "c": [2, 1, 5]}, {"axis": 1})
case("concat_negative_axis", "Concat", {"a": [2, 3, 5], "b": [2, 3, 2]}, {"axis": -1})

# Binary ops with broadcasting; Max/Min/Sum variadic.
case("add_broadcast", "Add", {"a": [2, 3, 5, 7], "b": [3, 1, 7]})
case("add_weight", "Add", {"a": [2, 3, 5, 7]}, {}, {"b": rand(3, 1, 1)})
case("sub_broadcast", "Sub", {"a": [3, 1, 7], "b": [2, 3, 5, 1]})
case("mul_scalar_const", "Mul", {"a": [3, 5]}, {}, {"b": np.float32(1.7)})
case("div", "Div", {"a": [3, 5, 7]}, {}, {"b": rand(5, 7, low=0.5, high=2.0)})
case("pow", "Pow", {"a": [3, 5]}, {}, {"b": rand(5, low=-2.0, high=2.0)}, low=0.2, high=2.0)
case("pow_int_exponent", "Pow", {"a": [3, 5]}, {}, {"b": np.array(3, dtype=np.int64)})
case("max_variadic", "Max", {"a": [3, 5], "b": [5], "c": [3, 1]})
case("min_two", "Min", {"a": [3, 5], "b": [3, 5]})
case("max_single", "Max", {"a": [3, 5]})
case("sum_variadic", "Sum", {"a": [2, 3], "b": [2, 3], "c": [3], "d": [2, 1]})
case("prelu", "PRelu", {"x": [2, 3, 5, 7]}, {}, {"slope": rand(3, 1, 1, low=0.0, high=0.5)})

case("flatten_default", "Flatten", X4)
case("flatten_axis0", "Flatten", X4, {"axis": 0})
case("flatten_negative_axis", "Flatten", X4, {"axis": -1})
case("reshape_zero_minus_one", "Reshape", X4, {}, {"shape": np.array([0, -1], dtype=np.int64)})
case("reshape_minus_one_middle", "Reshape", X4, {}, {"shape": np.array([2, -1, 9], dtype=np.int64)})
case("reshape_allowzero", "Reshape", {"x": [3, 5]}, {"allowzero": 1}, {"shape": np.array([5, 3], dtype=np.int64)}, opset=14)

case("gemm_plain", "Gemm", {"a": [3, 5]}, {}, {"b": rand(5, 7)})
case("gemm_linear", "Gemm", {"a": [3, 5]}, {"transB": 1}, {"b": rand(7, 5), "c": rand(7)})
case("gemm_all_attrs", "Gemm", {"a": [5, 3]}, {"alpha": 0.5, "beta": 2.0, "transA": 1, "transB": 1},
     {"b": rand(7, 5), "c": rand(3, 7)})
case("gemm_c_scalar", "Gemm", {"a": [3, 5], "b": [5, 4]}, {"beta": -1.5}, {"c": np.float32(0.25)})
case("matmul_2d", "MatMul", {"a": [3, 5], "b": [5, 7]})
case("matmul_batched", "MatMul", {"a": [2, 3, 5], "b": [5, 4]})
case("matmul_1d_left", "MatMul", {"a": [5], "b": [2, 5, 3]})
case("matmul_1d_right", "MatMul", {"a": [2, 3, 5], "b": [5]})
case("matmul_both_batched", "MatMul", {"a": [3, 7, 33], "b": [3, 33, 9]})
case("matmul_batch_broadcast", "MatMul", {"a": [2, 3, 4, 5], "b": [3, 5, 6]})
case("matmul_batch_ones", "MatMul", {"a": [1, 3, 4, 5], "b": [2, 1, 5, 6]})
case("matmul_matrix_by_batch", "MatMul", {"a": [4, 5], "b": [2, 5, 3]})

case("identity", "Identity", {"x": [3, 5]})
case("dropout_inference", "Dropout", {"x": [3, 5]}, {}, {"ratio": np.float32(0.3)}, opset=13)
case("dropout_mask_unused", "Dropout", {"x": [3, 5]}, {}, {}, outputs=2, opset=13)

# Every unary op through the one elementwise path.
for op, attrs, low, high, opset in [
    ("Relu", {}, -2, 2, 17), ("Sigmoid", {}, -4, 4, 17), ("Tanh", {}, -3, 3, 17),
    ("Exp", {}, -3, 3, 17), ("Log", {}, 0.1, 5, 17), ("Sqrt", {}, 0, 5, 17),
    ("Abs", {}, -2, 2, 17), ("Neg", {}, -2, 2, 17), ("Reciprocal", {}, 0.5, 3, 17),
    ("Floor", {}, -3, 3, 17), ("Ceil", {}, -3, 3, 17), ("Erf", {}, -3, 3, 17),
    ("Sin", {}, -4, 4, 17), ("Cos", {}, -4, 4, 17), ("Tan", {}, -1.2, 1.2, 17),
    ("Asin", {}, -0.99, 0.99, 17), ("Acos", {}, -0.99, 0.99, 17), ("Atan", {}, -4, 4, 17),
    ("Sinh", {}, -3, 3, 17), ("Cosh", {}, -3, 3, 17), ("Asinh", {}, -4, 4, 17),
    ("Acosh", {}, 1.01, 5, 17), ("Atanh", {}, -0.95, 0.95, 17),
    ("Softplus", {}, -5, 5, 17), ("Softsign", {}, -5, 5, 17), ("Sign", {}, -2, 2, 17),
    ("Round", {}, -4, 4, 17), ("HardSwish", {}, -5, 5, 17),
    ("HardSigmoid", {}, -5, 5, 17), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, -5, 5, 17),
    ("LeakyRelu", {}, -2, 2, 17), ("LeakyRelu", {"alpha": 0.2}, -2, 2, 17),
    ("Elu", {}, -3, 3, 17), ("Elu", {"alpha": 0.5}, -3, 3, 17),
    ("Selu", {}, -3, 3, 17), ("Selu", {"alpha": 1.5, "gamma": 1.2}, -3, 3, 17),
    ("Celu", {"alpha": 0.7}, -3, 3, 17), ("ThresholdedRelu", {"alpha": 0.4}, -2, 2, 17),
    ("Mish", {}, -4, 4, 18), ("Gelu", {}, -4, 4, 20), ("Gelu", {"approximate": "tanh"}, -4, 4, 20),
]:
    suffix = "_" + "_".join(f"{k}{v}" for k, v in attrs.items()) if attrs else ""
    case(f"unary_{op.lower()}{suffix}", op, {"x": [2, 3, 5, 7]}, attrs, opset=opset, low=low, high=high)


# Index maps (transformers).
X3 = {"x": [2, 5, 7]}
case("transpose_default", "Transpose", X3)
case("transpose_perm", "Transpose", X4, {"perm": [0, 2, 3, 1]})
I64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
case("slice_basic", "Slice", X3, {}, {"s": I64(1, 2), "e": I64(-1, 6), "a": I64(1, 2)})
case("slice_steps_negative", "Slice", X3, {}, {"s": I64(-1, 0), "e": I64(-100, 7), "a": I64(2, 0), "k": I64(-2, 1)})
case("slice_int64_max", "Slice", X3, {}, {"s": I64(1), "e": I64(2**63 - 1)}, node_inputs=["x", "s", "e"])
case("slice_no_axes_steps", "Slice", X3, {}, {"s": I64(0, 1, 2), "e": I64(2, 4, 7)})
case("split_equal_opset18", "Split", X3, {"axis": 2, "num_outputs": 3}, opset=18, outputs=3)
case("split_sizes", "Split", X3, {"axis": 1}, {"split": I64(2, 3)}, outputs=2)
case("squeeze", "Squeeze", {"x": [1, 5, 1, 7]}, {}, {"axes": I64(0, -2)})
case("squeeze_all_ones", "Squeeze", {"x": [1, 5, 1, 7]})
case("unsqueeze", "Unsqueeze", X3, {}, {"axes": I64(0, -1)})
case("expand", "Expand", {"x": [3, 1]}, {}, {"shape": I64(2, 1, 7)})
case("where", "Where", {"c": ([2, 1, 7], "bool"), "p": [5, 7], "q": [2, 5, 1]})
case("isnan", "IsNaN", {}, {}, {"x": np.array([1.0, np.nan, -2.0, np.nan], dtype=np.float32)})
case("cast_to_int64", "Cast", X3, {"to": TensorProto.INT64}, low=-5, high=5)
case("cast_to_bool", "Cast", X3, {"to": TensorProto.BOOL}, low=-1, high=1)
case("cast_int_to_float", "Cast", {"x": ([3, 4], "int64", 50)}, {"to": TensorProto.FLOAT})
# Sign, Abs and Neg of integers (DeBERTa's relative positions).
case("sign_int64", "Sign", {"x": ([3, 7], "int64", 40)})
case("abs_int64", "Abs", {"x": ([3, 7], "int64", 40)})
case("neg_int64", "Neg", {"x": ([3, 7], "int64", 40)})
case("global_average_pool_3d", "GlobalAveragePool", {"x": [2, 3, 4, 5, 3]})
case("global_max_pool_3d", "GlobalMaxPool", {"x": [2, 3, 4, 5, 3]})
case("global_average_pool_1d", "GlobalAveragePool", {"x": [2, 5, 7]})
case("clip_int64", "Clip", {"x": ([3, 7], "int64", 40)}, {}, {"lo": np.array(-9, dtype=np.int64), "hi": np.array(12, dtype=np.int64)})
case("gather_embedding", "Gather", {"i": ([2, 7], "int64", 9)}, {}, {"w": rand(9, 5)}, node_inputs=["w", "i"])
case("gather_axis1_const", "Gather", X3, {"axis": 1}, {"i": I64(4, -1, 0, 0)})
case("gather_scalar_index", "Gather", X3, {"axis": -1}, {"i": np.array(3, dtype=np.int64)})
case("gather_elements", "GatherElements", X3, {"axis": 2}, {"i": np.random.default_rng(3).integers(-7, 7, size=(2, 5, 4))})
case("gather_nd", "GatherND", X3, {}, {"i": I64(1, 4, 0, 2).reshape(2, 2)})
case("gather_nd_full", "GatherND", X3, {}, {"i": I64(1, 4, 6, 0, 0, 0).reshape(2, 3)})
# Row reductions.
case("softmax_last", "Softmax", X3, low=-8, high=8)
case("softmax_axis1", "Softmax", X3, {"axis": 1}, low=-8, high=8)
case("softmax_long_rows", "Softmax", {"x": [2, 5000]}, low=-8, high=8)
case("layer_norm", "LayerNormalization", X3, {"epsilon": 1e-3}, {"g": rand(7), "b": rand(7)}, opset=17)
case("layer_norm_long_rows", "LayerNormalization", {"x": [3, 4500]}, {}, {"g": rand(4500)}, opset=17)
case("layer_norm_two_axes_no_bias", "LayerNormalization", X3, {"axis": -2}, {"g": rand(5, 7)}, opset=17)
case("layer_norm_broadcast_scale", "LayerNormalization", X3, {"axis": 1}, {"g": rand(1, 7), "b": rand(5, 1)}, opset=17)
for kind in ["Mean", "Sum", "Max", "Min"]:
    axes_input = kind == "Sum"
    case(f"reduce_{kind.lower()}_keep", f"Reduce{kind}", X4, {} if axes_input else {"axes": [1, -1]},
         {"axes": I64(1, -1)} if axes_input else {}, opset=13)
    case(f"reduce_{kind.lower()}_drop_opset18", f"Reduce{kind}", X4, {"keepdims": 0}, {"axes": I64(2)}, opset=18)
    case(f"reduce_{kind.lower()}_all", f"Reduce{kind}", X3, {"keepdims": 0}, opset=18)
# Comparisons and logic.
for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
    case(f"compare_{op.lower()}", op, {"a": [3, 5], "b": [5]}, low=-1, high=1,
         consts={} if op != "Equal" else {}, opset=16)
case("compare_equal_int", "Equal", {"a": ([3, 5], "int64", 3), "b": ([5], "int64", 3)})
for op in ["And", "Or", "Xor"]:
    case(f"logic_{op.lower()}", op, {"a": ([3, 5], "bool"), "b": ([5], "bool")})
case("logic_not", "Not", {"a": ([3, 5], "bool")})
case("pow_int_exponent", "Pow", {"x": [3, 5]}, {}, {"p": np.array(3, dtype=np.int64)}, low=-2, high=2)

# Trilu: upper and lower, the main diagonal and others (k as a 0-D constant, as the
# schema writes it), batched, wider and taller matrices, int64 data.
case("trilu_upper", "Trilu", {"x": [4, 6]}, opset=14)
case("trilu_lower", "Trilu", {"x": [2, 5, 3]}, {"upper": 0}, opset=14)
case("trilu_upper_k2", "Trilu", {"x": [3, 5, 7]}, {}, {"k": np.array(2, dtype=np.int64)}, opset=14)
case("trilu_lower_k_neg", "Trilu", {"x": [7, 4]}, {"upper": 0}, {"k": np.array(-2, dtype=np.int64)}, opset=14)
case("trilu_upper_k_past_the_edge", "Trilu", {"x": [3, 4]}, {}, {"k": np.array(9, dtype=np.int64)}, opset=14)
case("trilu_int", "Trilu", {"x": ([2, 4, 4], "int64", 9)}, {"upper": 0}, opset=17)


# CastLike: to the type of input 1 (a constant or a graph input; its values unread), an
# identity where the types agree.
case("castlike_to_int", "CastLike", X3, {}, {"like": I64(0)}, opset=15, low=-5, high=5)
case("castlike_to_bool", "CastLike", X3, {}, {"like": np.array([True])}, opset=19, low=-1, high=1)
case("castlike_same_type", "CastLike", {"x": [3, 5], "like": [1]}, opset=21)
case("castlike_int_to_float", "CastLike", {"x": ([3, 4], "int64", 50)}, {}, {"like": np.float32(0)}, opset=21)

# LogSoftmax: along the last axis by default, any axis, rows whose softmax underflows.
case("logsoftmax_default_axis", "LogSoftmax", X3, low=-8, high=8, opset=13)
case("logsoftmax_axis0", "LogSoftmax", {"x": [3, 4, 5]}, {"axis": 0}, low=-8, high=8)
case("logsoftmax_negative_axis", "LogSoftmax", {"x": [3, 4, 5]}, {"axis": -2}, low=-8, high=8)
case("logsoftmax_underflow", "LogSoftmax", {"x": [3, 7]}, low=-200, high=200)

# InstanceNormalization (versions 6 and 22) and GroupNormalization (18: scale and bias
# per group; 21: per channel): epsilon default or given, ranks 3 to 5.
case("instancenorm", "InstanceNormalization", {"x": [2, 3, 5, 7]}, {}, {"s": rand(3), "b": rand(3)}, opset=13)
case("instancenorm_rank3_epsilon", "InstanceNormalization", {"x": [2, 4, 9]}, {"epsilon": 1e-2},
     {"s": rand(4), "b": rand(4)}, opset=22)
case("instancenorm_rank5", "InstanceNormalization", {"x": [1, 2, 3, 4, 5]}, {}, {"s": rand(2), "b": rand(2)}, opset=17)
case("groupnorm_opset18_per_group", "GroupNormalization", {"x": [2, 6, 5, 3]}, {"num_groups": 3},
     {"s": rand(3), "b": rand(3)}, opset=18)
case("groupnorm_opset18_epsilon_rank3", "GroupNormalization", {"x": [3, 4, 7]}, {"num_groups": 2, "epsilon": 1e-2},
     {"s": rand(2), "b": rand(2)}, opset=18)
case("groupnorm_opset21_per_channel", "GroupNormalization", {"x": [2, 6, 5, 3]}, {"num_groups": 2},
     {"s": rand(6), "b": rand(6)}, opset=21)
case("groupnorm_opset21_one_group_stash", "GroupNormalization", {"x": [2, 4, 3, 5]}, {"num_groups": 1, "stash_type": 1},
     {"s": rand(4), "b": rand(4)}, opset=21)
case("groupnorm_opset21_instance", "GroupNormalization", {"x": [2, 5, 9]}, {"num_groups": 5},
     {"s": rand(5), "b": rand(5)}, opset=21)

# The composed reductions: axes as an attribute (13) or an input (18), keepdims,
# negative axes, every axis by default, noop_with_empty_axes.
for kind, low, high in [("L1", -2, 2), ("L2", -2, 2), ("SumSquare", -2, 2), ("LogSum", 0.1, 2), ("LogSumExp", -2, 2)]:
    op = f"Reduce{kind}"
    k = kind.lower()
    case(f"reduce_{k}_opset13_keep", op, X4, {"axes": [1, -1]}, opset=13, low=low, high=high)
    case(f"reduce_{k}_opset13_all_drop", op, X3, {"keepdims": 0}, opset=13, low=low, high=high)
    case(f"reduce_{k}_opset13_all_keep", op, X3, {}, opset=13, low=low, high=high)
    case(f"reduce_{k}_opset18_drop", op, X4, {"keepdims": 0}, {"axes": I64(-2, 0)}, opset=18, low=low, high=high)
    case(f"reduce_{k}_opset18_default", op, X3, {}, opset=18, low=low, high=high)
    case(f"reduce_{k}_opset18_noop", op, X3, {"noop_with_empty_axes": 1}, opset=18, low=low, high=high)
case("reduce_logsumexp_large", "ReduceLogSumExp", X4, {"axes": [2], "keepdims": 0}, opset=13, low=100, high=120)
case("reduce_logsumexp_infinities", "ReduceLogSumExp",
     {"x": np.array([[-np.inf, -np.inf, -np.inf], [np.inf, 1.0, -np.inf], [np.inf, np.inf, 0.0], [-np.inf, 2.0, 3.0]],
                    dtype=np.float32)}, {"keepdims": 0, "axes": [1]}, opset=13)

# ArgMax, ArgMin: axis 0 by default, negative axes, keepdims, ties (integer-valued data)
# with the first or the last index, integer inputs, NaN as ONNX Runtime has it.
for op in ["ArgMax", "ArgMin"]:
    k = op.lower()
    case(f"{k}_default", op, X3)
    case(f"{k}_negative_axis_drop", op, X4, {"axis": -1, "keepdims": 0})
    case(f"{k}_ties_first", op, {"x": [4, 7, 5]}, {"axis": 1}, low=-2, high=2)
    case(f"{k}_ties_last", op, {"x": ([4, 7, 5], "int64", 2)}, {"axis": 1, "keepdims": 0, "select_last_index": 1})
    case(f"{k}_ties_first_int", op, {"x": ([6, 9], "int64", 2)}, {"axis": -1})
    for last in [0, 1]:
        case(f"{k}_nan_last{last}", op,
             {"x": np.array([[1, np.nan, 3, 2], [np.nan, 1, 2, 3], [1, 2, 3, np.nan], [np.nan] * 4, [3, 3, np.nan, 3],
                             [np.inf, np.nan, np.inf, -np.inf], [-np.inf, -np.inf, np.nan, -np.inf]], dtype=np.float32)},
             {"axis": 1, "keepdims": 0, "select_last_index": last})

# 1-D convolution and pooling, on [N, C, L].
case("conv1d_basic", "Conv", {"x": [2, 3, 11]}, {"pads": [1, 1]}, {"w": rand(5, 3, 3), "b": rand(5)})
case("conv1d_strides_dilations_asym_pads", "Conv", {"x": [1, 4, 13]}, {"strides": [2], "dilations": [2], "pads": [0, 2]},
     {"w": rand(3, 4, 3)}, opset=22)
case("conv1d_depthwise_kernel_shape", "Conv", {"x": [2, 4, 9]}, {"group": 4, "kernel_shape": [5], "pads": [2, 2]},
     {"w": rand(4, 1, 5), "b": rand(4)})
for mode in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    case(f"conv1d_auto_pad_{mode.lower()}", "Conv", {"x": [1, 2, 10]}, {"auto_pad": mode, "strides": [3]},
         {"w": rand(3, 2, 4), "b": rand(3)})
case("maxpool1d_k3_s2_p1", "MaxPool", {"x": [2, 3, 11]}, {"kernel_shape": [3], "strides": [2], "pads": [1, 1]})
case("maxpool1d_ceil", "MaxPool", {"x": [1, 2, 10]}, {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}, opset=22)
case("maxpool1d_auto_pad_same_lower", "MaxPool", {"x": [1, 2, 9]}, {"kernel_shape": [4], "strides": [2], "auto_pad": "SAME_LOWER"})
for cip in [0, 1]:
    case(f"avgpool1d_pads_cip{cip}", "AveragePool", {"x": [2, 3, 10]},
         {"kernel_shape": [3], "strides": [2], "pads": [1, 2], "count_include_pad": cip}, opset=19)
case("avgpool1d_default_strides", "AveragePool", {"x": [1, 4, 7]}, {"kernel_shape": [2]})

# Einsum (version 12): attention, batched and plain matrix products, a linear layer,
# `...`, implicit outputs, MaxViT's relative positions, elementwise products, one
# operand's transposes and sums.
for eq, shapes in [
    ("bhid,bhjd->bhij", [[2, 3, 5, 4], [2, 3, 6, 4]]),
    ("bhij,bhjd->bhid", [[2, 3, 5, 6], [2, 3, 6, 4]]),
    ("bij,bjk->bik", [[3, 4, 5], [3, 5, 2]]),
    ("ij,jk->ik", [[4, 5], [5, 3]]),
    ("bid,jd->bij", [[2, 5, 4], [7, 4]]),
    ("...id,...jd->...ij", [[2, 3, 5, 4], [2, 3, 6, 4]]),
    ("...id,...jd", [[2, 1, 5, 4], [2, 3, 6, 4]]),
    ("ij,jk", [[4, 5], [5, 3]]),
    ("bnhwd,hkd->bnhwk", [[2, 3, 4, 5, 6], [4, 7, 6]]),
    ("bhqd,kd->bhqk", [[2, 3, 5, 4], [6, 4]]),
    ("ij,jk->k", [[4, 5], [5, 3]]),
    ("i,i", [[7], [7]]),
    ("i,j->ij", [[4], [5]]),
    ("bi,bj->bji", [[3, 4], [3, 5]]),
    ("ij->ji", [[4, 5]]),
    ("ij->i", [[4, 5]]),
    ("ijk->ki", [[3, 4, 5]]),
    ("ijk", [[3, 4, 5]]),
]:
    name = eq.replace(",", "_").replace("->", "_to_").replace("...", "E")
    case(f"einsum_{name}", "Einsum", {f"x{i}": s for i, s in enumerate(shapes)}, {"equation": eq}, opset=13)


# Mod: integers with fmod 0 (Python's %, the divisor's sign) and 1 (C's fmod, the
# dividend's sign), every sign combination, broadcasting, values up to 2^24 (exact in
# weft's f32 kernels); floats with fmod 1 (ONNX takes floats with fmod 1 only). The
# constants here come from a generator of their own, so that the cases above keep their
# inputs.
rng57 = np.random.default_rng(57)


def nonzero_ints(shape, high):
    v = rng57.integers(1, high, size=shape) * rng57.choice([-1, 1], size=shape)
    return v.astype(np.int64)


def signed(*shape, low, high):
    v = rng57.uniform(low, high, size=shape) * rng57.choice([-1, 1], size=shape)
    return v.astype(np.float32)


for fmod in [0, 1]:
    case(f"mod_int_fmod{fmod}", "Mod", {"a": ([3, 5, 7], "int64", 50), "b": nonzero_ints([5, 7], 13)}, {"fmod": fmod})
    case(f"mod_int_const_divisor_fmod{fmod}", "Mod", {"a": ([4, 9], "int64", 40)}, {"fmod": fmod},
         {"b": np.array([3, -3, 7, -1, 1, 40, -41, 2, 5], dtype=np.int64)})
    big = np.array([2**24 - 1, -(2**24 - 1), 2**24 - 3, -(2**24 - 5), 16777214, -16777214, 5592405, 12345679],
                   dtype=np.int64)
    divisors = np.array([3, 7, -3, 5592407, -5592407, 2**24 - 2, -(2**24 - 1), 2], dtype=np.int64)
    case(f"mod_int_near_2p24_fmod{fmod}", "Mod", {"a": np.tile(big, (8, 1)), "b": divisors.reshape(8, 1)},
         {"fmod": fmod})
case("mod_float_fmod1", "Mod", {"a": [2, 3, 5, 7]}, {"fmod": 1},
     {"b": signed(3, 1, 7, low=0.5, high=3.0)},
     low=-10, high=10)
case("mod_float_fmod1_scalar", "Mod", {"a": [5, 9]}, {"fmod": 1}, {"b": np.float32(-1.3)}, low=-20, high=20)
case("mod_float_fmod1_inputs", "Mod", {"a": [3, 5], "b": [3, 5]}, {"fmod": 1}, low=0.25, high=4)


# Pad: pads (and the constant) as initializers, every mode, negative pads (a crop, taken
# before padding), reflected by the whole length (ONNX Runtime refuses longer), the axes
# (opset 18, negative ones included), wrap (opset 19), float16 and int64 data.
def pads(*v):
    return np.array(v, dtype=np.int64)


X3P = {"x": [2, 5, 7]}
for mode in ["constant", "reflect", "edge"]:
    case(f"pad_{mode}", "Pad", X3P, {"mode": mode}, {"pads": pads(0, 2, 3, 1, 1, 4)}, opset=13)
    case(f"pad_{mode}_crop", "Pad", X3P, {"mode": mode}, {"pads": pads(0, -1, 2, 0, 3, -2)}, opset=13)
    case(f"pad_{mode}_axes", "Pad", {"x": [3, 4, 6, 5]}, {"mode": mode}, {"pads": pads(1, 2, 3, 0), "v": np.float32(0),
         "axes": pads(-1, 1)}, opset=18, node_inputs=["x", "pads", "v", "axes"])
case("pad_reflect_whole_length", "Pad", {"x": [3, 4]}, {"mode": "reflect"}, {"pads": pads(2, 3, 1, 3)}, opset=13)
case("pad_constant_value", "Pad", X3P, {}, {"pads": pads(1, 0, 2, 0, 3, 1), "v": np.float32(-2.5)}, opset=13)
case("pad_constant_computed_value", "Pad", {"x": [3, 5], "v": []}, {}, {"pads": pads(1, 2, 0, 3)},
     node_inputs=["x", "pads", "v"], opset=13)
case("pad_constant_nchw", "Pad", {"x": [1, 3, 9, 11]}, {}, {"pads": pads(0, 0, 1, 2, 0, 0, 3, 1)}, opset=13)
case("pad_wrap", "Pad", X3P, {"mode": "wrap"}, {"pads": pads(0, 3, -1, 1, 2, 9)}, opset=19)
case("pad_int64", "Pad", {"x": ([4, 5], "int64", 30)}, {"mode": "reflect"}, {"pads": pads(2, 1, 1, 3)}, opset=13)
case("pad_f16", "Pad", {"x": rng57.uniform(-3, 3, size=(3, 6)).astype(np.float16)}, {"mode": "edge"},
     {"pads": pads(1, 2, 3, 4)}, opset=13)

# Tile: repeats as an initializer, ones included, int64 and float16 data.
case("tile", "Tile", {"x": [2, 3, 5]}, {}, {"r": pads(3, 1, 2)}, opset=13)
case("tile_size_one_dims", "Tile", {"x": [1, 3, 1]}, {}, {"r": pads(2, 2, 5)}, opset=13)
case("tile_int64", "Tile", {"x": ([3, 2], "int64", 100)}, {}, {"r": pads(1, 4)}, opset=13)
case("tile_f16", "Tile", {"x": rng57.uniform(-3, 3, size=(3, 5)).astype(np.float16)}, {}, {"r": pads(2, 3)}, opset=13)

# CumSum: every axis (negative too), exclusive and reverse, an int64 mask summed into
# position ids (RoBERTa's and OPT's exports), 1-D, long rows.
for ex in [0, 1]:
    for rev in [0, 1]:
        case(f"cumsum_axis1_ex{ex}_rev{rev}", "CumSum", {"x": [3, 7, 5]}, {"exclusive": ex, "reverse": rev},
             {"axis": np.array(1, dtype=np.int64)}, opset=14)
case("cumsum_axis_last_negative", "CumSum", {"x": [2, 3, 9]}, {}, {"axis": np.array(-1, dtype=np.int32)}, opset=14)
case("cumsum_axis0_1d", "CumSum", {"x": [11]}, {"reverse": 1}, {"axis": np.array(0, dtype=np.int64)}, opset=13)
case("cumsum_long_rows", "CumSum", {"x": [2, 700]}, {}, {"axis": np.array(1, dtype=np.int64)}, opset=14)
case("cumsum_int64_mask", "CumSum", {"m": rng57.integers(0, 2, size=(3, 37)).astype(np.int64)}, {},
     {"axis": np.array(1, dtype=np.int64)}, opset=14)
case("cumsum_int64_exclusive_axis0", "CumSum", {"x": ([6, 4], "int64", 1000)}, {"exclusive": 1},
     {"axis": np.array(0, dtype=np.int64)}, opset=14)

# ReduceProd: axes as an attribute (13) or an input (18), keepdims, every axis, negative
# factors, a zero factor.
case("reduce_prod_opset13_keep", "ReduceProd", X4, {"axes": [1, -1]}, opset=13, low=-1.6, high=1.6)
case("reduce_prod_opset13_all_drop", "ReduceProd", {"x": [3, 4]}, {"keepdims": 0}, opset=13, low=-1.3, high=1.3)
case("reduce_prod_opset18_drop", "ReduceProd", X4, {"keepdims": 0}, {"axes": I64(-2)}, opset=18, low=-1.5, high=1.5)
case("reduce_prod_opset18_noop", "ReduceProd", X3, {"noop_with_empty_axes": 1}, opset=18)
case("reduce_prod_zero", "ReduceProd",
     {"x": np.array([[1.5, 0.0, -2.0], [-1.0, -2.0, -3.0], [2.0, -0.5, 4.0], [-0.0, 3.0, 1.0]], dtype=np.float32)},
     {"axes": [1]}, opset=13)

# TopK: both outputs, largest and smallest, axes first, middle and last, k from 1 to the
# whole axis, ties (small integers: a lower index first), int64 and float16 data.
case("topk_last", "TopK", {"x": [3, 4, 9]}, {}, {"k": pads(3)}, opset=13, outputs=2)
case("topk_axis1_smallest", "TopK", {"x": [3, 7, 5]}, {"axis": 1, "largest": 0}, {"k": pads(4)}, outputs=2)
case("topk_axis0_all", "TopK", {"x": [6, 5]}, {"axis": 0}, {"k": pads(6)}, outputs=2)
case("topk_ties", "TopK", {"x": ([4, 11], "int64", 3)}, {}, {"k": pads(5)}, outputs=2)
case("topk_ties_smallest", "TopK", {"x": rng57.integers(-2, 2, size=(3, 10)).astype(np.float32)},
     {"largest": 0, "axis": -1}, {"k": pads(7)}, outputs=2)
case("topk_one", "TopK", {"x": [2, 3, 13]}, {}, {"k": pads(1)}, outputs=2)
case("topk_f16", "TopK", {"x": rng57.uniform(-3, 3, size=(4, 9)).astype(np.float16)}, {}, {"k": pads(3)}, outputs=2)


# ScatterElements and ScatterND: indices computed (graph inputs) or constant, negative
# ones, every axis, duplicates (replaced in order, or combined by add, mul, max, min),
# int64 data.
def ints(*shape, low, high):
    return rng57.integers(low, high, size=shape).astype(np.int64)


case("scatter_elements_axis0", "ScatterElements", {"d": [5, 4], "i": ints(3, 4, low=-5, high=5), "u": [3, 4]},
     {"axis": 0}, opset=13)
case("scatter_elements_axis1_narrow", "ScatterElements", {"d": [4, 6, 3], "i": ints(2, 3, 2, low=0, high=6),
     "u": [2, 3, 2]}, {"axis": 1}, opset=13)
case("scatter_elements_const_indices", "ScatterElements", {"d": [3, 7], "u": [3, 2]}, {"axis": -1},
     {"i": ints(3, 2, low=-7, high=7)}, opset=13, node_inputs=["d", "i", "u"])
for red in ["add", "mul", "max", "min"]:
    case(f"scatter_elements_dup_{red}", "ScatterElements", {"d": [4, 5], "i": ints(4, 6, low=0, high=3),
         "u": [4, 6]}, {"axis": 1, "reduction": red}, opset=18)
case("scatter_elements_int64", "ScatterElements", {"d": ([3, 4], "int64", 50), "i": ints(3, 2, low=0, high=4),
     "u": ([3, 2], "int64", 50)}, {"axis": 1}, opset=13)
case("scatter_nd_rows", "ScatterND", {"d": [5, 4, 3], "i": np.array([[3], [0], [-1]], dtype=np.int64), "u": [3, 4, 3]},
     opset=13)
case("scatter_nd_elements", "ScatterND", {"d": [4, 6], "i": np.array([[[1, 5], [0, 0]], [[3, -2], [2, 1]]],
     dtype=np.int64), "u": [2, 2]}, opset=13)
case("scatter_nd_const_indices", "ScatterND", {"d": [3, 5, 2], "u": [2, 2]}, {},
     {"i": np.array([[0, 4], [2, 1]], dtype=np.int64)}, opset=13, node_inputs=["d", "i", "u"])
for red in ["add", "mul", "max", "min"]:
    case(f"scatter_nd_dup_{red}", "ScatterND", {"d": [4, 3], "i": np.array([[1], [3], [1], [1]], dtype=np.int64),
         "u": [4, 3]}, {"reduction": red}, opset=18)


# Older opsets (7-12): attributes that later became inputs, and Softmax's coercion to a
# matrix at `axis` (every dimension from `axis` on is one row) before 13.
case("softmax_coerced_opset11", "Softmax", X4, opset=11)
case("softmax_coerced_axis2_opset12", "Softmax", X4, {"axis": 2}, opset=12)
case("softmax_coerced_axis0_opset7", "Softmax", X3, {"axis": 0}, opset=7)
case("softmax_last_axis_opset11", "Softmax", X4, {"axis": -1}, opset=11)
case("logsoftmax_coerced_opset11", "LogSoftmax", X4, opset=11)
case("logsoftmax_coerced_axis2_opset9", "LogSoftmax", X4, {"axis": 2}, opset=9)
case("clip_attrs_opset10", "Clip", {"x": [2, 3, 5, 7]}, {"min": -0.5, "max": 0.7}, opset=10)
case("clip_min_attr_infinities_opset7", "Clip", {}, {"min": -0.5},
     {"x": np.array([-np.inf, -1.0, 0.25, 3.0, np.inf], dtype=np.float32)}, opset=7)
case("pad_attrs_opset10", "Pad", X3, {"pads": [0, 1, 2, 1, 0, 3], "value": 1.5}, opset=10)
case("pad_reflect_attrs_opset7", "Pad", X4, {"pads": [0, 0, 2, 1, 0, 0, 1, 3], "mode": "reflect"}, opset=7)
case("pad_edge_attrs_opset10", "Pad", X3, {"pads": [0, 2, 1, 0, 1, 2], "mode": "edge"}, opset=10)
case("split_attr_opset12", "Split", X3, {"axis": 1, "split": [2, 3]}, opset=12, outputs=2)
case("split_attr_opset7", "Split", X3, {"axis": 2, "split": [2, 5]}, opset=7, outputs=2)
case("squeeze_attr_opset11", "Squeeze", {"x": [1, 5, 1, 7]}, {"axes": [0, -2]}, opset=11)
case("squeeze_attr_one_axis_opset7", "Squeeze", {"x": [1, 5, 1, 7]}, {"axes": [2]}, opset=7)
case("unsqueeze_attr_opset12", "Unsqueeze", X3, {"axes": [0, -1]}, opset=12)
case("unsqueeze_attr_opset7", "Unsqueeze", X3, {"axes": [1, 4]}, opset=7)
case("reduce_sum_attr_opset12", "ReduceSum", X4, {"axes": [1, -1], "keepdims": 0}, opset=12)
case("reduce_mean_attr_opset7", "ReduceMean", X4, {"axes": [2]}, opset=7)
case("reduce_max_all_opset11", "ReduceMax", X3, {"keepdims": 0}, opset=11)
case("slice_attrs_opset9", "Slice", X3, {"starts": [1, 2], "ends": [-1, 6], "axes": [1, 2]}, opset=9)
case("slice_attrs_no_axes_opset7", "Slice", X3, {"starts": [0, 1], "ends": [1, 4]}, opset=7)
case("topk_attr_opset9", "TopK", {"x": [3, 11]}, {"k": 4}, opset=9, outputs=2)
case("topk_input_opset10", "TopK", {"x": [3, 11]}, {"axis": 0}, {"k": I64(2)}, opset=10, outputs=2)
case("gemm_opset7", "Gemm", {"a": [3, 5]}, {"transB": 1, "beta": 0.5}, {"b": rand(4, 5), "c": rand(4)}, opset=7)
case("gemm_opset9", "Gemm", {"a": [5, 3]}, {"transA": 1, "alpha": 2.0}, {"b": rand(5, 4), "c": rand(3, 4)}, opset=9)
case("dropout_ratio_attr_opset10", "Dropout", {"x": [3, 5]}, {"ratio": 0.3}, opset=10)
case("batchnorm_opset7", "BatchNormalization", {"x": [2, 5, 7, 3]}, {"epsilon": 1e-3},
     {"scale": rand(5), "bias": rand(5), "mean": rand(5), "var": rand(5, low=0.5, high=2.0)}, opset=7)
case("argmax_opset11", "ArgMax", X3, {"axis": -1, "keepdims": 0}, opset=11)
case("flatten_opset9", "Flatten", X4, {"axis": 2}, opset=9)
case("concat_opset7", "Concat", {"a": [2, 3, 5], "b": [2, 4, 5]}, {"axis": 1}, opset=7)
case("max_variadic_opset7", "Max", {"a": [3, 5], "b": [3, 5], "c": [3, 5]}, opset=7)
case("mean_three_opset7", "Mean", {"a": [3, 5], "b": [3, 5], "c": [3, 5]}, opset=7)
case("mean_broadcast", "Mean", {"a": [2, 3, 5], "b": [3, 1]}, opset=13)
case("mean_one", "Mean", {"a": [4, 3]}, opset=13)
case("scatter_opset10", "Scatter", {"x": [4, 5]}, {"axis": 1},
     {"i": np.array([[0, 4], [1, 3], [2, 0], [4, 0]], dtype=np.int64), "u": rand(4, 2)}, opset=10)

# NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the targets a real int64 input
# (the class pick a gather on the device), odd sizes, N-C and N-C-d1-d2 layouts, every
# reduction, class weights, ignore_index inside the classes, negative (PyTorch's -100)
# and past the last class; the mean's denominator the weights of the targets kept.
rng_loss = np.random.default_rng(57)


def targets(shape, classes, ignore=None, every=3):
    t = rng_loss.integers(0, classes, size=shape).astype(np.int64)
    if ignore is not None:
        t.reshape(-1)[::every] = ignore
    return t


for op, short in [("NegativeLogLikelihoodLoss", "nll"), ("SoftmaxCrossEntropyLoss", "sce")]:
    w5 = rand(5, low=0.2, high=2.0)
    case(f"{short}_nc_none", op, {"x": [7, 5], "t": targets([7], 5)}, {"reduction": "none"}, opset=13)
    case(f"{short}_nc_mean", op, {"x": [7, 5], "t": targets([7], 5)}, {}, opset=12)
    case(f"{short}_ncd1d2_sum_weight", op, {"x": [3, 5, 4, 6], "t": targets([3, 4, 6], 5)}, {"reduction": "sum"},
         {"w": w5}, opset=13)
    case(f"{short}_ncd1d2_mean_weight_ii", op, {"x": [3, 5, 4, 6], "t": targets([3, 4, 6], 5, ignore=2)},
         {"ignore_index": 2}, {"w": w5}, opset=13)
    case(f"{short}_ncd1_mean_ii_negative", op, {"x": [4, 5, 9], "t": targets([4, 9], 5, ignore=-100, every=4)},
         {"ignore_index": -100}, opset=13)
    case(f"{short}_ncd1_none_weight_ii_past_classes", op, {"x": [4, 5, 9], "t": targets([4, 9], 5, ignore=5)},
         {"ignore_index": 5, "reduction": "none"}, {"w": w5}, opset=13)
    case(f"{short}_ncd1d2d3_sum_ii_negative_one", op, {"x": [2, 5, 3, 2, 5], "t": targets([2, 3, 2, 5], 5, ignore=-1)},
         {"ignore_index": -1, "reduction": "sum"}, opset=13)
case("sce_ncd1_mean_weight_ii_log_prob", "SoftmaxCrossEntropyLoss", {"x": [4, 5, 9], "t": targets([4, 9], 5, ignore=0)},
     {"ignore_index": 0}, {"w": rand(5, low=0.2, high=2.0)}, opset=13, outputs=2, low=-6, high=6)
case("nll_nc_mean_ii_past_2p24", "NegativeLogLikelihoodLoss", {"x": [7, 5], "t": targets([7], 5)},
     {"ignore_index": 2**30}, opset=13)
case("sce_nc_none_log_prob", "SoftmaxCrossEntropyLoss", {"x": [7, 5], "t": targets([7], 5)},
     {"reduction": "none"}, opset=13, outputs=2)

# Reductions over an axis of length 0: the empty sum, product, maximum, ... (the input,
# empty, is then read by nothing).
EMPTY_X = np.zeros([3, 0, 2], dtype=np.float32)
for op, opset in [("ReduceSum", 13), ("ReduceMax", 18), ("ReduceMin", 20), ("ReduceProd", 18), ("ReduceL1", 18),
                  ("ReduceL2", 18), ("ReduceSumSquare", 18), ("ReduceLogSum", 18), ("ReduceLogSumExp", 18)]:
    case(f"{op.lower()}_empty_set", op, {"x": EMPTY_X}, {"keepdims": 0}, {"axes": I64(1)}, opset=opset)
case("reducesum_empty_set_keepdims_attr_axes", "ReduceSum", {"x": EMPTY_X}, {"axes": [1, 2]}, opset=12)

EVERY_OUTPUT = {"TopK", "Attention", "SoftmaxCrossEntropyLoss", "LayerNormalization"}


# Resize: every mode and coordinate transformation, scales or sizes (constants), odd
# sizes, up and down; torch's F.interpolate exports nearest as asymmetric + floor and
# bilinear as pytorch_half_pixel (align_corners=False) or align_corners.
EMPTY = np.zeros([0], dtype=np.float32)


def resize(name, shape, attrs, scales=None, sizes=None, roi=None, opset=19):
    consts = {"roi": EMPTY if roi is None else np.array(roi, dtype=np.float32)}
    ins = ["x", "roi"]
    if scales is not None:
        consts["scales"] = np.array(scales, dtype=np.float32)
        ins.append("scales")
    else:
        consts["sizes"] = np.array(sizes, dtype=np.int64)
        ins += ["", "sizes"]
    case(f"resize_{name}", "Resize", {"x": shape}, attrs, consts, opset=opset, node_inputs=ins)


resize("nearest_torch_scales2", [1, 3, 5, 7], {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
       scales=[1, 1, 2, 2], opset=13)
resize("nearest_default_sizes", [2, 3, 5, 7], {}, sizes=[2, 3, 9, 4])
resize("nearest_ceil_align_corners", [1, 2, 6, 5], {"coordinate_transformation_mode": "align_corners", "nearest_mode": "ceil"},
       sizes=[1, 2, 11, 3])
resize("nearest_prefer_ceil_half_pixel_down", [1, 2, 9, 8], {"nearest_mode": "round_prefer_ceil"}, scales=[1, 1, 0.5, 0.75])
resize("nearest_floor_pytorch_half_pixel", [1, 2, 5, 6], {"coordinate_transformation_mode": "pytorch_half_pixel",
       "nearest_mode": "floor"}, sizes=[1, 2, 1, 13])
resize("nearest_scales3", [1, 2, 4, 3], {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
       scales=[1, 1, 3, 3], opset=13)
resize("linear_pytorch_half_pixel_scales2", [2, 3, 5, 7], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
       scales=[1, 1, 2, 2], opset=13)
resize("linear_pytorch_half_pixel_sizes", [1, 3, 6, 7], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
       sizes=[1, 3, 1, 10])
resize("linear_align_corners_sizes", [1, 3, 5, 7], {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
       sizes=[1, 3, 12, 9], opset=13)
resize("linear_half_pixel_down", [1, 2, 11, 9], {"mode": "linear"}, scales=[1, 1, 0.6, 0.5])
resize("linear_asymmetric_scales", [1, 2, 5, 4], {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
       scales=[1, 1, 1.5, 2.5])
# The node tests resize_downsample_scales_{linear,cubic}_align_corners with constant
# scales: ONNX Runtime (as weft) divides by the output length less one, not by the
# len·scale − 1 of their expected outputs (node_tests.rs, RUNTIME_DISAGREES).
resize("linear_align_corners_scales_down", [1, 1, 2, 4], {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
       scales=[1, 1, 0.6, 0.6])
resize("cubic_align_corners_scales_down", [1, 1, 4, 4], {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
       scales=[1, 1, 0.8, 0.8])
resize("trilinear", [1, 2, 3, 4, 5], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, sizes=[1, 2, 5, 7, 4])
resize("linear_rank2", [4, 6], {"mode": "linear"}, sizes=[7, 3])
resize("cubic_default_scales2", [1, 2, 5, 7], {"mode": "cubic"}, scales=[1, 1, 2, 2])
resize("cubic_sizes_odd", [2, 2, 6, 5], {"mode": "cubic"}, sizes=[2, 2, 9, 3])
resize("cubic_a05_exclude_outside_asym", [1, 2, 7, 8], {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1,
       "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 0.8, 1.4])
resize("cubic_align_corners", [1, 1, 5, 6], {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
       sizes=[1, 1, 8, 11], opset=13)
resize("cubic_pytorch_half_pixel", [1, 3, 4, 5], {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
       scales=[1, 1, 2, 2])
resize("tf_crop_and_resize_linear", [1, 2, 7, 8], {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
       "extrapolation_value": 3.0}, sizes=[1, 2, 5, 6], roi=[0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4])
resize("tf_crop_and_resize_nearest", [1, 2, 7, 8], {"coordinate_transformation_mode": "tf_crop_and_resize"},
       sizes=[1, 2, 4, 5], roi=[0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9])
resize("half_pixel_symmetric_linear", [1, 2, 5, 7], {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
       scales=[1, 1, 1.7, 0.45])
resize("axes_sizes_not_larger", [1, 2, 5, 7], {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger", "mode": "linear"},
       sizes=[9, 9], opset=18)
resize("axes_scales_3_2", [1, 2, 5, 7], {"axes": [3, 2], "mode": "nearest"}, scales=[2.0, 1.5], opset=18)
# antialias (opset 18): the filter stretched where an axis shrinks, as ONNX Runtime has it.
resize("antialias_linear_half_pixel", [1, 2, 10, 13], {"mode": "linear", "antialias": 1}, scales=[1, 1, 0.45, 0.6])
resize("antialias_linear_asymmetric_sizes", [2, 1, 9, 11], {"mode": "linear", "antialias": 1,
       "coordinate_transformation_mode": "asymmetric"}, sizes=[2, 1, 4, 3])
resize("antialias_cubic_pytorch_half_pixel_up_and_down", [1, 2, 10, 7], {"mode": "cubic", "antialias": 1,
       "coordinate_transformation_mode": "pytorch_half_pixel"}, scales=[1, 1, 0.3, 1.5])
resize("antialias_cubic_exclude_outside", [1, 2, 12, 9], {"mode": "cubic", "antialias": 1, "exclude_outside": 1,
       "cubic_coeff_a": -0.5}, scales=[1, 1, 0.6, 0.8])
resize("antialias_cubic_align_corners", [1, 1, 10, 13], {"mode": "cubic", "antialias": 1,
       "coordinate_transformation_mode": "align_corners"}, sizes=[1, 1, 4, 6])
resize("sizes_not_smaller", [1, 2, 5, 7], {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}, sizes=[4, 9], opset=18)

# ConvTranspose (torch's ConvTranspose1d/2d/3d exports, FPN and U-Net upsampling),
# 3-D Conv and pooling (video models); odd sizes.
case("convtranspose_k2_s2", "ConvTranspose", {"x": [2, 3, 5, 7]}, {"strides": [2, 2]}, {"w": rand(3, 4, 2, 2), "b": rand(4)})
case("convtranspose_k3_s2_p1_outpad", "ConvTranspose", {"x": [1, 4, 5, 6]},
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}, {"w": rand(4, 3, 3, 3), "b": rand(3)})
case("convtranspose_k4_s2_p1", "ConvTranspose", {"x": [1, 3, 4, 5]}, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"w": rand(3, 2, 4, 4)})
case("convtranspose_groups_dilations_asym", "ConvTranspose", {"x": [1, 6, 5, 4]},
     {"group": 3, "strides": [3, 1], "dilations": [2, 1], "pads": [0, 1, 2, 0]}, {"w": rand(6, 2, 3, 3), "b": rand(6)})
case("convtranspose_depthwise", "ConvTranspose", {"x": [2, 4, 5, 5]}, {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"w": rand(4, 1, 3, 3)}, opset=22)
case("convtranspose_big_pads_crop", "ConvTranspose", {"x": [1, 2, 7, 6]}, {"strides": [1, 2], "pads": [3, 2, 2, 3]},
     {"w": rand(2, 3, 3, 3)})
case("convtranspose_output_shape", "ConvTranspose", {"x": [1, 2, 4, 5]}, {"strides": [3, 2], "output_shape": [12, 11]},
     {"w": rand(2, 3, 3, 3)})
for mode in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    case(f"convtranspose_auto_pad_{mode.lower()}", "ConvTranspose", {"x": [1, 2, 5, 4]}, {"strides": [2, 3], "auto_pad": mode},
         {"w": rand(2, 3, 4, 3), "b": rand(3)})
case("convtranspose_1d", "ConvTranspose", {"x": [2, 3, 9]}, {"strides": [2], "pads": [1, 2], "output_padding": [1]},
     {"w": rand(3, 5, 4), "b": rand(5)})
case("convtranspose_3d", "ConvTranspose", {"x": [1, 2, 3, 4, 5]}, {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]},
     {"w": rand(2, 3, 3, 2, 3), "b": rand(3)})
case("conv3d_basic", "Conv", {"x": [2, 3, 5, 6, 7]}, {"pads": [1, 1, 1, 1, 1, 1]}, {"w": rand(4, 3, 3, 3, 3), "b": rand(4)})
case("conv3d_strides_dilations_asym_pads", "Conv", {"x": [1, 4, 7, 6, 5]},
     {"strides": [2, 1, 2], "dilations": [2, 1, 1], "pads": [1, 0, 2, 0, 1, 1]}, {"w": rand(3, 4, 3, 2, 3)})
case("conv3d_groups", "Conv", {"x": [1, 6, 4, 5, 5]}, {"group": 3, "pads": [0, 1, 1, 2, 1, 1]},
     {"w": rand(6, 2, 3, 3, 3), "b": rand(6)})
case("conv3d_depthwise_same", "Conv", {"x": [1, 4, 5, 6, 4]}, {"group": 4, "auto_pad": "SAME_UPPER", "strides": [2, 2, 1]},
     {"w": rand(4, 1, 3, 3, 3)})
case("conv3d_stem_k1x7x7", "Conv", {"x": [1, 3, 4, 13, 11]}, {"strides": [1, 2, 2], "pads": [0, 3, 3, 0, 3, 3]},
     {"w": rand(5, 3, 1, 7, 7)})
case("maxpool3d_k3_s2_p1", "MaxPool", {"x": [2, 3, 5, 7, 6]}, {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1]})
case("maxpool3d_ceil", "MaxPool", {"x": [1, 2, 6, 5, 8]}, {"kernel_shape": [2, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1})
for cip in [0, 1]:
    case(f"avgpool3d_pads_cip{cip}", "AveragePool", {"x": [1, 3, 5, 6, 7]},
         {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 1], "count_include_pad": cip})
    case(f"avgpool3d_ceil_cip{cip}", "AveragePool", {"x": [1, 2, 5, 7, 6]},
         {"kernel_shape": [2, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 0, 0, 1, 1], "ceil_mode": 1, "count_include_pad": cip},
         opset=19)

# Dilated pooling in 1-D, 2-D and 3-D.
case("maxpool_dilations", "MaxPool", {"x": [1, 3, 9, 8]}, {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [1, 2],
     "pads": [2, 1, 1, 1]})
case("maxpool1d_dilations_ceil", "MaxPool", {"x": [2, 2, 11]}, {"kernel_shape": [3], "dilations": [2], "strides": [2],
     "ceil_mode": 1}, opset=22)
case("maxpool3d_dilations", "MaxPool", {"x": [1, 2, 6, 7, 5]}, {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2],
     "pads": [1, 0, 1, 0, 1, 1]})
for cip in [0, 1]:
    case(f"avgpool_dilations_cip{cip}", "AveragePool", {"x": [1, 3, 9, 10]},
         {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 1], "pads": [2, 1, 1, 2], "count_include_pad": cip},
         opset=19)
    case(f"avgpool3d_dilations_ceil_cip{cip}", "AveragePool", {"x": [1, 2, 7, 6, 8]},
         {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2], "strides": [2, 2, 2], "pads": [1, 1, 0, 0, 1, 1],
          "ceil_mode": 1, "count_include_pad": cip}, opset=19)

# Attention (opset 23): grouped KV heads, a cache (causal aligned to its end: query i sees
# keys up to i + past), 3-D and 4-D inputs, different value head sizes, boolean and float
# masks, causal with no cache (query and key lengths differ), scale, softcap without a
# mask; outputs Y, present_key and present_value all checked.
rng23 = np.random.default_rng(23)


def f32(*shape):
    return rng23.uniform(-1.0, 1.0, size=shape).astype(np.float32)


case("attention_3d_gqa_causal_past", "Attention",
     {"q": [2, 5, 42], "k": [2, 5, 14], "v": [2, 5, 18], "pk": [2, 2, 3, 7], "pv": [2, 2, 3, 9]},
     {"q_num_heads": 6, "kv_num_heads": 2, "is_causal": 1}, opset=23, outputs=3,
     node_inputs=["q", "k", "v", "", "pk", "pv"])
case("attention_4d_gqa_causal_past_bool_mask", "Attention",
     {"q": [1, 4, 3, 5], "k": [1, 2, 3, 5], "v": [1, 2, 3, 5], "m": ([3, 7], "bool"),
      "pk": [1, 2, 4, 5], "pv": [1, 2, 4, 5]}, {"is_causal": 1}, opset=23, outputs=3)
case("attention_4d_float_mask_past_scale", "Attention",
     {"q": [2, 3, 4, 6], "k": [2, 3, 2, 6], "v": [2, 3, 2, 5], "m": [2, 1, 4, 5],
      "pk": [2, 3, 3, 6], "pv": [2, 3, 3, 5]}, {"scale": 0.3}, opset=23, outputs=3)
# A query row the mask hides entirely gives zeros (ONNX's errata; ONNX Runtime agrees).
hidden_row = np.array([[True, False, True, True], [False] * 4, [True, True, False, True]])
case("attention_4d_bool_mask_hidden_row", "Attention", {"q": [1, 2, 3, 4], "k": [1, 2, 4, 4], "v": [1, 2, 4, 3],
     "m": hidden_row}, opset=23)
case("attention_4d_causal_cross", "Attention", {"q": [1, 2, 4, 5], "k": [1, 2, 7, 5], "v": [1, 2, 7, 3]},
     {"is_causal": 1}, opset=23)
case("attention_4d_mqa_softcap", "Attention", {"q": [2, 3, 5, 4], "k": [2, 1, 6, 4], "v": [2, 1, 6, 4]},
     {"softcap": 1.5}, opset=23, low=-3.0, high=3.0)

# RotaryEmbedding (opset 23): rows of the caches picked by position ids (any order,
# repeats), or caches given per position; halves or interleaved pairs; a partial
# rotation; 3-D inputs split into heads.
positions = np.array([[0, 4, 9, 2, 2], [10, 1, 3, 7, 5]], dtype=np.int64)
case("rotary_3d_position_ids", "RotaryEmbedding", {"x": [2, 5, 18], "p": positions},
     {"num_heads": 3}, {"cos": f32(11, 3), "sin": f32(11, 3)}, opset=23, node_inputs=["x", "cos", "sin", "p"])
case("rotary_4d_interleaved_partial_position_ids", "RotaryEmbedding", {"x": [2, 3, 5, 10], "p": positions},
     {"interleaved": 1, "rotary_embedding_dim": 6}, {"cos": f32(11, 3), "sin": f32(11, 3)}, opset=23,
     node_inputs=["x", "cos", "sin", "p"])
case("rotary_4d_partial_caches_per_position", "RotaryEmbedding", {"x": [2, 3, 5, 10], "cos": [2, 5, 2],
     "sin": [2, 5, 2]}, {"rotary_embedding_dim": 4}, opset=23)


# Normalizations (issue 57): LayerNormalization's Mean and InvStdDev (outputs 1 and 2,
# checked: LayerNormalization is in EVERY_OUTPUT), RMSNormalization (opset 23), on odd
# sizes and over one axis and several.
case("layer_norm_stats", "LayerNormalization", {"x": [3, 5, 7]}, {"epsilon": 1e-3},
     {"g": rand(7), "b": rand(7)}, opset=17, outputs=3)
case("layer_norm_stats_two_axes", "LayerNormalization", {"x": [3, 5, 7]}, {"axis": 1},
     {"g": rand(5, 7)}, opset=17, outputs=3, low=1.0, high=3.0)
case("layer_norm_stats_mean_only", "LayerNormalization", {"x": [2, 3, 11]}, {"axis": -1},
     {"g": rand(11), "b": rand(11)}, opset=17, outputs=2)
case("rms_norm", "RMSNormalization", {"x": [3, 5, 7]}, {"epsilon": 1e-3}, {"g": rand(7)}, opset=23)
case("rms_norm_two_axes", "RMSNormalization", {"x": [3, 5, 7]}, {"axis": 1}, {"g": rand(5, 7)}, opset=23)
case("rms_norm_broadcast_scale", "RMSNormalization", {"x": [2, 3, 5, 9]}, {"axis": -2},
     {"g": rand(1, 9)}, opset=23, low=-5, high=5)
# The small ops composed at import.
case("lppool_2d", "LpPool", {"x": [2, 3, 9, 7]}, {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}, opset=18)
case("lppool_1d_p3", "LpPool", {"x": [2, 3, 11]}, {"kernel_shape": [3], "p": 3}, opset=18)
case("lppool_dilated_p1", "LpPool", {"x": [1, 2, 9, 9]}, {"kernel_shape": [2, 2], "dilations": [2, 1], "p": 1}, opset=18)
case("lrn", "LRN", {"x": [2, 7, 5, 3]}, {"size": 3, "alpha": 1e-2, "beta": 0.6, "bias": 1.5}, opset=13)
case("lrn_size5", "LRN", {"x": [2, 5, 7, 1]}, {"size": 5}, opset=13, low=-3, high=3)
case("hardmax_axis1", "Hardmax", {"x": [3, 5, 7]}, {"axis": 1}, opset=13)
case("hardmax_ties", "Hardmax", {"x": rng.integers(-2, 2, size=(3, 9)).astype(np.float32)}, {}, opset=13)
case("hardmax_coerced_opset11", "Hardmax", {"x": [3, 5, 7]}, {"axis": 1}, opset=11)
case("lpnorm_l1", "LpNormalization", {"x": [3, 5, 7]}, {"axis": 1, "p": 1}, opset=13)
case("lpnorm_l2", "LpNormalization", {"x": [3, 5, 7]}, {}, opset=13)
INFS = np.array([[1.0, np.inf, -np.inf, np.nan, -3.4e38, 3.4e38, 0.0]], dtype=np.float32)
case("isinf", "IsInf", {"x": INFS}, {}, opset=20)
case("isinf_negative", "IsInf", {"x": INFS}, {"detect_positive": 0}, opset=20)
case("onehot_axis1", "OneHot", {"i": ([3, 5], "int64", 6)}, {"axis": 1},
     {"depth": np.array(7, dtype=np.int64), "values": np.array([-0.5, 2.0], dtype=np.float32)}, opset=11)
case("onehot_float_indices", "OneHot", {"i": [2, 7]}, {}, {"depth": np.array(5.0, dtype=np.float32),
     "values": np.array([0.0, 1.0], dtype=np.float32)}, opset=11, low=-4.0, high=4.0)
case("depth_to_space_dcr", "DepthToSpace", {"x": [2, 12, 3, 5]}, {"blocksize": 2}, opset=13)
case("depth_to_space_crd", "DepthToSpace", {"x": [1, 18, 2, 3]}, {"blocksize": 3, "mode": "CRD"}, opset=13)
case("space_to_depth", "SpaceToDepth", {"x": [2, 3, 6, 4]}, {"blocksize": 2}, opset=13)
case("eyelike_k", "EyeLike", {"x": [5, 7]}, {"k": -2}, opset=22)
case("shrink", "Shrink", {"x": [3, 5, 7]}, {"lambd": 0.7, "bias": 0.2}, opset=13)
case("mvn", "MeanVarianceNormalization", {"x": [2, 3, 5, 7]}, {}, opset=13)
case("mvn_axes", "MeanVarianceNormalization", {"x": [3, 5, 7]}, {"axes": [1]}, opset=13, low=1.0, high=4.0)

case("gather_nd_batch_dims", "GatherND", {"x": [2, 3, 5, 4]}, {"batch_dims": 1},
     {"i": np.stack([rng.integers(-3, 3, size=(2, 3)), rng.integers(-5, 5, size=(2, 3))], axis=-1)})
case("pow_int_base_int_exponent", "Pow", {"x": np.arange(-7, 8).reshape(3, 5).astype(np.int64)}, {}, {"p": I64(3)}, opset=15)
case("pow_int_base_float_exponent", "Pow", {"x": np.arange(1, 16).reshape(3, 5).astype(np.int64)}, {},
     {"p": np.float32(2.5)}, opset=15)

# Einsum diagonals and traces (a subscript repeated within an operand).
case("einsum_batch_diagonal", "Einsum", {"x": [3, 5, 5]}, {"equation": "...ii->...i"}, opset=12)
case("einsum_trace_implicit", "Einsum", {"x": [5, 5]}, {"equation": "ii"}, opset=12)
case("einsum_two_diagonals", "Einsum", {"a": [4, 4, 3], "b": [5, 5]}, {"equation": "iij,kk->j"}, opset=12)
case("einsum_diagonal_then_product", "Einsum", {"a": [2, 3, 4, 4], "b": [2, 3, 7]}, {"equation": "bjii,bjl->bil"}, opset=12)

def ir_version(opset):
    return 8 if opset <= 18 else 9 if opset <= 20 else 10 if opset <= 22 else 11


def build(out, spec):
    name, op, inputs, attrs, consts, opset, outputs, low, high, node_inputs = spec
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    # An input is a shape (float, uniform in [low, high)), or (shape, "int64", high) —
    # uniform integers in [-high, high), negative indices included — or (shape, "bool"),
    # or a float32, float16, int64 or bool array (these values: NaNs, infinities, divisors
    # without 0).
    def typed(spec):
        if isinstance(spec, np.ndarray):
            kinds = {np.dtype(np.int64): TensorProto.INT64, np.dtype(np.float16): TensorProto.FLOAT16,
                     np.dtype(np.bool_): TensorProto.BOOL}
            return list(spec.shape), kinds.get(spec.dtype, TensorProto.FLOAT)
        if isinstance(spec, tuple):
            return spec[0], TensorProto.INT64 if spec[1] == "int64" else TensorProto.BOOL
        return spec, TensorProto.FLOAT

    ins = [helper.make_tensor_value_info(k, typed(v)[1], typed(v)[0]) for k, v in inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    names = node_inputs or list(inputs) + list(consts)
    outs = ["y"] + [f"extra{i}" for i in range(1, outputs)]
    node = helper.make_node(op, names, outs, name=f"{name}_node", **attrs)
    # The output's type is left to inference: comparisons give bool, Cast what it names.
    # Every output of an op whose outputs are all results (TopK's values and indices) is
    # a graph output and checked; the others' extra outputs are unused.
    checked = outs if op in EVERY_OUTPUT else ["y"]
    graph = helper.make_graph([node], name, ins, [helper.make_empty_tensor_value_info(o) for o in checked], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version(opset)
    path = os.path.join(d, "model.onnx")
    ort_model = model.SerializeToString()
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    feeds = {}
    for k, (n, s) in enumerate(inputs.items()):
        if isinstance(s, np.ndarray):
            x = s
        elif isinstance(s, tuple) and s[1] == "int64":
            x = rng.integers(-s[2], s[2], size=s[0]).astype(np.int64)
        elif isinstance(s, tuple):
            x = rng.integers(0, 2, size=s[0]).astype(np.bool_)
        else:
            x = rng.uniform(low, high, size=s).astype(np.float32)
        # weft takes every input as f32 (integers exact to 2^24).
        np.save(os.path.join(d, f"input_{k}.npy"), x.astype(np.float32))
        feeds[n] = x
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(ort_model, opts, providers=["CPUExecutionProvider"])
    for k, y in enumerate(sess.run(checked, feeds)):
        np.save(os.path.join(d, f"output_{k}.npy"), np.asarray(y, dtype=np.float32))


def main():
    out = sys.argv[1]
    for spec in CASES:
        build(out, spec)
    print(f"built {len(CASES)} single-op models in {out}")


if __name__ == "__main__":
    main()
