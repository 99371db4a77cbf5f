"""HiFi-GAN through the shared trainer: the D-then-G step with accumulation on 2 gloo ranks equals 1 process on the
global batch, the EMA generator (started from the generator, saved, resumed, validated), fine-tuning from a
checkpoint with a learning-rate factor and NVIDIA's --fine_tuning in the base run's folder, the per-epoch decay, and
bf16. The tiny flags are tests/families.py's; tests/test_families.py covers --dry-run, pinned losses with exact
resume, and 2 ranks of batch B vs 1 of 2B. Also: fine-tuning from NVIDIA's files, --input-mels-dir through train.py,
and the validation report and sums."""
import argparse
import shutil

import pytest
import torch

import train
from common.arguments import audio_params_of, config_from_args
from common.audio import AudioParams, MelSpectrogram, load_wav
from common.checkpoint import load_checkpoint
from common.errors import UserError, exit_on_user_error
from common.filelist import read_filelist
from common.logger import read_dllogger_file
from common.trainer import Trainer
from hifigan.arg_parser import GENERATOR_KEYS
from hifigan.checkpoints import discriminator_state_to_reference, generator_state_to_reference
from hifigan.model import HiFiGAN
from hifigan.loss_function import HiFiGANLoss
from hifigan.recipe import RECIPE, ExponentialDecay, build_optimizers, frozen, judge, judge_for_generator
from tests.families import FAMILIES, run_args, train_on_two_processes
from tests.hifigan.tiny_hifigan import SHORT_CROPS, TINY_GENERATOR
from tests.training_runs import train_losses


def hifigan_args(corpus, output, *extra: str, batch_size: int | None = None) -> list[str]:
    return run_args("HiFiGAN", corpus, output, *SHORT_CROPS, *extra, batch_size=batch_size)


def parsed(argv: list[str]) -> argparse.Namespace:
    return train.parse_run_args(argv)


def records(log_file, key: str) -> list[dict]:
    return [r["data"] for r in read_dllogger_file(log_file) if key in r["data"]]


def test_judging_the_real_audio_without_autograd_gives_the_generator_the_same_gradients():
    """The generator's phase, as the default runs it (the real audio through no autograd) and as the reference does
    (one pass over real and generated audio): the same losses and generator gradients to rounding, and no graph
    kept for the real half."""
    torch.manual_seed(0)
    start = HiFiGAN(TINY_GENERATOR, discriminator_width_divisor=8).state_dict()
    mel, real = torch.randn(2, 80, 3), torch.rand(2, 1, 768) * 1.6 - 0.8
    loss = HiFiGANLoss(AudioParams())
    results = {}
    for judging in (judge, judge_for_generator):
        model = HiFiGAN(TINY_GENERATOR, discriminator_width_divisor=8)
        model.load_state_dict(start)  # spectral norm's power-iteration vectors too: each call advances them
        with frozen(model.mpd, model.msd):
            fake = model.generator(mel)
            real_outputs, fake_outputs = judging((model.mpd, model.msd), real, fake)
            losses = loss.generator(real_outputs, fake_outputs, real, fake)
            losses.total.backward()
        kept = [m.requires_grad for _, maps in real_outputs for layers in maps for m in layers]
        results[judging] = (losses, [p.grad.clone() for p in model.generator.parameters()], kept)
        assert all(p.grad is None for p in (*model.mpd.parameters(), *model.msd.parameters()))
    (one_pass, one_pass_grads, one_pass_kept), (split, split_grads, split_kept) = results.values()
    assert all(one_pass_kept) and not any(split_kept)
    for name in ("total", "adversarial", "feature_matching", "mel"):
        assert float(getattr(split, name).detach()) == pytest.approx(float(getattr(one_pass, name).detach()),
                                                                    rel=1e-5), name
    for ours, reference in zip(split_grads, one_pass_grads):
        torch.testing.assert_close(ours, reference, rtol=1e-4, atol=1e-6 * float(reference.abs().max()))


