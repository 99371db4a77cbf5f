
import numpy as np
import pytest
import torch

from common.audio import AudioParams, MelSpectrogram, load_wav, save_wav
from train import parse_run_args
from waveglow.arg_parser import WaveGlowTrainingSettings
from waveglow.data_function import MelAudioDataset, collate_mel_audio
from waveglow.recipe import RECIPE

PARAMS = AudioParams()
SEGMENT = 2048


@pytest.fixture()
def corpus(tmp_path):
    """Three clips of 1.0 s, 0.5 s and 0.05 s (shorter than a segment) and a filelist in LJSpeech layout."""
    (tmp_path / "wavs").mkdir()
    rng = np.random.default_rng(0)
    lines = []
    for name, seconds in (("long", 1.0), ("medium", 0.5), ("short", 0.05)):
        samples = int(seconds * PARAMS.sampling_rate)
        save_wav(tmp_path / "wavs" / f"{name}.wav", 0.3 * rng.standard_normal(samples).clip(-3, 3) / 3,
                 PARAMS.sampling_rate)
        lines.append(f"wavs/{name}.wav|Some text, ignored.")
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def dataset(corpus, **kwargs) -> MelAudioDataset:
    return MelAudioDataset(corpus / "list.txt", corpus, PARAMS, SEGMENT, seed=3, **kwargs)


def find_crop(clip: torch.Tensor, crop: torch.Tensor) -> int:
    starts = [s for s in range(clip.numel() - crop.numel() + 1) if torch.equal(clip[s:s + crop.numel()], crop)]
    assert len(starts) == 1
    return starts[0]


def test_items_are_a_crop_and_its_mel(corpus):
    data = dataset(corpus)
    assert len(data) == 3
    mel, audio = data[0]
    assert audio.shape == (SEGMENT,) and mel.shape == (80, 1 + SEGMENT // 256)
    clip = load_wav(corpus / "wavs" / "long.wav", PARAMS.sampling_rate)
    find_crop(clip, audio)
    assert torch.allclose(mel, MelSpectrogram(PARAMS)(audio)[0])


def test_short_clips_are_zero_padded(corpus):
    _, audio = dataset(corpus)[2]
    clip = load_wav(corpus / "wavs" / "short.wav", PARAMS.sampling_rate)
    assert torch.equal(audio[:clip.numel()], clip) and torch.all(audio[clip.numel():] == 0)


def test_training_crops_depend_on_seed_and_epoch_only(corpus):
    clip = load_wav(corpus / "wavs" / "long.wav", PARAMS.sampling_rate)
    first, again = dataset(corpus), dataset(corpus)
    starts = []
    for epoch in range(4):
        first.set_epoch(epoch)
        again.set_epoch(epoch)
        _, audio = first[0]
        assert torch.equal(audio, again[0][1])  # a resumed run sees the same crops
        starts.append(find_crop(clip, audio))
    assert len(set(starts)) > 1  # and they move from epoch to epoch


def test_validation_crops_are_the_same_every_epoch(corpus):
    data = dataset(corpus, vary_with_epoch=False)
    first = data[0][1]
    data.set_epoch(7)
    assert torch.equal(data[0][1], first)


def test_collate_stacks(corpus):
    data = dataset(corpus)
    mels, audios = collate_mel_audio([data[0], data[1]])
    assert mels.shape == (2, 80, 9) and audios.shape == (2, SEGMENT)


def test_errors_name_the_filelist_line(corpus):
    (corpus / "missing.txt").write_text("wavs/long.wav|fine\nwavs/nope.wav|gone\n")
    with pytest.raises(FileNotFoundError, match=r"missing.txt:2: audio file not found"):
        MelAudioDataset(corpus / "missing.txt", corpus, PARAMS, SEGMENT)
    (corpus / "malformed.txt").write_text("wavs/long.wav|a|b\n")
    with pytest.raises(ValueError, match=r"malformed.txt:1"):
        MelAudioDataset(corpus / "malformed.txt", corpus, PARAMS, SEGMENT)
    save_wav(corpus / "wavs" / "fast.wav", np.zeros(4000), 16000)
    (corpus / "rate.txt").write_text("\n\nwavs/fast.wav|sixteen kilohertz\n")
    with pytest.raises(ValueError, match=r"rate.txt:3: .*sampling rate is 16000 Hz"):
        MelAudioDataset(corpus / "rate.txt", corpus, PARAMS, SEGMENT)[0]


def test_recipe_builds_the_splits_and_checks_the_segment(corpus):
    settings = WaveGlowTrainingSettings(output="unused", learning_rate=1e-4, training_files=str(corpus / "list.txt"),
                                        validation_files=str(corpus / "list.txt"), dataset_path=str(corpus), seed=1,
                                        segment_length=SEGMENT, audio=PARAMS)
    splits = RECIPE.build_data(settings, {})
    assert len(splits.train) == len(splits.validation) == 3
    assert splits.train.vary_with_epoch and not splits.validation.vary_with_epoch
    # The segment and the model's --groups are checked together when the flags are parsed, preset or command line.
    with pytest.raises(ValueError, match=r"--segment-length \(2044\) must be a multiple of --groups \(8\)"):
        parse_run_args(["-m", "WaveGlow", "-o", "unused", "-lr", "1e-4", "--epochs", "1", "--segment-length", "2044"])
