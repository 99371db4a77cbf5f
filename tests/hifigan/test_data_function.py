"""HiFi-GAN's items: hop-aligned crops whose input mel is Tacotron 2's mel of the whole utterance, frame for frame;
fine-tuning mels from --input-mels-dir, checked against the audio; whole utterances for validation."""
import numpy as np
import pytest
import torch

from common.audio import AudioParams, MelSpectrogram, load_wav, save_wav
from common.errors import UserError
from common.text import TextProcessor
from common.mel_audio_data import SILENCE, FullUtterances, InputMels, MelAudioCrops, collate
from tacotron2.data_function import TextMelDataset

PARAMS = AudioParams()
HOP = PARAMS.hop_length
SEGMENT = 8 * HOP


@pytest.fixture()
def corpus(tmp_path):
    """Clips of 1.0 s, 0.3 s and 0.03 s (shorter than a crop), and a filelist of them in LJSpeech layout."""
    (tmp_path / "wavs").mkdir()
    rng = np.random.default_rng(0)
    lines = []
    for name, seconds in (("long", 1.0), ("medium", 0.3), ("short", 0.03)):
        samples = int(seconds * PARAMS.sampling_rate)
        save_wav(tmp_path / "wavs" / f"{name}.wav", 0.1 * rng.standard_normal(samples).clip(-3, 3),
                 PARAMS.sampling_rate)
        lines.append(f"wavs/{name}.wav|Some text.")
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def clip(corpus, name: str) -> torch.Tensor:
    return load_wav(corpus / "wavs" / f"{name}.wav", PARAMS.sampling_rate)


