"""scripts/model_card.py: a Hugging Face model card (front matter, training length, results link, load snippet) for a
checkpoint or an exported folder, its licence; a missing checkpoint is one `error:` line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.errors import UserError
from common.registry import FAMILIES, get_recipe
from scripts import export_weights, model_card
from tests.families import corpus_of, run_args
from tests.training_runs import untrained_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def front_matter_of(card: str) -> list[str]:
    """The lines between the card's opening and closing `---` (simple YAML: `key: value` and `- item` lines)."""
    assert card.startswith("---\n")
    return card.split("---\n")[1].splitlines()


def test_a_tacotron2_card_holds_front_matter_steps_results_and_the_load_snippet(tacotron2_checkpoint, tmp_path):
    saved = torch.load(tacotron2_checkpoint, weights_only=True)
    model_card.main([str(tacotron2_checkpoint), "-o", str(tmp_path / "README.md")])
    card = (tmp_path / "README.md").read_text()

    front = front_matter_of(card)
    assert front[:5] == ["library_name: pytorch", "tags:", "- text-to-speech", "- tacotron2", "- speech"]
    assert "language: en" in front and "license: bsd-3-clause" in front
    for section in ("Model description", "Training data", "Training length", "Results", "How to load it", "Licence"):
        assert f"\n## {section}\n" in card
    assert f"Trained for {saved['epoch']} epochs and {saved['iteration']} steps" in card
    assert "[tacotron2/RESULTS.md](tacotron2/RESULTS.md)" in card
    assert f"Synthesizer.from_checkpoints({str(tacotron2_checkpoint)!r}, vocoder=\"griffin-lim\")" in card
    assert f"Symbols: {len(saved['text']['symbols'])}." in card


def test_a_card_of_exported_weights_loads_them_with_load_exported(recognizer_checkpoint, tmp_path):
    export_weights.main([str(recognizer_checkpoint), str(tmp_path / "exported")])
    model_card.main([str(tmp_path / "exported"), "-o", str(tmp_path / "README.md")])
    card = (tmp_path / "README.md").read_text()
    assert "- automatic-speech-recognition" in front_matter_of(card)
    assert "and 2 steps" in card
    assert f"load_exported({str(tmp_path / 'exported')!r}, expected_model='wav2vec2')" in card
    assert "[wav2vec2/RESULTS.md](wav2vec2/RESULTS.md)" in card


@pytest.mark.parametrize("name", [name for name in FAMILIES if name != "wav2vec2"])  # wav2vec2's: the tests above
def test_every_family_has_a_card_with_its_recipes_task_and_description(name, request, tmp_path):
    """The card's words come from the registry's recipe, so a family added there has a card."""
    checkpoint = untrained_checkpoint(run_args(name, corpus_of(name, request), tmp_path), tmp_path / f"{name}.pt")
    model_card.main([str(checkpoint), "-o", str(tmp_path / "README.md")])
    card = (tmp_path / "README.md").read_text()
    recipe = get_recipe(name)
    assert front_matter_of(card)[2:4] == [f"- {recipe.task}", f"- {name.lower()}"]
    assert f"## Model description\n\n{recipe.description} Trained with this project's `train.py -m {name}`" in card


def test_a_recognizer_checkpoint_card_loads_it_with_the_recognizer(recognizer_checkpoint, tmp_path):
    model_card.main([str(recognizer_checkpoint), "-o", str(tmp_path / "README.md")])
    assert f"Recognizer.from_checkpoint({str(recognizer_checkpoint)!r})" in (tmp_path / "README.md").read_text()


def test_a_missing_checkpoint_is_one_error_line(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "scripts.model_card", str(tmp_path / "absent.pt"), "-o",
                                str(tmp_path / "README.md")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env={"OMP_NUM_THREADS": "1", "PATH": ""})
    assert completed.returncode == 2
    assert completed.stderr.strip() == f"error: checkpoint not found: {tmp_path / 'absent.pt'}"
    assert not (tmp_path / "README.md").exists()


def test_an_unwritable_card_is_a_user_error(tacotron2_checkpoint, tmp_path):
    with pytest.raises(UserError, match="-o .*absent/README.md: cannot write the card"):
        model_card.main([str(tacotron2_checkpoint), "-o", str(tmp_path / "absent" / "README.md")])


def test_the_licence_is_the_codes_with_the_known_corpus_terms_and_a_published_files_publishers():
    trained = {"model_name": "HiFiGAN", "training": {"dataset": "/data/LJSpeech-1.1"}}
    card = model_card.model_card(trained, "hifigan.pt")
    assert "license: bsd-3-clause" in front_matter_of(card) and "- keithito/lj_speech" in front_matter_of(card)
    assert card.endswith("## Licence\n\nThe code that trained these weights is under the BSD 3-Clause licence (the "
                         "project's LICENSE). LJSpeech is in the public domain.\n")
    unknown = model_card.model_card({**trained, "training": {"dataset": "my_voice"}}, "hifigan.pt")
    assert unknown.endswith("Their training data's own terms apply to them too.\n")
    published = model_card.model_card({**trained, "generator_only": True, "source": "generator_v1",
                                       "mel_convention": "jik876"}, "generator_v1")
    assert "license: other" in front_matter_of(published)
    assert published.endswith("The weights are those of a published file (`generator_v1`); its publisher's terms "
                              "apply.\n")
