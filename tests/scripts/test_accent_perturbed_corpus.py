"""scripts/wav2vec2/accent_perturbed_corpus.py: training utterances re-spoken from changed phonemes."""
from __future__ import annotations

import random

import pytest
import soundfile

from common.errors import exit_on_user_error
from common.espeak import phoneme_clauses
from scripts.data.asr_corpus import OPEN_VARIANTS, build_asr_corpus
from scripts.data.espeak import synthesize
from scripts.wav2vec2.accent_perturbed_corpus import WIDE_VARIANTS, held_out_variants, main, perturb


@pytest.fixture(scope="module")
def open_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("open_corpus")
    build_asr_corpus(folder, num_utterances=5, seed=9, text="open", num_open=4, num_everyday=1)
    return folder


def test_espeak_speaks_its_own_phoneme_names_back():
    clauses = phoneme_clauses("the old mill", "en-us", mnemonics=True)
    assert clauses == ["DI2; 'oUld m'Il"]
    from_text, _ = synthesize("the old mill", voice="en-us")
    from_phonemes, _ = synthesize(f"[[{clauses[0]}]]", voice="en-us", phoneme_input=True)
    as_letters, _ = synthesize(f"[[{clauses[0]}]]", voice="en-us")  # without the flag it spells the brackets' text
    assert abs(len(from_phonemes) - len(from_text)) < 0.05 * len(from_text)
    assert abs(len(as_letters) - len(from_text)) > 0.2 * len(from_text)


@pytest.mark.parametrize("rules, expected", [
    ({"th_stopping"}, "d@2 b'Vs wVz d'Er"),
    ({"th_fronting"}, "v@2 b'Vs wVz v'Er"),
    ({"non_rhotic"}, "D@2 b'Vs wVz D'E"),
    (set(), "D@2 b'Vs wVz D'Er"),
])
def test_each_rule_changes_only_its_phonemes(rules, expected):
    assert perturb("D@2 b'Vs wVz D'Er", rules, 0.0, random.Random(0)) == expected


def test_h_dropping_keeps_the_r_before_a_stressed_vowel():
    # "r" before a stress mark and a vowel is not dropped: the rule looks past the mark
    assert perturb("h'oUm r'Iv3", {"h_dropping", "non_rhotic"}, 0.0, random.Random(0)) == "'oUm r'Iv@"


def test_vowel_swaps_pick_neighbours():
    changed = perturb("b'Vs", set(), 1.0, random.Random(0))
    assert changed in ("b'Us", "b'0s", "b'@s")


def test_the_copy_respeaks_a_share_and_keeps_the_transcripts(open_corpus, tmp_path, capsys):
    main([str(open_corpus), str(tmp_path / "all"), "--share", "1"])
    assert "as they were" in capsys.readouterr().out
    source_rows = (open_corpus / "train.tsv").read_text().splitlines()[1:]
    rows = (tmp_path / "all" / "train.tsv").read_text().splitlines()
    assert rows[0] == str((tmp_path / "all").resolve()) and len(rows) - 1 == len(source_rows)
    differ = 0
    for (relative, samples), (_, source_samples) in zip((row.split("\t") for row in rows[1:]),
                                                       (row.split("\t") for row in source_rows)):
        assert soundfile.info(tmp_path / "all" / relative).frames == int(samples)
        differ += (tmp_path / "all" / relative).read_bytes() != (open_corpus / relative).read_bytes()
    assert differ >= len(source_rows) - 1  # all re-spoken (the odd one may have drawn no change at all)
    assert (tmp_path / "all" / "train.wrd").read_text() == (open_corpus / "train.wrd").read_text()
    assert (tmp_path / "all" / "valid.tsv").read_text() == (open_corpus / "valid.tsv").read_text()
    main([str(open_corpus), str(tmp_path / "none"), "--share", "0"])
    for row in source_rows:
        relative = row.split("\t")[0]
        assert (tmp_path / "none" / relative).read_bytes() == (open_corpus / relative).read_bytes()


def test_a_corpus_without_utterances_csv_is_refused(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.tsv").write_text(f"{tmp_path}\n")
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: main([str(tmp_path / "src"), str(tmp_path / "out")]))
    assert stopped.value.code == 2
    assert "utterances.csv not found: SOURCE must be a corpus of scripts/data/asr_corpus.py --text open" in \
        capsys.readouterr().err


def test_the_wide_variants_leave_out_the_held_out_voices_and_the_corpus_own():
    assert held_out_variants() == {"m4", "m7", "f5", "klatt"}
    assert not set(WIDE_VARIANTS) & (held_out_variants() | set(OPEN_VARIANTS))
    assert len(set(WIDE_VARIANTS)) == len(WIDE_VARIANTS)


def test_wide_variants_without_an_accent_speak_the_words_in_another_voice(open_corpus, tmp_path, capsys):
    main([str(open_corpus), str(tmp_path / "wide"), "--share", "1", "--variants", "wide", "--no-accent"])
    assert "re-spoken (as they are, wide variants)" in capsys.readouterr().out
    first = (open_corpus / "train.tsv").read_text().splitlines()[1].split("\t")[0]
    identifier = first.split("/")[-1].removesuffix(".wav")
    fields = next(line.split("|") for line in (open_corpus / "utterances.csv").read_text().splitlines()
                  if line.startswith(identifier + "|"))
    # the same words, the same accent, rate and pitch, in the variant the seeded draw gives (after the share's draw)
    rng = random.Random(1234)
    rng.random()
    voice = f"{fields[2].partition('+')[0]}+{rng.choice(WIDE_VARIANTS)}"
    pitch = None if fields[5] == "-" else int(fields[5])
    expected, rate = synthesize(fields[4].lower(), voice=voice, words_per_minute=int(fields[3]), pitch=pitch)
    written, written_rate = soundfile.read(tmp_path / "wide" / first)
    assert written_rate == 16000 and rate > 16000
    assert abs(len(written) / written_rate - len(expected) / rate) < 0.1  # edge silence is trimmed in the copy
    assert (tmp_path / "wide" / first).read_bytes() != (open_corpus / first).read_bytes()


def test_an_unknown_variant_set_is_refused(open_corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main([str(open_corpus), str(tmp_path / "x"), "--variants", "every"])
    assert stopped.value.code == 2
    assert "--variants: invalid choice: 'every'" in capsys.readouterr().err


def test_kept_voices_are_never_respoken(open_corpus, tmp_path, capsys):
    voices = {line.split("|")[0]: line.split("|")[2]
              for line in (open_corpus / "utterances.csv").read_text().splitlines() if "|train|" in line}
    kept = sorted(set(voices.values()))[:2]
    main([str(open_corpus), str(tmp_path / "kept"), "--share", "1", "--keep-voices", *kept])
    assert f"{sum(voice in kept for voice in voices.values())} as they were" in capsys.readouterr().out
    for row in (open_corpus / "train.tsv").read_text().splitlines()[1:]:
        relative = row.split("\t")[0]
        same = (tmp_path / "kept" / relative).read_bytes() == (open_corpus / relative).read_bytes()
        assert same == (voices[relative.split("/")[-1].removesuffix(".wav")] in kept), relative
