"""experiments/moonshine_silence/silence.py: each row is Moonshine base judging the same folders with that much
silence around each clip (recomputed here), the ratio is the seeds' pooled CER over eSpeak NG's, and the failures
are counted from the rows' transcripts."""
import json

import pytest
import soundfile

from common.errors import UserError
from common.text.cleaners import english_cleaners
from experiments.moonshine_silence import silence
from scripts.data.espeak import synthesize
from scripts.intelligibility import evaluate_with_moonshine, pair_wavs_with_lines
from scripts.moonshine_judge import MoonshineJudge


@pytest.mark.parametrize("reference, hypothesis, repeated", [
    ("SHE WROTE A LONG LETTER", "SHE WROTE A LONG LETTER SHE WROTE", True),
    ("A YOUNG BOY ASKED ME", "A GUN BOY ASKED ME A GUN BOY", True),
    ("SHE WROTE A LONG LETTER", "SHE WROTE A LONG LETTER", False),
    ("THE CAT SAT", "THE CAT SAT ON A MAT", False),  # more words, but nothing said twice
    ("HI", "HI HI HI", False),  # too short to tell a repeat from a stammer
])
def test_a_repeat_is_more_words_ending_on_two_already_said(reference, hypothesis, repeated):
    assert silence.repeats(reference, hypothesis) is repeated


def test_each_row_judges_every_folder_with_its_silence(tmp_path):
    lines = ["the river ran quietly past the old mill", "please close the window before you go to bed"]
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(lines) + "\n")
    # eSpeak NG at its ceiling's rate, and two "seeds" that say the same lines faster
    for folder, rate in (("espeak", 175), ("seed_1", 260), ("seed_2", 300)):
        (tmp_path / "seeds" / folder).mkdir(parents=True)
        for number, line in enumerate(lines, 1):
            samples, sampling_rate = synthesize(english_cleaners(line), voice="en-us", words_per_minute=rate)
            soundfile.write(tmp_path / "seeds" / folder / f"audio_{number}.wav", samples, sampling_rate)
    report = silence.main(["--seeds-dir", str(tmp_path / "seeds"), "--texts", str(texts), "--silence", "0", "0.5",
                           "--json", str(tmp_path / "report.json")])
    assert report == json.loads((tmp_path / "report.json").read_text())
    assert [row["silence_seconds"] for row in report["rows"]] == [0.0, 0.5]
    for row in report["rows"]:
        judge = MoonshineJudge(silence_seconds=row["silence_seconds"])
        espeak = evaluate_with_moonshine(judge, pair_wavs_with_lines(tmp_path / "seeds" / "espeak", texts))
        assert [file["written"] for file in row["espeak"]["files"]] == [file["written"] for file in espeak["files"]]
        assert list(row["seeds"]) == ["seed_1", "seed_2"]
        seed_files = [file for result in row["seeds"].values() for file in result["files"]]
        errors = sum(file["char_errors"] for file in seed_files)
        assert row["seeds_pooled"]["cer"] == pytest.approx(100 * errors / sum(file["chars"] for file in seed_files))
        assert row["cer_to_espeak"] == pytest.approx(row["seeds_pooled"]["cer"] / max(row["espeak"]["cer"], 1e-9))
        assert row["seed_failures"] == silence.failures(seed_files)
        first = sum(file["hypothesis"].split()[:1] != file["reference"].split()[:1] for file in seed_files)
        assert row["seed_failures"]["first_word_misheard"] == first


def test_a_folder_that_is_not_intelligibility_seeds_output_is_one_error(tmp_path):
    (tmp_path / "texts.txt").write_text("hello\n")
    with pytest.raises(UserError, match="expected espeak/ and seed_<n>/ folders"):
        silence.main(["--seeds-dir", str(tmp_path), "--texts", str(tmp_path / "texts.txt")])
