"""Tacotron 2 in another language: the symbol table from the training transcripts (--symbols-from-filelist) or from
a file (--symbols-file), saved in the checkpoint and used by inference instead of NVIDIA's English table."""
import json
import logging

import pytest
import torch

import inference
import train
from common.errors import UserError, exit_on_user_error
from common.text.symbols import SYMBOLS
from tacotron2.inference import Synthesizer
from tests.families import run_args
from tests.training_runs import untrained_checkpoint

GERMAN = ["Grüße aus Köln, sagte der Bäcker.", "Die Straße ist schön und breit.",
          "Über den Fluß fährt ein Boot.", "Öl und Wasser mischen sich nicht.", "Wir äßen gern süße Äpfel!",
          "Heute ist es kühl; morgen heiß?"]


@pytest.fixture(scope="module")
def german_corpus(synthetic_corpus, tmp_path_factory):
    """The synthetic corpus's wavs with German-like transcripts (ä, ö, ü, ß, none of them in NVIDIA's table):
    (training filelist, validation filelist), their paths relative to the corpus's dataset folder."""
    folder = tmp_path_factory.mktemp("german")
    wavs = [line.split("|")[0] for line in synthetic_corpus.train_filelist.read_text().splitlines() if line]
    train_filelist, val_filelist = folder / "train.txt", folder / "val.txt"
    train_filelist.write_text("".join(f"{wav}|{GERMAN[index % len(GERMAN)]}\n" for index, wav in enumerate(wavs)),
                              encoding="utf-8")
    val_filelist.write_text(f"{wavs[0]}|Schöne Grüße.\n", encoding="utf-8")
    return train_filelist, val_filelist


def german_run(synthetic_corpus, german_corpus, output, *extra):
    train_filelist, val_filelist = german_corpus
    return run_args("Tacotron2", synthetic_corpus, output, "--training-files", str(train_filelist),
                    "--validation-files", str(val_filelist), "--text-cleaners", "basic_cleaners", *extra)


@pytest.mark.slow
def test_german_transcripts_train_with_their_own_table_and_synthesize_with_it(synthetic_corpus, german_corpus,
                                                                               tmp_path, caplog):
    torch.set_num_threads(1)
    train.main(german_run(synthetic_corpus, german_corpus, tmp_path / "run", "--epochs", "1",
                          "--symbols-from-filelist"))
    checkpoint_path = tmp_path / "run" / "checkpoint_Tacotron2_last.pt"
    checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
    symbols = checkpoint["text"]["symbols"]
    assert symbols[0] == "_" and symbols[1:] == sorted(set("".join(GERMAN).lower()) - {"_"})
    assert {"ä", "ö", "ü", "ß", " "} <= set(symbols) and "A" not in symbols  # basic_cleaners lowercases
    assert checkpoint["text"]["cleaners"] == ["basic_cleaners"]
    embedding_rows = checkpoint["state_dict"]["embedding.weight"].shape[0]
    assert checkpoint["model_config"]["n_symbols"] == len(symbols) == embedding_rows

    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Schöne Grüße!\nDer Fluß ist kühl.\nCafé\n", encoding="utf-8")  # é: not in the table
    with caplog.at_level(logging.WARNING, logger="common.text"):
        inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--tacotron2", str(checkpoint_path),
                        "--quiet", "--cpu", "--griffin-lim-iters", "2"])
    assert sorted(path.name for path in (tmp_path / "out").glob("*.wav")) == ["audio_1.wav", "audio_2.wav",
                                                                             "audio_3.wav"]
    assert any("U+00E9" in record.getMessage() and "phrases.txt:3" in record.getMessage()
               for record in caplog.records)  # the unknown symbol is reported, as for NVIDIA's table

    synthesizer = Synthesizer.from_args(inference.build_parser().parse_args(["-i", "x", "-o", "y", "--tacotron2",
                                                                   str(checkpoint_path), "--cpu"]))
    assert synthesizer.text.symbols == symbols
    # a line without a final mark ends with the full stop the transcripts' table holds (docs/data.md)
    assert synthesizer.text.encode("Grüße") == [symbols.index(character) for character in "grüße."]


@pytest.mark.parametrize("file_name", ["symbols.txt", "symbols.json"])
def test_a_symbols_file_round_trips_into_the_checkpoint(file_name, synthetic_corpus, german_corpus, tmp_path):
    table = ["_", " ", "!", ",", ".", ";", "?", *"abcdefghijklmnopqrstuvwxyz", "ä", "ö", "ü", "ß"]
    path = tmp_path / file_name
    path.write_text(json.dumps(table) if file_name.endswith(".json") else "".join(f"{s}\n" for s in table),
                    encoding="utf-8")
    saved = untrained_checkpoint(german_run(synthetic_corpus, german_corpus, tmp_path, "--symbols-file", str(path)),
                                 tmp_path / "checkpoint.pt")
    checkpoint = torch.load(saved, map_location="cpu", weights_only=True)
    assert checkpoint["text"]["symbols"] == table and checkpoint["model_config"]["n_symbols"] == len(table)


def test_a_checkpoint_whose_table_disagrees_with_its_embedding_is_refused_at_inference(synthetic_corpus,
                                                                                        german_corpus, tmp_path):
    saved = untrained_checkpoint(german_run(synthetic_corpus, german_corpus, tmp_path, "--symbols-from-filelist"),
                                 tmp_path / "checkpoint.pt")
    checkpoint = torch.load(saved, map_location="cpu", weights_only=True)
    checkpoint["text"]["symbols"] = list(SYMBOLS)  # NVIDIA's 148 beside an embedding of the German table's rows
    torch.save(checkpoint, tmp_path / "mixed.pt")
    args = inference.build_parser().parse_args(["-i", "x", "-o", "y", "--tacotron2", str(tmp_path / "mixed.pt"),
                                                "--cpu"])
    rows = checkpoint["state_dict"]["embedding.weight"].shape[0]
    with pytest.raises(UserError, match=f"mixed.pt: its symbol table has 148 symbols but its embedding {rows} rows"):
        Synthesizer.from_args(args)


def test_the_default_table_is_still_nvidias(synthetic_corpus, tmp_path):
    saved = untrained_checkpoint(run_args("Tacotron2", synthetic_corpus, tmp_path), tmp_path / "checkpoint.pt")
    checkpoint = torch.load(saved, map_location="cpu", weights_only=True)
    assert checkpoint["text"]["symbols"] == list(SYMBOLS) and checkpoint["model_config"]["n_symbols"] == 148


def test_the_two_symbol_flags_exclude_each_other(synthetic_corpus, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train.main(run_args("Tacotron2", synthetic_corpus, tmp_path, "--epochs", "1", "--symbols-file", "x.txt",
                            "--symbols-from-filelist"))
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("content, expected", [
    ("", "symbols.txt is empty"),
    ("_\na\n\nb\n", "symbols.txt:3: an empty symbol"),
    ("_\na\nb\na\n", "symbols.txt:4: the symbol 'a' is listed twice, first at 2"),
])
def test_a_bad_symbols_file_ends_training_with_one_error_line_naming_it(content, expected, synthetic_corpus,
                                                                       tmp_path, capsys):
    path = tmp_path / "symbols.txt"
    path.write_text(content)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs",
                                                       "1", "--symbols-file", str(path))))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: --symbols-file {tmp_path}/") and expected in lines[0]
