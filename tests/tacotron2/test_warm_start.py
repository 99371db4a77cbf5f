"""--warm-start CKPT [--ignore-layers NAME ...] (common/training_state.py: warm_start): a new run of Tacotron 2 or
WaveGlow from trained weights, with the ones named, or of another shape, left as initialised, and a fresh optimizer at
step 0; and the mistakes it refuses with one error line."""
import copy

import pytest
import torch

import train
from common.checkpoint import model_state_from_checkpoint
from common.errors import exit_on_user_error
from common.layers import remove_weight_norm
from common.registry import get_recipe
from common.text.symbols import SYMBOLS
from common.trainer import Trainer
from tests.families import run_args
from tests.training_runs import train_losses, untrained_checkpoint

pytestmark = pytest.mark.slow  # most tests train the base model first (about 10 s)


@pytest.fixture(scope="module")
def trained_tacotron2(synthetic_corpus, tmp_path_factory):
    """The conformance test's tiny Tacotron 2 after two epochs on the synthetic corpus: its last checkpoint."""
    torch.set_num_threads(1)
    output = tmp_path_factory.mktemp("warm_start_base")
    train.main(run_args("Tacotron2", synthetic_corpus, output, "--epochs", "2"))
    return output / "checkpoint_Tacotron2_last.pt"


def built_trainer(argv):
    """The Trainer that train.py's argv would run, built (weights loaded) but not run."""
    args = train.parse_run_args([str(token) for token in argv])
    trainer = Trainer.from_args(get_recipe(args.model_name), args)
    trainer.logger.close()
    return trainer


def saved_weights(path):
    return model_state_from_checkpoint(torch.load(path, map_location="cpu", weights_only=True))


def differing_weights(model, weights):
    """Names of the model's tensors that differ from `weights` (or are missing there)."""
    return sorted(name for name, value in model.state_dict().items()
                  if name not in weights or value.shape != weights[name].shape or not torch.equal(value, weights[name]))


def test_warm_start_loads_every_weight_but_the_ignored_ones_with_a_fresh_optimizer(
        trained_tacotron2, synthetic_corpus, tmp_path, capsys):
    trainer = built_trainer(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                     "--warm-start", trained_tacotron2, "--ignore-layers", "embedding",
                                     "decoder.gate_layer.linear_layer.bias"))
    assert differing_weights(trainer.model, saved_weights(trained_tacotron2)) == [
        "decoder.gate_layer.linear_layer.bias", "embedding.weight"]
    assert (trainer.epoch, trainer.iteration, trainer.batches_done_in_epoch) == (0, 0, 0)
    optimizer = trainer.optimizers["model"]
    assert optimizer.state_dict()["state"] == {}  # no Adam moments: fresh
    assert optimizer.param_groups[0]["lr"] == pytest.approx(2e-3)
    printed = capsys.readouterr().out
    assert "fresh optimizer at step 0; 2 weight(s) not loaded" in printed
    assert "  embedding.weight (148, 32): --ignore-layers" in printed
    assert "  decoder.gate_layer.linear_layer.bias (1,): --ignore-layers" in printed


def test_another_vocabulary_warm_starts_with_the_embedding_left_out_by_shape(
        trained_tacotron2, synthetic_corpus, tmp_path, capsys):
    trainer = built_trainer(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                     "--warm-start", trained_tacotron2, "--symbols-from-filelist"))
    n_symbols = trainer.text.n_symbols
    assert n_symbols < 148 and trainer.model_config["n_symbols"] == n_symbols
    assert differing_weights(trainer.model, saved_weights(trained_tacotron2)) == ["embedding.weight"]
    assert f"  embedding.weight: (148, 32) in the checkpoint, ({n_symbols}, 32) in this model" in (
        capsys.readouterr().out)


def test_a_table_of_the_same_size_but_other_symbols_is_warned_about(trained_tacotron2, synthetic_corpus, tmp_path,
                                                                    capsys):
    reordered = list(SYMBOLS)
    reordered[12], reordered[38] = reordered[38], reordered[12]  # 'A' and 'a' change places
    table = tmp_path / "symbols.txt"
    table.write_text("".join(f"{symbol}\n" for symbol in reordered))
    built_trainer(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                           "--warm-start", trained_tacotron2, "--symbols-file", table))
    assert "was trained with another symbol table of the same size (148 symbols)" in capsys.readouterr().err
    built_trainer(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                           "--warm-start", trained_tacotron2))
    assert "symbol table" not in capsys.readouterr().err


def test_a_warm_started_run_begins_with_a_lower_loss_than_one_from_scratch(trained_tacotron2, synthetic_corpus,
                                                                          tmp_path):
    torch.set_num_threads(1)
    train.main(run_args("Tacotron2", synthetic_corpus, tmp_path / "scratch", "--max-updates", "1"))
    train.main(run_args("Tacotron2", synthetic_corpus, tmp_path / "warm", "--max-updates", "1",
                        "--warm-start", str(trained_tacotron2)))
    [scratch] = train_losses(tmp_path / "scratch" / "nvlog.json", 2)
    [warm] = train_losses(tmp_path / "warm" / "nvlog.json", 2)
    assert warm < 0.95 * scratch, (warm, scratch)


def test_waveglow_warm_starts_from_nvidias_published_layout(nvidia_checkpoint, synthetic_corpus, tmp_path):
    path, nvidia_state_dict = nvidia_checkpoint
    trainer = built_trainer(run_args("WaveGlow", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                     "--wn-channels", "8", "--warm-start", path))
    assert differing_weights(trainer.model, saved_weights(path)) == []
    assert trainer.iteration == 0 and trainer.optimizers["model"].state_dict()["state"] == {}


