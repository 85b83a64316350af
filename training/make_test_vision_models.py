"""Writes the two plumbing fixtures of the Rust vision tests (not trained, not for use):

- fixtures/vision/squares-fixture.onnx: input `crops` float32[N, 3, 64, 48] →
  `logits` float32[N, 13] = 10 × (mean R, mean G, mean B, 0, …, 0) and
  `embedding` float32[N, 64] = L2-normalised 4×4 average-pool grid of each channel (48 values,
  channel-major, then 16 zeros), and `features` float32[N, 3, 4, 4] = that grid itself (so a
  patch mirrored left-right gives the grid mirrored along its last axis).
- fixtures/vision/pockets-fixture.onnx: input `pockets` float32[N, 3, 128, 96] → `counts`
  float32[N, 5, 9] with logit[role][k] = 20 · k · (mean of channel role % 3 − 0.5), so a channel
  mean above ½ reads 8 and below ½ reads 0.

The weights are designed, not random, so that src/vision tests can recompute every output from the
pixels and thereby check channel order, layout and scaling end to end. Same I/O names, shapes and
dtypes as the contract's models/squares.onnx and models/pockets.onnx. Needs `onnx` and `numpy`
(e.g. /var/tmp/trainenv/bin/python); not run in CI.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def squares(path):
    w_logits = np.zeros((3, 13), dtype=np.float32)
    for c in range(3):
        w_logits[c, c] = 10.0
    w_embed = np.zeros((48, 64), dtype=np.float32)
    for i in range(48):
        w_embed[i, i] = 1.0
    nodes = [
        helper.make_node("GlobalAveragePool", ["crops"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["means"], axis=1),
        helper.make_node("MatMul", ["means", "w_logits"], ["logits"]),
        helper.make_node("AveragePool", ["crops"], ["grid"], kernel_shape=[16, 12], strides=[16, 12]),
        helper.make_node("Flatten", ["grid"], ["grid_flat"], axis=1),
        helper.make_node("MatMul", ["grid_flat", "w_embed"], ["raw"]),
        helper.make_node("LpNormalization", ["raw"], ["embedding"], axis=1, p=2),
        helper.make_node("Identity", ["grid"], ["features"]),
    ]
    graph = helper.make_graph(
        nodes,
        "squares_fixture",
        [helper.make_tensor_value_info("crops", TensorProto.FLOAT, ["N", 3, 64, 48])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 13]),
            helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", 64]),
            helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 3, 4, 4]),
        ],
        [numpy_helper.from_array(w_logits, "w_logits"), numpy_helper.from_array(w_embed, "w_embed")],
    )
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tandem-monitor"), path)


def pockets(path):
    w = np.zeros((3, 45), dtype=np.float32)
    b = np.zeros((45,), dtype=np.float32)
    for r in range(5):
        for k in range(9):
            w[r % 3, r * 9 + k] = 20.0 * k
            b[r * 9 + k] = -10.0 * k
    nodes = [
        helper.make_node("GlobalAveragePool", ["pockets"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["means"], axis=1),
        helper.make_node("MatMul", ["means", "w"], ["mw"]),
        helper.make_node("Add", ["mw", "b"], ["flat"]),
        helper.make_node("Reshape", ["flat", "shape"], ["counts"]),
    ]
    graph = helper.make_graph(
        nodes,
        "pockets_fixture",
        [helper.make_tensor_value_info("pockets", TensorProto.FLOAT, ["N", 3, 128, 96])],
        [helper.make_tensor_value_info("counts", TensorProto.FLOAT, ["N", 5, 9])],
        [
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(b, "b"),
            numpy_helper.from_array(np.array([-1, 5, 9], dtype=np.int64), "shape"),
        ],
    )
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tandem-monitor"), path)


out = Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures/vision")
out.mkdir(parents=True, exist_ok=True)
squares(str(out / "squares-fixture.onnx"))
pockets(str(out / "pockets-fixture.onnx"))
