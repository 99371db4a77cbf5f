"""WaveGlow through train.py on the synthetic corpus, and the Tacotron 2 + WaveGlow pipeline through inference.py."""
import pytest
import soundfile
import torch

import inference
import train
from common.checkpoint import load_checkpoint
from common.logger import read_dllogger_file
from tests.families import run_args
from tests.training_runs import train_losses

TINY_TACOTRON2 = ["--symbols-embedding-dim", "16", "--encoder-embedding-dim", "16", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "16", "--decoder-rnn-dim", "16", "--prenet-dim", "8", "--attention-dim", "8",
                  "--attention-location-n-filters", "2", "--attention-location-kernel-size", "3",
                  "--postnet-embedding-dim", "8", "--postnet-n-convolutions", "1", "--max-decoder-steps", "30"]


def common_args(corpus, output, model, *extra, batch_size=4):
    return ["-m", model, "-o", str(output), "-d", str(corpus.dataset_dir),
            "--training-files", str(corpus.train_filelist), "--validation-files", str(corpus.val_filelist),
            "-bs", str(batch_size), "--num-workers", "0", "--quiet", "--cpu", "--seed", "3", *extra]


def waveglow_args(corpus, output, *extra):
    return run_args("WaveGlow", corpus, output, *extra)  # the tiny WaveGlow of the conformance test


@pytest.fixture(scope="module")
def trained_pair(synthetic_corpus, tmp_path_factory):
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("pair")
    train.main(waveglow_args(synthetic_corpus, folder / "waveglow", "--epochs", "1"))
    train.main(common_args(synthetic_corpus, folder / "tacotron2", "Tacotron2", "-lr", "1e-3", "--epochs", "1",
                           *TINY_TACOTRON2))
    train.main(waveglow_args(synthetic_corpus, folder / "waveglow_7k", "--epochs", "1", "--mel-fmax", "7000"))
    return folder


@pytest.mark.slow
def test_text_to_wav_with_waveglow_and_denoiser(trained_pair, tmp_path):
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Hello there.\nThe second line.\n")
    inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--cpu", "--quiet",
                    "--tacotron2", str(trained_pair / "tacotron2" / "checkpoint_Tacotron2_last.pt"),
                    "--waveglow", str(trained_pair / "waveglow" / "checkpoint_WaveGlow_last.pt"), "-s", "0.6",
                    "-d", "0.01"])
    for line in (1, 2):
        audio, rate = soundfile.read(str(tmp_path / "out" / f"audio_{line}.wav"))
        assert rate == 22050 and len(audio) % 256 == 0 and len(audio) > 0
    record = [r["data"] for r in read_dllogger_file(tmp_path / "out" / "nvlog.json") if r["step"] == [0]][0]
    assert record["vocoder_latency"] > 0 and record["vocoder_samples_per_sec"] > 0


def test_waveglow_with_other_mel_parameters_is_refused(trained_pair, tmp_path):
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Hello there.\n")
    with pytest.raises(ValueError, match=r"mel_fmax: 7000.0 \(the vocoder \(waveglow\)\) vs 8000.0"):
        inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--cpu", "--quiet",
                        "--tacotron2", str(trained_pair / "tacotron2" / "checkpoint_Tacotron2_last.pt"),
                        "--waveglow", str(trained_pair / "waveglow_7k" / "checkpoint_WaveGlow_last.pt")])


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["--bf16", "--amp"])
def test_mixed_precision_training_follows_fp32(synthetic_corpus, tmp_path, precision):
    """Autocast (bf16, or fp16 with loss scaling) through train.py: the loss curve stays near the fp32 one, nothing is
    skipped, and the checkpoint keeps fp32 weights."""
    torch.set_num_threads(1)
    train.main(waveglow_args(synthetic_corpus, tmp_path / "fp32", "--epochs", "2"))
    train.main(waveglow_args(synthetic_corpus, tmp_path / "mixed", "--epochs", "2", precision))
    fp32, mixed = train_losses(tmp_path / "fp32" / "nvlog.json", 1), train_losses(tmp_path / "mixed" / "nvlog.json", 1)
    assert mixed != fp32  # autocast did change the arithmetic...
    assert mixed == pytest.approx(fp32, abs=1e-3)  # ...and the curve follows fp32's
    checkpoint = load_checkpoint(tmp_path / "mixed" / "checkpoint_WaveGlow_last.pt")
    assert all(value.dtype == torch.float32 for value in checkpoint["state_dict"].values())
    assert checkpoint["skipped_steps"] == 0
    scale = checkpoint["scalers"]["model"].get("scale")
    assert (scale is not None and scale > 0) if precision == "--amp" else not checkpoint["scalers"]["model"]