def test_the_input_mel_is_tacotron2s_mel_of_the_utterance_frame_for_frame(synthetic_corpus):
    """Tacotron 2 -> HiFi-GAN needs no conversion: a crop's mel frames are Tacotron 2's frames of that audio, and
    frame k pairs with audio samples [k * hop, (k + 1) * hop) of the crop."""
    tacotron = TextMelDataset(synthetic_corpus.train_filelist, synthetic_corpus.dataset_dir, TextProcessor(), PARAMS)
    crops = MelAudioCrops(synthetic_corpus.train_filelist, synthetic_corpus.dataset_dir, PARAMS, SEGMENT, seed=5)
    for index in range(3):
        whole_mel = tacotron.load_mel(index)
        audio = load_wav(tacotron.entries[index].path, PARAMS.sampling_rate)
        mel, crop = crops[index]
        start = crops.crop_start(index, audio.numel())
        assert start % HOP == 0 and start > 0
        assert torch.equal(crop, audio[start:start + SEGMENT])
        assert mel.shape == (80, SEGMENT // HOP)
        torch.testing.assert_close(mel, whole_mel[:, start // HOP:start // HOP + SEGMENT // HOP], rtol=0, atol=1e-5)

    validation = FullUtterances(synthetic_corpus.train_filelist, synthetic_corpus.dataset_dir, PARAMS)
    mel, audio = validation[0]
    whole_mel = tacotron.load_mel(0)
    frames = load_wav(tacotron.entries[0].path, PARAMS.sampling_rate).numel() // HOP
    assert mel.shape == (80, frames) and audio.shape == (frames * HOP,)  # the utterance cut to whole hops
    torch.testing.assert_close(mel, whole_mel[:, :frames], rtol=0, atol=1e-5)


def test_crops_depend_on_seed_epoch_and_item_only_and_short_clips_are_padded(corpus):
    first = MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, seed=3)
    again = MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, seed=3)
    starts = set()
    for epoch in range(4):
        first.set_epoch(epoch)
        again.set_epoch(epoch)
        mel, audio = first[0]
        assert torch.equal(audio, again[0][1]) and torch.equal(mel, again[0][0])
        starts.add(first.crop_start(0, clip(corpus, "long").numel()))
    assert len(starts) > 1

    mel, audio = first[2]
    short = clip(corpus, "short")
    assert audio.shape == (SEGMENT,) and mel.shape == (80, SEGMENT // HOP)
    assert torch.equal(audio[:short.numel()], short) and torch.all(audio[short.numel():] == 0)
    torch.testing.assert_close(mel, MelSpectrogram(PARAMS)(audio)[0][:, :SEGMENT // HOP], rtol=0, atol=1e-5)

    batch = collate([first[0], first[1]])
    assert batch.mel.shape == (2, 80, SEGMENT // HOP) and batch.audio.shape == (2, SEGMENT)


def test_segment_size_must_be_whole_hops_and_long_enough_for_the_loss_mel(corpus):
    with pytest.raises(UserError, match=r"--segment-length \(1000\) must be a positive multiple of --hop-length"):
        MelAudioCrops(corpus / "list.txt", corpus, PARAMS, 1000)
    with pytest.raises(UserError, match=r"--segment-length \(512\) must be at least 768"):
        MelAudioCrops(corpus / "list.txt", corpus, PARAMS, 512)


def test_validation_pads_clips_too_short_for_the_loss_mel(corpus):
    mel, audio = FullUtterances(corpus / "list.txt", corpus, PARAMS)[2]  # 661 samples
    short = clip(corpus, "short")
    assert audio.shape == (3 * HOP,) and mel.shape == (80, 3)
    assert torch.equal(audio[:short.numel()], short) and torch.all(audio[short.numel():] == 0)
    mel, _ = FullUtterances(corpus / "list.txt", corpus, PARAMS, input_mels_dir=write_mels(corpus))[2]
    assert torch.equal(mel[0], torch.tensor([0.0, 1.0, 2.0]))  # its 3 frames (1 + 661 // 256)


def write_mels(corpus, frames_of=lambda samples: 1 + samples // HOP, suffix=".npy"):
    """A recognisable 'GTA' mel per clip: channel c of frame k holds k + c / 100."""
    folder = corpus / "gta"
    folder.mkdir(exist_ok=True)
    for name in ("long", "medium", "short"):
        frames = frames_of(clip(corpus, name).numel())
        mel = (torch.arange(frames)[None, :] + torch.arange(80)[:, None] / 100).float()
        if suffix == ".npy":
            np.save(folder / f"{name}.npy", mel.numpy())
        else:
            torch.save(mel, folder / f"{name}.pt")
    return folder


@pytest.mark.parametrize("suffix", [".npy", ".pt"])
def test_fine_tuning_mels_replace_the_input_mel_and_stay_paired_with_the_audio(corpus, suffix):
    folder = write_mels(corpus, suffix=suffix)
    crops = MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, seed=3, input_mels_dir=folder)
    plain = MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, seed=3)
    for epoch in range(3):
        crops.set_epoch(epoch)
        plain.set_epoch(epoch)
        mel, audio = crops[0]
        start = crops.crop_start(0, clip(corpus, "long").numel())
        assert torch.equal(audio, plain[0][1])  # the ground-truth audio, as without the mels
        assert torch.equal(mel[0], torch.arange(start // HOP, start // HOP + SEGMENT // HOP).float())
    mel, audio = crops[2]  # shorter than a crop: the mel goes on as silence
    frames = 1 + clip(corpus, "short").numel() // HOP
    assert torch.equal(mel[0, :frames], torch.arange(frames).float()) and torch.all(mel[:, frames:] == SILENCE)

    validation = FullUtterances(corpus / "list.txt", corpus, PARAMS, input_mels_dir=folder)
    mel, audio = validation[1]
    frames = clip(corpus, "medium").numel() // HOP
    assert mel.shape == (80, frames) and audio.shape == (frames * HOP,)
    assert torch.equal(mel[0], torch.arange(frames).float())


def test_fine_tuning_mels_that_do_not_fit_the_audio_are_user_errors_naming_the_file(corpus):
    folder = write_mels(corpus, frames_of=lambda samples: samples // HOP)  # one frame short (jik876's count)
    crops = MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, input_mels_dir=folder)
    with pytest.raises(UserError, match=r"--input-mels-dir: .*long.npy has 86 frames, but .*long.wav \(22050 "
                                        r"samples\) has 87"):
        crops[0]
    np.save(folder / "long.npy", np.zeros((40, 87), dtype=np.float32))
    with pytest.raises(UserError, match=r"long.npy holds \(40, 87\), expected a mel of shape \(80, frames\)"):
        crops[0]
    (folder / "medium.npy").unlink()
    with pytest.raises(UserError, match=r"--input-mels-dir .*gta: no medium.pt or medium.npy for"):
        MelAudioCrops(corpus / "list.txt", corpus, PARAMS, SEGMENT, input_mels_dir=folder)
    with pytest.raises(UserError, match=r"--input-mels-dir .*nowhere is not a folder"):
        InputMels(corpus / "nowhere", PARAMS)
