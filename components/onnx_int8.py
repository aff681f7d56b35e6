"""Int8 weights for an exported embedding graph, for embedding many documents on a CPU without native bfloat16.

ONNX Runtime's dynamic quantization of the matrix products whose second operand is a weight (`MatMulConstBOnly`),
one scale per output channel; the products of two activations (attention) and the feed-forward down-projections
stay float32, and activations get one scale per call. Run one text per call, a chunk's vector therefore depends on that chunk alone (batched, it would
depend on the chunks it shares a batch with). On all-MiniLM-L6-v2 and the sample's chunks: cosine 0.994 to the
float32 vectors on average, 0.987 at worst, 2.4 times plain Haystack's chunks per second on a 2-core Zen 4
(`evaluation/results/2026-11-29-int8-documents/`).

Usage:
```python
from pmc_rag.components.onnx_int8 import int8_copy

int8_copy(exported_float32_graph)   # Path of "<name>-int8v1.onnx" beside it, made the first time
```
"""

from __future__ import annotations

from pathlib import Path

from pmc_rag.components.onnx_text_embedder import _write_then_rename


def narrowing_products(path: Path) -> list[str]:
    """The matrix products whose weight narrows its input (more rows than columns: a transformer's feed-forward
    down-projection, 1,536 to 384 wide in MiniLM). They stay float32: with them in int8 too, vectors were at cosine
    0.9939 of float32's on average and 0.981 at worst; without, 0.9970 and 0.994 (300 sample chunks)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {i.name: numpy_helper.to_array(i).shape for i in graph.initializer if len(i.dims) == 2}
    return [n.name for n in graph.node if n.op_type == "MatMul" and len(n.input) == 2 and n.input[1] in shapes
            and shapes[n.input[1]][0] > shapes[n.input[1]][1]]


# Part of the int8 file's name: a change to what is quantized, or how, must not reuse files made the old way.
INT8_VERSION = "1"


def int8_copy(path: Path) -> Path:
    """The int8 version of the exported graph at `path`, beside it; quantized once, reused after that (written
    under a temporary name, then renamed: a reader never opens half a file)."""
    target = path.with_name(f"{path.stem}-int8v{INT8_VERSION}.onnx")
    if target.exists():
        return target
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def quantize_to(partial: Path) -> None:
        quantize_dynamic(str(path), str(partial), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=narrowing_products(path), extra_options={"MatMulConstBOnly": True})

    _write_then_rename(target, quantize_to, suffix=".part.onnx")
    return target
