"""Writes fixtures/tiny-linear.onnx: y = relu(x @ W + b), x: float32[N, 4], y: float32[N, 3].

The weights are small integers-over-eight so that the expected outputs are exact in f32; the test
in src/vision/model.rs recomputes them in Rust. Needs `pip install onnx`; not run in CI.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 8.0
B = np.array([0.5, -0.25, 0.0], dtype=np.float32)

graph = helper.make_graph(
    [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "B"], ["z"]),
        helper.make_node("Relu", ["z"], ["y"]),
    ],
    "tiny_linear",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tandem-monitor")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1] if len(sys.argv) > 1 else "fixtures/tiny-linear.onnx")
