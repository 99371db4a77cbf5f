"""--compile for HiFi-GAN: at inference the generator (hifigan/vocoder.py) and in training the generator and both
discriminators (hifigan/recipe.py: compile_model) compile in place, computing what the eager modules compute, with
the checkpoint's names unchanged. Slow: inductor compiles on the CPU (in training, AOTAutograd's eager backend stands
in for it)."""
import pytest
import torch

import inference
import train
from common.audio import load_wav
from common.registry import get_recipe
from common.trainer import Trainer
from tests.families import run_args
from tests.hifigan.tiny_hifigan import SHORT_CROPS, log_mel, save_our_checkpoint

pytestmark = pytest.mark.slow


def test_inference_compile_writes_the_audio_of_the_eager_generator(tmp_path):
    save_our_checkpoint(tmp_path / "h.pt")
    torch.save(log_mel(24)[0], tmp_path / "m.pt")
    written = {}
    for name, flags in (("eager", []), ("compiled", ["--compile"])):
        inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "m.pt"), "-o", str(tmp_path / name), "--hifigan",
                        str(tmp_path / "h.pt"), "--cpu", "--quiet", *flags])
        written[name] = load_wav(tmp_path / name / "m.wav", 22050)
    assert written["eager"].numel() == 24 * 256
    assert (written["compiled"] - written["eager"]).abs().max() <= 2 / 32768  # 16-bit rounding


def test_training_compile_takes_the_eager_steps(synthetic_corpus, tmp_path, monkeypatch):
    # What is tested here is the wiring (which parts compile, in place, and that training through dynamo and
    # AOTAutograd takes the eager steps), with AOTAutograd's eager backend: inductor's code generation for G, MPD
    # and MSD with their backward passes takes minutes on the CPU, and the inference test above covers inductor.
    compile_in_place = torch.nn.Module.compile
    monkeypatch.setattr(torch.nn.Module, "compile",
                        lambda module, **options: compile_in_place(module, **{**options, "backend": "aot_eager"}))
    torch.set_num_threads(1)
    losses, batch = {}, None
    for name, flags in (("eager", []), ("compiled", ["--compile"])):
        args = train.parse_run_args(run_args("HiFiGAN", synthetic_corpus, tmp_path / name, *SHORT_CROPS,
                                              "--epochs", "1", *flags))
        trainer = Trainer.from_args(get_recipe("HiFiGAN"), args)
        trainer.train_sampler.set_epoch(0)
        batch = batch if batch is not None else next(iter(trainer.train_loader))
        losses[name] = [trainer.train_step([batch])["train_loss"] for _ in range(2)]
        if name == "compiled":
            assert all(part._compiled_call_impl is not None
                       for part in (trainer.model.generator, trainer.model.mpd, trainer.model.msd))
            assert not any("_orig_mod" in key for key in trainer.model.state_dict())
    assert losses["compiled"] == pytest.approx(losses["eager"], rel=1e-4)