@pytest.mark.slow
def test_two_ranks_accumulating_equal_one_process_on_the_global_batch(synthetic_corpus, tmp_path):
    """2 ranks x batch 1 x accumulation 2 take the steps of 1 process x batch 2 x accumulation 2: the
    discriminators' all-reduce on the last micro-batch, the generator recomputed in its phase, nothing reduced
    twice (the per-step losses and the final weights agree)."""
    extra = ("--grad-accumulation", "2", "--max-updates", "3")
    ddp = tmp_path / "ddp"
    ranks = train_on_two_processes(hifigan_args(synthetic_corpus, ddp, *extra, batch_size=1))
    for key in ranks[0]:
        assert torch.equal(ranks[0][key], ranks[1][key]), f"{key} differs between the ranks"
    torch.set_num_threads(1)
    single = tmp_path / "single"
    train.main(hifigan_args(synthetic_corpus, single, *extra, batch_size=2))
    ddp_records, single_records = records(ddp / "nvlog.json", "train_loss"), records(single / "nvlog.json",
                                                                                   "train_loss")
    assert len(ddp_records) == len(single_records) == 3
    # Adam hides a gradient of the wrong scale in the weights, so the gradient norms are compared too. A wrong scale
    # is off by a factor of the accumulation (2); rounding is not: 1e-3, as under SSE4.1 kernels
    # (ONEDNN_MAX_CPU_ISA=SSE41 ATEN_CPU_CAPABILITY=default) the third step's generator norm moved 1.9e-4.
    for name in ("train_loss", "train_discriminator_loss", "train_mel_loss", "train_feature_matching_loss",
                 "grad_norm_discriminator", "grad_norm_generator"):
        assert [r[name] for r in ddp_records] == pytest.approx([r[name] for r in single_records], rel=1e-3), name
    final = load_checkpoint(single / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    for key, value in ranks[0].items():
        # Per tensor, not per element: where a gradient is ~0, Adam's normalised step turns rounding into a whole step.
        # 2e-3: conv_pre drifted 1.4e-4 on an AVX-512 CPU and 5.7e-4 under SSE4.1 kernels (its weight); a gradient
        # lost or reduced twice moves a tensor by a whole step's size.
        assert torch.linalg.vector_norm(value - final[key]) <= 2e-3 * torch.linalg.vector_norm(final[key]), key


@pytest.mark.slow
def test_the_ema_starts_as_the_generator_averages_its_steps_and_resumes(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    trainer = Trainer.from_args(RECIPE, parsed(hifigan_args(synthetic_corpus, tmp_path / "one", "--max-updates", "1",
                                              "--ema-decay", "0.75")))
    model: HiFiGAN = trainer.model
    start = {key: value.clone() for key, value in model.generator.state_dict().items()}
    for key, value in model.generator_ema.state_dict().items():
        assert torch.equal(value, start[key]), key  # not a random draw of its own (the reference's EMA)
    assert not any(p.requires_grad for p in model.generator_ema.parameters())
    trainer.train()
    live, average = model.generator.state_dict(), model.generator_ema.state_dict()
    assert any(not torch.equal(live[key], average[key]) for key in live)
    for key in live:  # one step: 0.75 x the start + 0.25 x the new weights
        torch.testing.assert_close(average[key], 0.75 * start[key] + 0.25 * live[key])
    validation = records(tmp_path / "one" / "nvlog.json", "val_ema_mel_l1")[-1]
    assert validation["val_ema_mel_loss"] == pytest.approx(45 * validation["val_ema_mel_l1"])
    assert validation["val_mel_loss"] == pytest.approx(45 * validation["val_mel_l1"])
    assert validation["val_loss"] == pytest.approx(validation["val_mel_loss"], rel=1e-6)

    # Saved and restored: stopping after 1 update and resuming to 3 gives the EMA of 3 straight updates.
    train.main(hifigan_args(synthetic_corpus, tmp_path / "straight", "--max-updates", "3"))
    train.main(hifigan_args(synthetic_corpus, tmp_path / "stopped", "--max-updates", "1"))
    train.main(hifigan_args(synthetic_corpus, tmp_path / "stopped", "--max-updates", "3",
                        "--resume-from-last"))
    straight = load_checkpoint(tmp_path / "straight" / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    resumed = load_checkpoint(tmp_path / "stopped" / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    assert any(key.startswith("generator_ema.") for key in straight)
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key
    assert train_losses(tmp_path / "stopped" / "nvlog.json", 2) == train_losses(tmp_path / "straight" / "nvlog.json",
                                                                                2)


@pytest.mark.slow
def test_fine_tuning_starts_from_the_checkpoints_weights_at_a_multiple_of_the_rate(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(hifigan_args(synthetic_corpus, tmp_path / "base", "--max-updates", "1"))
    base = load_checkpoint(tmp_path / "base" / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "tuned", "--max-updates", "1",
                           "--fine-tune-from", str(tmp_path / "base" / "checkpoint_HiFiGAN_last.pt"),
                           "--fine-tune-lr-factor", "3"))
    trainer = Trainer.from_args(RECIPE, args)
    state = trainer.model.state_dict()
    for key, value in base.items():
        if not key.startswith("generator_ema."):
            assert torch.equal(state[key], value), key
    for key, value in trainer.model.generator.state_dict().items():  # the average starts at the tuned-from weights
        assert torch.equal(state[f"generator_ema.{key}"], value)
    for optimizer in trainer.optimizers.values():
        assert [group["initial_lr"] for group in optimizer.param_groups] == [pytest.approx(3 * args.learning_rate)]

    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "wrong", "--max-updates", "1",
                           "--fine-tune-from", str(tmp_path / "base" / "checkpoint_HiFiGAN_last.pt"),
                           "--upsample-initial-channel", "32"))
    with pytest.raises(ValueError, match=r"--fine-tune-from .*checkpoint_HiFiGAN_last.pt do not fit the model"):
        Trainer.from_args(RECIPE, args)


@pytest.mark.slow
def test_fine_tuning_in_the_base_runs_folder_goes_on_at_a_multiple_of_the_rate_and_then_resumes(synthetic_corpus,
                                                                                                 tmp_path):
    """NVIDIA's --fine_tuning: the base run's command line and folder, plus --input-mels-dir. The first time, the
    base checkpoint's weights, optimizer moments, epoch and step go on with both learning rates x 3; retention
    never deletes the base checkpoint; the next time, the fine-tuning run resumes exactly (no second x 3)."""
    torch.set_num_threads(1)
    mels = write_own_mels(synthetic_corpus, tmp_path / "mels")
    keep_one = ("--keep-last-checkpoints", "1")
    train.main(hifigan_args(synthetic_corpus, tmp_path / "base", "--max-updates", "1", *keep_one))
    base_file = (tmp_path / "base" / "checkpoint_HiFiGAN_last.pt").resolve()
    base = load_checkpoint(base_file)
    for run in ("straight", "stopped"):
        shutil.copytree(tmp_path / "base", tmp_path / run, symlinks=True)

    def fine_tuning(folder, max_updates: int) -> list[str]:
        return hifigan_args(synthetic_corpus, folder, "--max-updates", str(max_updates), *keep_one,
                            "--save-interval-updates", "1", "--fine_tuning", "--input_mels_dir", str(mels),
                            "--fine_tune_lr_factor", "3")

    with pytest.raises(UserError, match="nothing left to fine-tune; raise --epochs or --max-updates"):
        Trainer.from_args(RECIPE, parsed(fine_tuning(tmp_path / "base", 1)))

    trainer = Trainer.from_args(RECIPE, parsed(fine_tuning(tmp_path / "straight", 4)))
    assert (trainer.epoch, trainer.iteration, trainer.batches_done_in_epoch, trainer.fine_tune_epoch_start) == (
        base["epoch"], base["iteration"], base["batches_done_in_epoch"], base["epoch"]) == (0, 1, 1, 0)
    state = trainer.model.state_dict()
    for key, value in base["state_dict"].items():
        assert torch.equal(state[key], value), key
    for name, optimizer in trainer.optimizers.items():
        saved, resumed = base["optimizers"][name], optimizer.state_dict()
        assert [group["initial_lr"] for group in resumed["param_groups"]] == [
            pytest.approx(3 * group["initial_lr"]) for group in saved["param_groups"]]
        assert all(torch.equal(resumed["state"][index]["exp_avg"], moments["exp_avg"])
                   for index, moments in saved["state"].items())
    trainer.train()
    assert load_checkpoint(tmp_path / "straight" / "checkpoint_HiFiGAN_last.pt")["fine_tune_epoch_start"] == 0
    # Three fine-tuning checkpoints written, the newest kept, and the base checkpoint untouched.
    assert sorted(path.name for path in (tmp_path / "straight").glob("checkpoint_HiFiGAN_*.pt")) == [
        "checkpoint_HiFiGAN_1_1.pt", "checkpoint_HiFiGAN_1_4.pt", "checkpoint_HiFiGAN_last.pt"]
    assert base_file.read_bytes() == (tmp_path / "straight" / base_file.name).read_bytes()

    train.main(fine_tuning(tmp_path / "stopped", 2))
    train.main(fine_tuning(tmp_path / "stopped", 4))
    straight_log, stopped_log = tmp_path / "straight" / "nvlog.json", tmp_path / "stopped" / "nvlog.json"
    assert train_losses(stopped_log, 2) == train_losses(straight_log, 2)
    rate = FAMILIES["HiFiGAN"].learning_rate
    assert [r["lr"] for r in records(stopped_log, "lr")] == pytest.approx([rate, 3 * rate, 3 * rate, 3 * rate])
    straight = load_checkpoint(tmp_path / "straight" / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    resumed = load_checkpoint(tmp_path / "stopped" / "checkpoint_HiFiGAN_last.pt")["state_dict"]
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key


@pytest.mark.parametrize("extra, message", [
    ((), "--fine-tuning trains on an acoustic model's own mels: give --input-mels-dir DIR"),
    (("--input-mels-dir", "{mels}", "--fine-tune-from", "{mels}/base.pt"),
     "--fine-tuning goes on from the checkpoint in -o/--output, --fine-tune-from starts from another one"),
    (("--input-mels-dir", "{mels}"), "--fine-tuning goes on from the base run's checkpoint in -o/--output, and "
                                     "{output} has no checkpoint_HiFiGAN_last.pt"),
])
def test_fine_tuning_without_mels_or_without_a_base_run_is_one_error_line(extra, message, synthetic_corpus, tmp_path,
                                                                          capsys):
    mels = write_own_mels(synthetic_corpus, tmp_path / "mels")
    output = tmp_path / "empty"
    extra = [value.format(mels=mels) for value in extra]
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main(hifigan_args(synthetic_corpus, output, "--max-updates", "1",
                                                           "--fine_tuning", *extra)))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {message.format(output=output)}"), lines


def test_two_adamw_with_the_references_betas_and_decay_and_an_exponential_rate_per_epoch(synthetic_corpus, tmp_path):
    args = parsed(hifigan_args(synthetic_corpus, tmp_path, "--epochs", "1"))
    assert args.weight_decay == 0.01 and args.grad_clip_thresh == 0 and args.lr_decay == 0.9998
    model = RECIPE.build_model(RECIPE.model_config(args))
    optimizers = build_optimizers(model, args)
    assert sorted(optimizers) == ["discriminator", "generator"]
    for name, parts in (("generator", [model.generator]), ("discriminator", [model.mpd, model.msd])):
        optimizer = optimizers[name]
        assert isinstance(optimizer, torch.optim.AdamW)
        group = optimizer.param_groups[0]
        assert group["betas"] == (0.8, 0.99) and group["weight_decay"] == 0.01 and group["lr"] == args.learning_rate
        assert group["fused"] is True  # the default (--no-fused-optimizer: torch's loop)
        assert {id(p) for p in group["params"]} == {id(p) for part in parts for p in part.parameters()}
    schedule = ExponentialDecay(0.9)
    assert [schedule.multiplier(epoch, step=123) for epoch in range(3)] == pytest.approx([1.0, 0.9, 0.81])


@pytest.mark.slow
def test_the_learning_rate_decays_once_per_epoch(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(hifigan_args(synthetic_corpus, tmp_path, "--epochs", "2", "--lr-decay", "0.5", "-bs", "8"))
    rates = [r["lr"] for r in records(tmp_path / "nvlog.json", "lr")]
    rate = FAMILIES["HiFiGAN"].learning_rate
    assert rates == pytest.approx([rate, rate, rate / 2, rate / 2])  # 22 items: 2 batches of 8 per epoch


@pytest.mark.slow
def test_bf16_trains_finite_steps(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(hifigan_args(synthetic_corpus, tmp_path, "--max-updates", "1", "--bf16", batch_size=2))
    (record,) = records(tmp_path / "nvlog.json", "train_discriminator_loss")
    assert all(torch.isfinite(torch.tensor(value)) for name, value in record.items() if "loss" in name)
    assert records(tmp_path / "nvlog.json", "val_mel_l1")


def test_fine_tuning_from_nvidias_generator_and_discriminator_files(synthetic_corpus, tmp_path):
    """Our weights written in NVIDIA's layout (nested resblocks, weight_g/weight_v, module. prefixes, spectral-norm
    weight_orig/_u/_v) are where a fine-tune starts."""
    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "run", "--max-updates", "1"))
    source = RECIPE.build_model(RECIPE.model_config(args))
    generator_config = RECIPE.model_config(args)["generator"]
    torch.save({"generator": {f"module.{k}": v for k, v in
                              generator_state_to_reference(source.generator.state_dict(), num_kernels=1).items()},
                "config": {key: generator_config[key] for key in GENERATOR_KEYS}},
               tmp_path / "hifigan_gen_checkpoint_6500.pt")
    torch.save({"mpd": discriminator_state_to_reference(source.mpd.state_dict()),
                "msd": discriminator_state_to_reference(source.msd.state_dict())},
               tmp_path / "hifigan_discrim_checkpoint_6500.pt")
    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "run", "--max-updates", "1",
                               "--fine-tune-from", str(tmp_path / "hifigan_gen_checkpoint_6500.pt"),
                               "--fine-tune-discriminator-from", str(tmp_path / "hifigan_discrim_checkpoint_6500.pt")))
    trainer = Trainer.from_args(RECIPE, args)
    tuned = trainer.model.state_dict()
    for key, value in source.state_dict().items():
        if not key.startswith("generator_ema."):
            assert torch.equal(tuned[key], value), key

    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "run", "--max-updates", "1", "--fine-tune-discriminator-from",
                               str(tmp_path / "hifigan_discrim_checkpoint_6500.pt")))
    with pytest.raises(ValueError, match=r"--fine-tune-discriminator-from needs --fine-tune-from"):
        Trainer.from_args(RECIPE, args)


