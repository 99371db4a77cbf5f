"""What the ONNX export tests read from a written file: its opset and the shapes of its inputs and outputs. Importing
it skips the test module when the export's packages are missing."""
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


def opset_of(path) -> int:
    (version,) = [entry.version for entry in onnx.load(str(path)).opset_import if entry.domain in ("", "ai.onnx")]
    return version


def shapes_of(path) -> dict[str, list]:
    """{input or output name: [dim, ...]}, each dim its size or, for a dynamic axis, its name."""
    graph = onnx.load(str(path)).graph
    return {value.name: [dim.dim_param or dim.dim_value for dim in value.type.tensor_type.shape.dim]
            for value in list(graph.input) + list(graph.output)}
