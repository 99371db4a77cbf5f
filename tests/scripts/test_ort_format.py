"""scripts/ort_format.py: an ORT-format model read back into ONNX computes what the ORT file computes (an If with its
two branches, int8 weights turned into float32 as Moonshine's files store them, Moonshine's own decoder), and a file
that is not one is one error line."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from common.errors import exit_on_user_error  # noqa: E402
from scripts import ort_format  # noqa: E402


def int8_weighted_model() -> onnx.ModelProto:
    """y = x @ (int8 weights * scale), then If(flag) adds 1 or multiplies by 2: the shapes of Moonshine's graphs."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.integers(-127, 128, (4, 3), dtype=np.int8), "weights_int8")
    scale = numpy_helper.from_array(np.array([0.02], np.float32), "scale")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    then_branch = helper.make_graph([helper.make_node("Add", ["product", "one"], ["added"])], "then", [],
                                    [helper.make_tensor_value_info("added", TensorProto.FLOAT, ["n", 3])])
    else_branch = helper.make_graph([helper.make_node("Mul", ["product", "two"], ["doubled"])], "else", [],
                                    [helper.make_tensor_value_info("doubled", TensorProto.FLOAT, ["n", 3])])
    nodes = [helper.make_node("Cast", ["weights_int8"], ["weights_float"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["weights_float", "scale"], ["weights"]),
             helper.make_node("MatMul", ["x", "weights"], ["product"]),
             helper.make_node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    graph = helper.make_graph(nodes, "int8_weighted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
                                                       helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                              [weights, scale, one, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def saved_in_ort_format(model: onnx.ModelProto, path) -> None:
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep the Cast and Mul
    options.optimized_model_filepath = str(path)
    options.add_session_config_entry("session.save_model_format", "ORT")
    onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def test_a_model_read_back_from_ort_format_computes_the_same(tmp_path):
    saved_in_ort_format(int8_weighted_model(), tmp_path / "model.ort")
    read_back = ort_format.onnx_model(tmp_path / "model.ort")
    onnx.checker.check_model(read_back)
    assert [node.op_type for node in read_back.graph.node] == ["Cast", "Mul", "MatMul", "If"]
    original = onnxruntime.InferenceSession(str(tmp_path / "model.ort"), providers=["CPUExecutionProvider"])
    rebuilt = onnxruntime.InferenceSession(read_back.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for flag in (True, False):
        expected, = original.run(None, {"x": x, "flag": np.array(flag)})
        got, = rebuilt.run(None, {"x": x, "flag": np.array(flag)})
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert not np.allclose(expected, x @ np.zeros((4, 3)))  # the weights were read, not left empty


def test_moonshines_decoder_read_back_gives_its_logits():
    moonshine_cpp = pytest.importorskip("moonshine_cpp")
    from pathlib import Path

    path = Path(moonshine_cpp.__file__).parent / "models" / "base-en" / "decoder_model_merged.ort"
    original = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rebuilt = onnxruntime.InferenceSession(ort_format.onnx_model(path).SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {"input_ids": np.array([[5, 9]], np.int64), "use_cache_branch": np.array([False]),
            "encoder_hidden_states": rng.standard_normal((1, 40, 416)).astype(np.float32)}
    for node in original.get_inputs():  # the cache is empty at the first step
        if node.name.startswith("past_key_values"):
            feed[node.name] = np.zeros((1, node.shape[1], 0, node.shape[3]), np.float32)
    expected, got = original.run(None, feed)[0], rebuilt.run(None, feed)[0]
    assert expected.shape == (1, 2, 32768)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-3 * np.abs(expected).max())
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_a_file_that_is_not_an_ort_model_is_one_error_line(tmp_path, capsys):
    (tmp_path / "model.onnx").write_bytes(int8_weighted_model().SerializeToString())
    for path, message in ((tmp_path / "model.onnx", "is not a model in ONNX Runtime's ORT format"),
                          (tmp_path / "missing.ort", "missing.ort: no such file")):
        with pytest.raises(SystemExit) as exit_info:
            exit_on_user_error(lambda: ort_format.main([str(path), str(tmp_path / "out.onnx")]))
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith("error: ") and message in error and error.count("\n") == 1
    assert not (tmp_path / "out.onnx").exists()