def write_own_mels(corpus, folder):
    """An --input-mels-dir of every training and validation wav's own mel (which trains as the computed mels do)."""
    folder.mkdir()
    mel_spectrogram = MelSpectrogram(AudioParams())
    for filelist in (corpus.train_filelist, corpus.val_filelist):
        for entry in read_filelist(filelist, corpus.dataset_dir, need_text=False):
            torch.save(mel_spectrogram(load_wav(entry.path, 22050))[0], folder / f"{entry.path.stem}.pt")
    return folder


@pytest.mark.slow
def test_input_mels_dir_trains_on_the_given_mels(synthetic_corpus, tmp_path):
    """GTA mels that are the audio's own mels train exactly as the computed ones; the audio (and so the loss mel)
    is the wav's either way."""
    torch.set_num_threads(1)
    mels = write_own_mels(synthetic_corpus, tmp_path / "mels")
    train.main(hifigan_args(synthetic_corpus, tmp_path / "computed", "--max-updates", "2"))
    train.main(hifigan_args(synthetic_corpus, tmp_path / "given", "--max-updates", "2", "--input-mels-dir", str(mels)))
    computed, given = records(tmp_path / "computed" / "nvlog.json", "train_loss"), records(
        tmp_path / "given" / "nvlog.json", "train_loss")
    assert [r["train_loss"] for r in given] == pytest.approx([r["train_loss"] for r in computed], rel=1e-4)


