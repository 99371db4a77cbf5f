"""experiments/moonshine_ort_format on two sentences: both ways of loading Moonshine are timed and hear the same."""
import pytest

pytest.importorskip("moonshine_cpp")
pytest.importorskip("onnx")

from experiments.moonshine_ort_format.measure import main  # noqa: E402


def test_the_measurement_runs_and_both_loads_hear_the_same(capsys, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("The kettle is on the stove.\nPlease close the window before it rains.\n")
    main(["--texts", str(texts), "--count", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert "2 eSpeak NG recordings" in lines[0]
    assert lines[1].startswith("ORT format as stored") and lines[2].startswith("read back as ONNX (the judge)")
    assert lines[3] == "transcripts that differ: 0 of 2"
