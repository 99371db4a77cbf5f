import argparse

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from common.arguments import audio_params_of, config_from_args
from common.training_settings import add_training_args
from common.audio import AudioParams, MelSpectrogram, load_wav, save_wav
from common.audio_crops import crop_audio_and_mel
from common.recipe import StepOutput
from nvwavenet import arg_parser
from nvwavenet.data_function import MelAudioCrops, collate_crops
from nvwavenet.loss_function import next_sample_loss
from nvwavenet.model import mu_law_encode
from nvwavenet.recipe import RECIPE

AUDIO = AudioParams(sampling_rate=8000, filter_length=256, hop_length=32, win_length=256, n_mel_channels=16,
                    mel_fmin=0.0, mel_fmax=4000.0)
SEGMENT = 512  # 16 frames


def write_corpus(root, lengths=(8000, 300, 4000)):
    """Wavs of the given lengths (chirps at different pitches) and a filelist 'list.txt' naming them."""
    (root / "wavs").mkdir()
    lines = []
    for index, length in enumerate(lengths):
        t = np.arange(length) / AUDIO.sampling_rate
        audio = 0.5 * np.sin(2 * np.pi * (200 + 100 * index) * t * (1 + t))
        save_wav(root / "wavs" / f"clip{index}.wav", audio.astype(np.float32), AUDIO.sampling_rate)
        lines.append(f"wavs/clip{index}.wav|clip number {index}")
    (root / "list.txt").write_text("\n".join(lines) + "\n")
    return root / "list.txt"


# ---------------------------------------------------------------------------------------------------------------
# Crops