def test_the_validation_report_has_the_audio_and_the_mels(synthetic_corpus, tmp_path):
    args = parsed(hifigan_args(synthetic_corpus, tmp_path, "--max-updates", "1", "--ema-decay", "0.5"))
    settings = config_from_args(RECIPE.settings, args, audio=audio_params_of(args))
    model = RECIPE.build_model(RECIPE.model_config(args)).eval()
    splits = RECIPE.build_data(settings, RECIPE.model_config(args))
    batch = splits.collate([splits.validation[0]])
    with torch.no_grad():
        report = RECIPE.validation_report(model, batch, settings)
        sums = RECIPE.compute_loss(model, batch, settings).sums
    assert sorted(report["audio"]) == ["generated", "generated_ema", "ground_truth"]
    assert report["audio"]["generated"].shape == batch.audio[0].shape
    assert sorted(report["images"]) == ["mel_generated", "mel_input"]
    assert report["images"]["mel_input"].ndim == 3 and report["images"]["mel_input"].shape[2] == 3
    assert sums["mel_elements"] == sums["ema_mel_elements"] == 80 * (1 + batch.audio.shape[1] // 256)
    metrics = RECIPE.validation_metrics({name: 2 * value for name, value in sums.items()})  # two ranks' sums
    assert metrics["val_mel_l1"] == pytest.approx(sums["mel_abs_error"] / sums["mel_elements"])
    assert metrics["val_ema_mel_loss"] == pytest.approx(45 * sums["ema_mel_abs_error"] / sums["ema_mel_elements"])


def write_nvidia_training_files(model: HiFiGAN, checkpoint: dict, folder, generator_config: dict, epoch: int,
                                iterations: int, optimizers: bool = True):
    """A trained model and its optimizer states in NVIDIA's two training files (their key names and layout)."""
    folder.mkdir(parents=True, exist_ok=True)
    train_state = {"epoch": epoch, "iters_all": iterations}
    torch.save({"generator": generator_state_to_reference(model.generator.state_dict(), num_kernels=1),
                "gen_ema": None, "config": {key: generator_config[key] for key in GENERATOR_KEYS},
                "train_state": train_state}, folder / f"hifigan_gen_checkpoint_{epoch}.pt")
    discriminators = {"mpd": discriminator_state_to_reference(model.mpd.state_dict()),
                      "msd": discriminator_state_to_reference(model.msd.state_dict()),
                      "train_state": train_state, "steps": iterations, "epoch": epoch}
    if optimizers:
        discriminators.update(optim_g=checkpoint["optimizers"]["generator"],
                              optim_d=checkpoint["optimizers"]["discriminator"], scaler_g={}, scaler_d={})
    torch.save(discriminators, folder / f"hifigan_discrim_checkpoint_{epoch}.pt")
    return folder / f"hifigan_gen_checkpoint_{epoch}.pt"


@pytest.mark.slow
def test_nvidias_training_files_resume_with_their_weights_optimizer_states_epoch_and_step(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(hifigan_args(synthetic_corpus, tmp_path / "ours", "--max-updates", "2"))
    ours = load_checkpoint(tmp_path / "ours" / "checkpoint_HiFiGAN_last.pt")
    model = RECIPE.build_model(ours["model_config"])
    model.load_state_dict(ours["state_dict"])
    generator_file = write_nvidia_training_files(model, ours, tmp_path / "nvidia", ours["model_config"]["generator"],
                                                 epoch=5, iterations=40)

    args = parsed(hifigan_args(synthetic_corpus, tmp_path / "resumed", "--epochs", "6", "--checkpoint-path",
                               str(generator_file)))
    trainer = Trainer.from_args(RECIPE, args)
    assert (trainer.epoch, trainer.iteration, trainer.batches_done_in_epoch) == (5, 40, 0)
    for key, value in model.state_dict().items():
        if not key.startswith("generator_ema."):
            assert torch.equal(trainer.model.state_dict()[key], value), key
    for name in ("generator", "discriminator"):
        saved = ours["optimizers"][name]["state"]
        resumed = trainer.optimizers[name].state_dict()["state"]
        assert sorted(resumed) == sorted(saved)
        assert all(torch.equal(resumed[index]["exp_avg"], saved[index]["exp_avg"]) for index in saved)
    trainer.train()
    assert trainer.epoch == 6 and trainer.iteration > 40
    assert all(torch.isfinite(torch.tensor(loss)) for loss in train_losses(tmp_path / "resumed" / "nvlog.json", 2))


@pytest.mark.slow
def test_reference_training_files_that_cannot_resume_say_why(synthetic_corpus, tmp_path):
    train.main(hifigan_args(synthetic_corpus, tmp_path / "ours", "--max-updates", "1"))
    ours = load_checkpoint(tmp_path / "ours" / "checkpoint_HiFiGAN_last.pt")
    model = RECIPE.build_model(ours["model_config"])
    config = ours["model_config"]["generator"]

    def resume(path):
        Trainer.from_args(RECIPE, parsed(hifigan_args(synthetic_corpus, tmp_path / "x", "--epochs", "9",
                                            "--checkpoint-path", str(path))))

    weights_only = write_nvidia_training_files(model, ours, tmp_path / "weights", config, 3, 9, optimizers=False)
    with pytest.raises(ValueError, match="holds no optimizer states .* --fine-tune-from"):
        resume(weights_only)
    with pytest.raises(ValueError, match="is a discriminator file; give --checkpoint-path the generator file"):
        resume(tmp_path / "weights" / "hifigan_discrim_checkpoint_3.pt")
    (tmp_path / "weights" / "hifigan_discrim_checkpoint_3.pt").unlink()
    with pytest.raises(ValueError, match="needs its discriminator file .*hifigan_discrim_checkpoint_3.pt"):
        resume(weights_only)