def test_waveglow_warm_starts_from_weights_saved_with_weight_norm_folded_away(nvidia_checkpoint, synthetic_corpus,
                                                                            tmp_path, capsys):
    """NVIDIA's inference removes weight norm and users save that state dict: each folded weight is split back into
    weight norm's magnitude and direction, so the warm-started model computes the weights of the file."""
    path, _ = nvidia_checkpoint
    original = built_trainer(run_args("WaveGlow", synthetic_corpus, tmp_path / "a", "--epochs", "1",
                                      "--wn-channels", "8", "--warm-start", path)).model
    folded_model = copy.deepcopy(original)
    remove_weight_norm(folded_model)
    folded = tmp_path / "folded.pt"
    torch.save({"state_dict": folded_model.state_dict()}, folded)
    capsys.readouterr()
    trainer = built_trainer(run_args("WaveGlow", synthetic_corpus, tmp_path / "b", "--epochs", "1",
                                     "--wn-channels", "8", "--warm-start", folded))
    assert "0 weight(s) not loaded" in capsys.readouterr().out
    assert "WN.0.start.parametrizations.weight.original0" in trainer.model.state_dict()  # still trains weight norm
    mel = torch.randn(1, 80, 6, generator=torch.Generator().manual_seed(5))
    noise = torch.randn(1, 8, 6 * 256 // 8, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        expected = folded_model.infer(mel, sigma=0.6, noise=noise)
        assert torch.allclose(trainer.model.infer(mel, sigma=0.6, noise=noise), expected, atol=1e-5)


def test_waveglow_warm_starts_from_ours_and_leaves_out_weights_of_another_width(synthetic_corpus, tmp_path, capsys):
    narrow = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path, "--wn-channels", "8"),
                                  tmp_path / "narrow.pt")
    trainer = built_trainer(run_args("WaveGlow", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                     "--warm-start", narrow))
    differing = differing_weights(trainer.model, saved_weights(narrow))
    assert differing and all(name.startswith("WN.") for name in differing)  # the coupling networks' widths
    assert "upsample.weight" not in differing and "convinv.0.conv.weight" not in differing
    printed = capsys.readouterr().out
    assert f"{len(differing)} weight(s) not loaded" in printed
    assert "in the checkpoint, (16," in printed


def test_a_requeued_job_with_resume_from_last_continues_its_own_run_instead_of_warm_starting_again(
        trained_tacotron2, synthetic_corpus, tmp_path, capsys):
    """The same command line twice, as a preemptible job is requeued: the first warm-starts (the folder has no
    checkpoint), the second resumes the folder's last checkpoint, optimizer and step included."""
    argv = run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1", "--warm-start", trained_tacotron2,
                    "--resume-from-last")
    torch.set_num_threads(1)
    train.main([str(token) for token in argv])
    first = capsys.readouterr().out
    assert "no " in first and f"starting from --warm-start {trained_tacotron2}" in first
    assert "warm start from" in first
    saved = torch.load(tmp_path / "run" / "checkpoint_Tacotron2_last.pt", map_location="cpu", weights_only=True)

    trainer = built_trainer(argv)
    assert "warm start from" not in capsys.readouterr().out
    assert trainer.iteration == saved["iteration"] > 0 and trainer.epoch == 1
    assert optimizer_steps(trainer) == saved["iteration"]  # the run's Adam moments, not a fresh optimizer
    assert differing_weights(trainer.model, saved_weights(tmp_path / "run" / "checkpoint_Tacotron2_last.pt")) == []


def optimizer_steps(trainer) -> int:
    state = trainer.optimizers["model"].state_dict()["state"]
    return int(next(iter(state.values()))["step"])


def user_error_line(argv, capsys):
    """The one `error:` line train.py ends with for argv (exit status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main([str(token) for token in argv]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize("mistake, expected", [
    (("--checkpoint-path", "{base}"), "--warm-start starts a new run from a checkpoint's weights, --checkpoint-path "
                                      "continues a run"),
    (("--ignore-layers", "embeding"), "--ignore-layers embeding: no weight of the model or of --warm-start"),
    (("--warm-start", "{waveglow}"), "is a WaveGlow checkpoint, expected Tacotron2"),
    (("--warm-start", "{nvidia_waveglow}"), "none of the weights in --warm-start"),
])
def test_warm_start_mistakes_end_in_one_error_line(mistake, expected, trained_tacotron2, nvidia_checkpoint,
                                                   synthetic_corpus, tmp_path, capsys):
    files = {"base": trained_tacotron2, "nvidia_waveglow": nvidia_checkpoint[0],
             "waveglow": untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "wg.pt")}
    extra = [token.format(**files) for token in mistake]
    if "--warm-start" not in extra:
        extra = ["--warm-start", str(trained_tacotron2), *extra]
    line = user_error_line(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1", *extra), capsys)
    assert expected in line


def test_ignore_layers_without_warm_start_and_a_family_without_it_are_errors(trained_tacotron2, synthetic_corpus,
                                                                            tmp_path, capsys):
    line = user_error_line(run_args("Tacotron2", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                    "--ignore-layers", "embedding"), capsys)
    assert "--ignore-layers names weights that --warm-start leaves out; give --warm-start CKPT too" in line
    line = user_error_line(run_args("HiFiGAN", synthetic_corpus, tmp_path / "run", "--epochs", "1",
                                    "--warm-start", trained_tacotron2), capsys)
    assert "-m HiFiGAN does not take --warm-start" in line