def test_crop_mel_is_the_full_utterance_mel_at_the_crop():
    mel_spectrogram = MelSpectrogram(AUDIO)
    audio = torch.randn(3000, generator=torch.Generator().manual_seed(0)) * 0.3
    full = mel_spectrogram(audio)[0]
    for start in (0, 32, 320, (3000 - SEGMENT) // 32 * 32):
        crop, mel = crop_audio_and_mel(audio, start, SEGMENT, mel_spectrogram)
        assert torch.equal(crop, audio[start:start + SEGMENT])
        assert mel.shape == (16, SEGMENT // 32)
        torch.testing.assert_close(mel, full[:, start // 32:start // 32 + 16], rtol=1e-4, atol=1e-4)


def test_short_clip_is_zero_padded():
    mel_spectrogram = MelSpectrogram(AUDIO)
    audio = torch.randn(300, generator=torch.Generator().manual_seed(0)) * 0.3
    crop, mel = crop_audio_and_mel(audio, 0, SEGMENT, mel_spectrogram)
    assert crop.shape == (SEGMENT,) and torch.equal(crop[:300], audio) and torch.all(crop[300:] == 0)
    torch.testing.assert_close(mel, mel_spectrogram(crop)[0, :, :16], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="multiples of the hop 32"):
        crop_audio_and_mel(audio, 10, SEGMENT, mel_spectrogram)


def test_dataset_items_and_crops(tmp_path):
    filelist = write_corpus(tmp_path)
    dataset = MelAudioCrops(filelist, tmp_path, AUDIO, SEGMENT, quantization=16, seed=3)
    assert len(dataset) == 3
    mel, classes = dataset[0]
    assert mel.shape == (16, 16) and mel.dtype == torch.float32
    assert classes.shape == (SEGMENT,) and classes.dtype == torch.int64
    assert 0 <= classes.min() and classes.max() < 16
    audio = load_wav(tmp_path / "wavs" / "clip0.wav", AUDIO.sampling_rate)
    start = dataset.crop_start(0, audio.numel())
    assert start % 32 == 0 and start + SEGMENT <= audio.numel()
    assert torch.equal(classes, mu_law_encode(audio[start:start + SEGMENT], 16))
    torch.testing.assert_close(mel, MelSpectrogram(AUDIO)(audio)[0, :, start // 32:start // 32 + 16],
                               rtol=1e-4, atol=1e-4)
    mels, batch_classes = collate_crops([dataset[0], dataset[1]])
    assert mels.shape == (2, 16, 16) and batch_classes.shape == (2, SEGMENT)


def test_crops_are_reproducible_per_epoch_and_fixed_for_validation(tmp_path):
    filelist = write_corpus(tmp_path)
    training = MelAudioCrops(filelist, tmp_path, AUDIO, SEGMENT, quantization=16, seed=3)
    starts = []
    for epoch in range(4):
        training.set_epoch(epoch)
        starts.append(training.crop_start(0, 8000))
        assert torch.equal(training[0][1], training[0][1])
    training.set_epoch(2)
    assert training.crop_start(0, 8000) == starts[2]
    assert len(set(starts)) > 1  # 235 possible starts: four epochs all alike would mean crops never move
    validation = MelAudioCrops(filelist, tmp_path, AUDIO, SEGMENT, quantization=16, seed=3, vary_with_epoch=False)
    first = validation[0][1]
    validation.set_epoch(5)
    assert torch.equal(validation[0][1], first)


def test_data_errors_name_the_filelist_line(tmp_path):
    filelist = write_corpus(tmp_path)
    broken = tmp_path / "broken.txt"
    broken.write_text("wavs/clip0.wav|fine\nwavs/missing.wav|gone\n")
    with pytest.raises(FileNotFoundError, match=r"broken.txt:2: audio file not found"):
        MelAudioCrops(broken, tmp_path, AUDIO, SEGMENT)
    wrong_rate = tmp_path / "wrong_rate.txt"
    save_wav(tmp_path / "wavs" / "fast.wav", np.zeros(1000, dtype=np.float32), 16000)
    wrong_rate.write_text("wavs/fast.wav|too fast\n")
    with pytest.raises(ValueError, match=r"wrong_rate.txt:1: .*16000 Hz, expected 8000"):
        MelAudioCrops(wrong_rate, tmp_path, AUDIO, SEGMENT)[0]
    with pytest.raises(ValueError, match=r"--segment-length \(500\) must be a multiple of --hop-length"):
        MelAudioCrops(filelist, tmp_path, AUDIO, 500)


# ---------------------------------------------------------------------------------------------------------------
# Loss, flags, recipe


def test_loss_is_cross_entropy_of_the_true_next_class():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 16, 10, generator=generator)
    classes = torch.randint(0, 16, (2, 10), generator=generator)
    log_probabilities = torch.log_softmax(logits, dim=1)
    expected = -torch.stack([log_probabilities[b, classes[b, t], t] for b in range(2) for t in range(10)]).mean()
    torch.testing.assert_close(next_sample_loss(logits, classes), expected)
    with pytest.raises(ValueError, match="do not match"):
        next_sample_loss(logits, classes[:, :9])


def full_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_training_args(parser, RECIPE.settings)  # the shared flags: our flags must not collide with them
    arg_parser.add_args(parser)
    return parser


def parse(tmp_path, *extra: str) -> argparse.Namespace:
    return full_parser().parse_args([
        "-o", str(tmp_path / "out"), "--epochs", "1", "-lr", "1e-3", "-bs", "2", "-d", str(tmp_path),
        "--training-files", str(tmp_path / "list.txt"), "--validation-files", str(tmp_path / "list.txt"),
        "--sampling-rate", "8000", "--filter-length", "256", "--hop-length", "32", "--win-length", "256",
        "--n-mel-channels", "16", "--mel-fmax", "4000", *extra])


def test_flags_and_model_config(tmp_path):
    args = parse(tmp_path)
    config = RECIPE.model_config(args)
    assert config == {"n_mel_channels": 16, "hop_length": 32, "residual_channels": 64, "skip_channels": 256,
                      "out_channels": 256, "n_layers": 20, "max_dilation": 512, "upsampling": "transposed-conv",
                      "upsample_window": None, "embedding_tanh": True}
    assert args.segment_length == 16384
    model = RECIPE.build_model(config)
    assert model.dilations[-1] == 512 and model.upsample_window == 128
    args = parse(tmp_path, "--mu-quantization", "64", "--upsampling", "repeat", "--no-embedding-tanh")
    assert RECIPE.model_config(args)["out_channels"] == 64 and not args.embedding_tanh
    with pytest.raises(SystemExit):
        full_parser().parse_args(["--residual-chanels", "8"])
    assert RECIPE.name == "WaveNet" and RECIPE.items_unit == "samples" and RECIPE.text_processor is None


@pytest.mark.slow
def test_recipe_trains_a_tiny_model_until_it_memorises_a_clip(tmp_path):
    write_corpus(tmp_path, lengths=(SEGMENT,))
    args = parse(tmp_path, "--residual-channels", "8", "--skip-channels", "16", "--out-channels", "16",
                 "--n-layers", "4", "--max-dilation", "8", "--segment-length", str(SEGMENT))
    settings = config_from_args(RECIPE.settings, args, audio=audio_params_of(args))
    config = RECIPE.model_config(args)
    data = RECIPE.build_data(settings, config)
    assert len(data.train) == len(data.validation) == 1
    torch.manual_seed(0)
    model = RECIPE.build_model(config)
    batch = RECIPE.batch_to_device(next(iter(DataLoader(data.train, batch_size=1, collate_fn=data.collate))),
                                   torch.device("cpu"))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(150):
        output = RECIPE.compute_loss(model, batch, settings)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
        losses.append(output.loss.item())
    assert isinstance(output, StepOutput) and output.items == SEGMENT
    assert losses[0] > 2.0  # near log(16) = 2.77 or above: the untrained model knows nothing of the clip
    assert losses[-1] < 0.25 * losses[0], losses[::10]
    assert output.metrics["accuracy"] > 0.8
