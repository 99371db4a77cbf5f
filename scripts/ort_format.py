"""An ONNX Runtime model in its ORT format (a flatbuffer) read back into an ONNX model, so that ONNX Runtime optimizes
it again when it loads it.

    python -m scripts.ort_format MODEL.ort MODEL.onnx

Why: an ORT-format file is loaded as it was saved, with no graph optimization. Moonshine's files (scripts/
moonshine_judge.py) store their weights in int8 with a scale and turn them back into float32 on every call (a Cast and
a Mul per weight, 81 of each in the decoder); a decoder step then spends most of its time rebuilding the 32768-token
output matrix. Read back as ONNX, ONNX Runtime's constant folding does that once at load: the same graph, the same
float32 weights, a decoder step 4 times faster on a 2-core CPU (experiments/moonshine_ort_format).

Only what those files use is read: dense initializers, tensor and graph attributes (an If's branches), tensor value
types and shapes; anything else is an error naming it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from common.errors import UserError, UserFileNotFoundError, exit_on_user_error


def _text(value: bytes | None) -> str:
    return value.decode() if value is not None else ""


class _Reader:
    """One ORT-format file's flatbuffer tables turned into ONNX protobuf messages."""

    def __init__(self):
        try:
            import onnx
            from onnxruntime.tools.ort_format_model.ort_flatbuffers_py import fbs
        except ImportError as error:
            raise UserError("reading an ORT-format model needs the onnx and onnxruntime packages: pip install -r "
                            "requirements-judge.txt") from error
        self.onnx, self.fbs = onnx, fbs
        kinds = fbs.AttributeType.AttributeType
        self.attribute_kinds = {kinds.FLOAT: "F", kinds.INT: "I", kinds.STRING: "S", kinds.TENSOR: "T",
                                kinds.GRAPH: "G", kinds.FLOATS: "Floats", kinds.INTS: "Ints", kinds.STRINGS: "Strings"}

    def model(self, path: Path):
        fbs, helper = self.fbs, self.onnx.helper
        if not path.is_file():
            raise UserFileNotFoundError(f"{path}: no such file")
        buffer = bytearray(path.read_bytes())
        if not fbs.InferenceSession.InferenceSession.InferenceSessionBufferHasIdentifier(buffer, 0):
            raise UserError(f"{path} is not a model in ONNX Runtime's ORT format (no 'ORTM' identifier)")
        model = fbs.InferenceSession.InferenceSession.GetRootAsInferenceSession(buffer, 0).Model()
        opsets = [helper.make_opsetid(_text(model.OpsetImport(i).Domain()), model.OpsetImport(i).Version())
                  for i in range(model.OpsetImportLength())]
        try:
            graph = self.graph(model.Graph(), "main")
        except UserError as error:
            raise UserError(f"{path}: {error}") from error
        return helper.make_model(graph, opset_imports=opsets, ir_version=model.IrVersion())

    def graph(self, graph, name: str):
        if graph.SparseInitializersLength():
            raise UserError(f"graph {name}: sparse initializers are not read")
        nodes = [self.node(graph.Nodes(i)) for i in range(graph.NodesLength())]
        initializers = [self.tensor(graph.Initializers(i)) for i in range(graph.InitializersLength())]
        values = {info.name: info for info in (self.value_info(graph.NodeArgs(i))
                                               for i in range(graph.NodeArgsLength()))}
        constant = {tensor.name for tensor in initializers}
        inputs = [_text(graph.Inputs(i)) for i in range(graph.InputsLength())]
        outputs = [_text(graph.Outputs(i)) for i in range(graph.OutputsLength())]

        def declared(name: str):
            return values.get(name) or self.onnx.ValueInfoProto(name=name)

        return self.onnx.helper.make_graph(
            nodes, name, [declared(value) for value in inputs if value not in constant],
            [declared(value) for value in outputs], initializers,
            value_info=[info for value, info in values.items() if value not in inputs and value not in outputs])

    def node(self, node):
        made = self.onnx.helper.make_node(
            _text(node.OpType()), [_text(node.Inputs(i)) for i in range(node.InputsLength())],
            [_text(node.Outputs(i)) for i in range(node.OutputsLength())], name=_text(node.Name()),
            domain=_text(node.Domain()) or None)
        made.attribute.extend(self.attribute(node.Attributes(i)) for i in range(node.AttributesLength()))
        return made

    def attribute(self, attribute):
        name, kind = _text(attribute.Name()), self.attribute_kinds.get(attribute.Type())
        if kind is None:
            raise UserError(f"attribute {name}: type {attribute.Type()} is not read")
        if kind in ("Floats", "Ints", "Strings"):
            count = getattr(attribute, kind + "Length")()
            values = [getattr(attribute, kind)(i) for i in range(count)]
            return self.onnx.helper.make_attribute(name, values,
                                                   attr_type=getattr(self.onnx.AttributeProto, kind.upper()))
        value = getattr(attribute, kind)()
        if kind == "T":
            value = self.tensor(value)
        elif kind == "G":
            value = self.graph(value, name)
        return self.onnx.helper.make_attribute(name, value)

    def tensor(self, tensor):
        proto = self.onnx.TensorProto(name=_text(tensor.Name()), data_type=tensor.DataType(),
                                      dims=[tensor.Dims(i) for i in range(tensor.DimsLength())])
        if tensor.StringDataLength():
            proto.string_data.extend(tensor.StringData(i) for i in range(tensor.StringDataLength()))
        elif tensor.RawDataLength():
            proto.raw_data = tensor.RawDataAsNumpy().tobytes()
        return proto

    def value_info(self, value):
        info = self.onnx.ValueInfoProto(name=_text(value.Name()))
        kind = value.Type()
        if kind is None or kind.ValueType() != self.fbs.TypeInfoValue.TypeInfoValue.tensor_type:
            return info
        tensor_type = self.fbs.TensorTypeAndShape.TensorTypeAndShape()
        tensor_type.Init(kind.Value().Bytes, kind.Value().Pos)
        info.type.tensor_type.elem_type = tensor_type.ElemType()
        shape = tensor_type.Shape()
        if shape is None:
            return info
        info.type.tensor_type.shape.SetInParent()  # a known rank, even of no dimensions
        for i in range(shape.DimLength()):
            dimension, made = shape.Dim(i).Value(), info.type.tensor_type.shape.dim.add()
            if dimension is not None and dimension.DimType() == self.fbs.DimensionValueType.DimensionValueType.VALUE:
                made.dim_value = dimension.DimValue()
            elif dimension is not None and dimension.DimType() == self.fbs.DimensionValueType.DimensionValueType.PARAM:
                made.dim_param = _text(dimension.DimParam())
        return info


def onnx_model(path: Path):
    """The ORT-format model at path as an onnx.ModelProto (its SerializeToString() is what InferenceSession takes)."""
    return _Reader().model(Path(path))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ort_model", type=Path, help="the model in ORT format")
    parser.add_argument("onnx_model", type=Path, help="where to write it as ONNX")
    args = parser.parse_args(argv)
    args.onnx_model.write_bytes(onnx_model(args.ort_model).SerializeToString())


if __name__ == "__main__":
    exit_on_user_error(main)
