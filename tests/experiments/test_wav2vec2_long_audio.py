"""experiments/wav2vec2_long_audio/measure_long_audio.py on the tiny recognizer and the synthetic corpus's two test
sets (4 utterances, a few seconds): every reading reports its figures, each from its own process."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_long_audio_measurement_reports_each_reading(recognizer_checkpoint, synthetic_asr_corpus, tmp_path):
    corpus = synthetic_asr_corpus.directory
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "experiments.wav2vec2_long_audio.measure_long_audio",
                    "--checkpoint", str(recognizer_checkpoint), "--manifests", str(corpus / "test_sentences.tsv"),
                    str(corpus / "test_voice.tsv"), "--chunks", "2:0.5", "--whole-seconds", "4",
                    "--memory-spans", "6", "-o", str(report)], capture_output=True, text=True, cwd=ROOT, timeout=300,
                   check=True)
    rows = json.loads(report.read_text())["rows"]
    assert [(row["mode"], row["chunk_seconds"]) for row in rows] == [
        ("alone", 30.0), ("chunked", 2.0), ("alone", 30.0), ("whole", 0.0), ("chunked", 30.0), ("chunked", 30.0)]
    full = rows[0]["audio_seconds"]
    assert full > 8 and rows[1]["audio_seconds"] == full and rows[2]["audio_seconds"] <= 4 < full
    for row in rows:
        assert 0 <= row["cer"] and row["peak_rss_mib"] >= row["rss_before_mib"] > 0
    assert "flags" in json.loads(report.read_text())["machine"]
