"""Adds the `features` output to an exported square model: the final feature map, before the
linear layer that makes the embedding (`[N, C, H, W]`; 96 x 4 x 3 for the committed network).

The run-time classifier compares crops in this space, whitened per table with the start
position's labelled crops (`src/vision/whiten.rs`, `docs/classifier.md`, "Whitened features").
The weights and the other outputs are untouched; the script checks that with onnxruntime.

    python training/add_features_output.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper


def main():
    src, dst = sys.argv[1], sys.argv[2]
    model = onnx.load(src)
    graph = model.graph
    if any(o.name == "features" for o in graph.output):
        raise SystemExit(f"{src} already has a `features` output")
    flatten = [n for n in graph.node if n.op_type == "Flatten"]
    if len(flatten) != 1:
        raise SystemExit(f"expected one Flatten node before the embedding, found {len(flatten)}")
    source = flatten[0].input[0]
    graph.node.append(helper.make_node("Identity", [source], ["features"], name="features_out"))
    graph.output.append(helper.make_tensor_value_info("features", onnx.TensorProto.FLOAT,
                                                      ["N", None, None, None]))
    inferred = onnx.shape_inference.infer_shapes(model)
    shape = next(o for o in inferred.graph.output if o.name == "features").type.tensor_type.shape
    dims = [d.dim_param or d.dim_value for d in shape.dim]
    if len(dims) != 4 or not all(isinstance(d, int) and d > 0 for d in dims[1:]):
        raise SystemExit(f"could not infer the feature map's shape: {dims}")
    out = next(o for o in graph.output if o.name == "features")
    for d, v in zip(out.type.tensor_type.shape.dim[1:], dims[1:]):
        d.dim_value = v
    onnx.checker.check_model(model)
    onnx.save(model, dst)

    crops = np.random.default_rng(0).random((4, 3, 64, 48), dtype=np.float32)
    before = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    after = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
    names = [o.name for o in before.get_outputs()]
    a = before.run(names, {"crops": crops})
    b = after.run(names + ["features"], {"crops": crops})
    for n, x, y in zip(names, a, b):
        if not np.array_equal(x, y):
            raise SystemExit(f"output {n} changed")
    print(f"{dst}: features {list(b[-1].shape)}; {', '.join(names)} unchanged")


if __name__ == "__main__":
    main()
