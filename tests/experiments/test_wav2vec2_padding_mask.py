"""experiments/wav2vec2_padding_mask on a tiny model: the three paths are timed and the Recognizer's logits are the
bare model's."""
import re

from experiments.wav2vec2_padding_mask.measure import main


def test_the_measurement_runs_and_the_recognizer_equals_the_bare_model(capsys):
    main(["--tiny", "--seconds", "2", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert "tiny CTC, 2 s, medians of 1" in lines[0] and len(lines) == 4
    rows = {line[:30].strip(): line[30:] for line in lines[1:]}
    assert list(rows) == ["model, padding_mask=None", "model, a mask of no padding", "Recognizer"]
    assert re.search(r"1\.00x the bare model .* 0\.0e\+00$", rows["model, padding_mask=None"])
    assert rows["Recognizer"].endswith("largest logit difference 0.0e+00")
    assert float(rows["model, a mask of no padding"].split("difference ")[1]) < 1e-3
