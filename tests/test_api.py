"""The Python API: Synthesizer (tacotron2/api.py) gives the audio inference.py writes, with any vocoder told from its
file; Recognizer (wav2vec2/api.py) gives the transcripts and logits `inference.py -m wav2vec2` writes, from paths,
arrays of any rate, or a Hugging Face folder; both refuse bad arguments with one clear error."""
import re

import numpy as np
import pytest
import soundfile
import torch

import inference
from common.audio import resample_audio, save_wav
from common.checkpoint import save_checkpoint
from common.errors import UserError
from tacotron2.api import Synthesizer
from tests.hifigan.tiny_hifigan import save_our_checkpoint
from wav2vec2.api import Recognizer

TEXTS = ["Hello world.", "A much longer sentence comes second, with a number: 42.", "Short."]


def written_by_inference_py(tacotron2, tmp_path, *flags):
    """The wav bytes inference.py writes for TEXTS, in order."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("".join(text + "\n" for text in TEXTS))
    out = tmp_path / "cli"
    inference.main(["-i", str(phrases), "-o", str(out), "--tacotron2", str(tacotron2), "--quiet", "--cpu", *flags])
    return [(out / f"audio_{number}.wav").read_bytes() for number in range(1, len(TEXTS) + 1)]


def as_wav_bytes(audio, sampling_rate, tmp_path):
    path = tmp_path / "api.wav"
    save_wav(path, audio, sampling_rate)
    return path.read_bytes()


@pytest.mark.slow
def test_synthesize_gives_the_audio_inference_py_writes_with_the_same_seed(tacotron2_checkpoint, tmp_path):
    expected = written_by_inference_py(tacotron2_checkpoint, tmp_path, "--seed", "11", "--batch-size", "2",
                                       "--griffin-lim-iters", "2")
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder="griffin-lim", device="cpu",
                                               batch_size=2, griffin_lim_iters=2)
    audio = synthesizer.synthesize(TEXTS, seed=11)
    assert synthesizer.sampling_rate == 22050 and len(audio) == 3
    assert all(clip.dtype == np.float32 and clip.ndim == 1 and clip.size % 256 == 0 for clip in audio)
    assert [as_wav_bytes(clip, 22050, tmp_path) for clip in audio] == expected
    # The tiny model's 40 decoder steps say at most 10 symbols a piece: TEXTS[1] is said in parts, and TEXTS[2] is
    # alone in the last batch of two pieces, seeded 11 + its index; a str is one text.
    pieces = synthesizer.pieces(TEXTS, ["t0", "t1", "t2"])
    assert synthesizer.max_piece_symbols() == 10 and [piece.utterance for piece in pieces].count(1) > 1
    assert len(pieces) % 2 == 1 and pieces[-1].utterance == 2
    np.testing.assert_array_equal(synthesizer.synthesize(TEXTS[2], seed=11 + len(pieces) // 2)[0], audio[2])


def test_the_synthesizer_is_built_from_typed_settings_without_a_command_line_parser(tacotron2_checkpoint,
                                                                                   monkeypatch):
    """Synthesizer(checkpoint, VocoderSettings, SynthesisSettings) is what from_checkpoints builds, and neither parses
    a command line; an option of a vocoder other than the chosen one is refused by name."""
    from common.vocoder import GriffinLimSettings, VocoderSettings
    from tacotron2.api import SynthesisSettings

    def no_parsing(*args, **kwargs):
        raise AssertionError("the Python API parsed a command line")

    monkeypatch.setattr("argparse.ArgumentParser.parse_args", no_parsing)
    typed = Synthesizer(str(tacotron2_checkpoint), VocoderSettings(griffin_lim=GriffinLimSettings(griffin_lim_iters=2)),
                        SynthesisSettings(batch_size=2, max_decoder_steps=20))
    by_name = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder="griffin-lim", device="cpu",
                                           batch_size=2, max_decoder_steps=20, griffin_lim_iters=2)
    for ours, theirs in zip(typed.synthesize(TEXTS, seed=4), by_name.synthesize(TEXTS, seed=4)):
        np.testing.assert_array_equal(ours, theirs)
    assert by_name.settings == typed.settings and by_name.vocoder.n_iters == 2
    with pytest.raises(TypeError, match="wn_channels is an option of the WaveGlow vocoder, and the vocoder is "
                                        "GriffinLim"):
        Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", wn_channels=256)


@pytest.mark.slow
def test_the_vocoder_family_is_read_from_the_file(tacotron2_checkpoint, nvidia_checkpoint, tmp_path):
    """NVIDIA's WaveGlow file and our HiFi-GAN checkpoint, each given as vocoder=PATH, give inference.py's audio
    with its own flag; denoise per call equals -d, and 0 turns the denoiser off."""
    waveglow_path, _ = nvidia_checkpoint
    hifigan_path = tmp_path / "hifigan.pt"
    save_our_checkpoint(hifigan_path)
    for path, flags, default_strength in [(waveglow_path, ["--waveglow", str(waveglow_path)], 0.01),
                                          (hifigan_path, ["--hifigan", str(hifigan_path)], 0.0)]:
        synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder=path, device="cpu")
        assert synthesizer.vocoder.name == flags[0][2:]
        default = synthesizer.synthesize(TEXTS, seed=3)
        assert [as_wav_bytes(clip, 22050, tmp_path) for clip in default] == written_by_inference_py(
            tacotron2_checkpoint, tmp_path / flags[0][2:], "--seed", "3", *flags)
        denoised = synthesizer.synthesize(TEXTS, seed=3, denoise=0.05)
        assert [as_wav_bytes(clip, 22050, tmp_path) for clip in denoised] == written_by_inference_py(
            tacotron2_checkpoint, tmp_path / f"{flags[0][2:]}_d", "--seed", "3", "-d", "0.05", *flags)
        assert not np.array_equal(denoised[0], default[0])
        undenoised = synthesizer.synthesize(TEXTS, seed=3, denoise=0)
        assert np.array_equal(undenoised[0], default[0]) == (default_strength == 0)
        np.testing.assert_array_equal(synthesizer.synthesize(TEXTS, seed=3)[0], default[0])  # back to the default


def test_seeds_repeat_and_differ(tacotron2_checkpoint, nvidia_checkpoint):
    waveglow_path, _ = nvidia_checkpoint
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder=waveglow_path, device="cpu")
    first, again, other = (synthesizer.synthesize(["Testing one two."], seed=seed)[0] for seed in (5, 5, 6))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[:len(other)], other[:len(first)])
    torch.manual_seed(0)
    drawn = synthesizer.synthesize(["Testing one two."])[0]
    torch.manual_seed(0)
    np.testing.assert_array_equal(synthesizer.synthesize(["Testing one two."])[0], drawn)


def test_precision_and_options_reach_the_models(tacotron2_checkpoint):
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", precision="bf16",
                                               max_decoder_steps=7, torchscript=False, griffin_lim_iters=1,
                                               split_sentences=False)
    assert synthesizer.dtype == torch.bfloat16 and synthesizer.device == torch.device("cpu")
    (audio,) = synthesizer.synthesize(["A sentence long enough to need more than seven decoder steps."], seed=1)
    assert audio.dtype == np.float32 and 0 < audio.size <= 7 * 2 * 256  # 7 steps of 2 frames (the tiny model's r)


def test_bad_arguments_are_one_clear_error(tacotron2_checkpoint, tmp_path):
    with pytest.raises(TypeError, match="unknown option.* sigma_infr; the options are .*sigma_infer"):
        Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", sigma_infr=0.6)
    with pytest.raises(UserError, match="unknown precision 'fp8'; choose one of auto, fp32, fp16, bf16"):
        Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", precision="fp8")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA GPU is available"):
            Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cuda")
    with pytest.raises(UserError, match="is a Tacotron2 checkpoint, not a vocoder's"):
        Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder=tacotron2_checkpoint, device="cpu")
    save_checkpoint({"something": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(UserError, match="other.pt is no vocoder checkpoint this project reads"):
        Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, vocoder=tmp_path / "other.pt", device="cpu")
    # A value is refused as its flag would refuse it, before any model is read.
    for option, message in ((dict(griffin_lim_iters=-2), "griffin_lim_iters=-2: must be >= 0, got -2"),
                            (dict(griffin_lim_momentum=1.5), "griffin_lim_momentum=1.5: must be in"),
                            (dict(griffin_lim_phase_init="zeros"), "griffin_lim_phase_init='zeros': choose one of "
                                                                   "random, pghi"),
                            (dict(max_decoder_steps=0), "max_decoder_steps=0: must be >= 1, got 0"),
                            (dict(quantize="int4"), "quantize='int4': choose one of")):
        with pytest.raises(UserError, match=f"^{re.escape(message)}"):
            Synthesizer.from_checkpoints(tacotron2=tmp_path / "missing.pt", device="cpu", **option)
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", griffin_lim_iters=1)
    with pytest.raises(UserError, match="the griffin_lim vocoder has no denoiser"):
        synthesizer.synthesize(["Hello."], seed=1, denoise=0.1)


# ---- Recognizer ----------------------------------------------------------------------------------------------------


def manifest_files(manifest):
    root, *rows = manifest.read_text().splitlines()
    return [f"{root}/{row.split(chr(9))[0]}" for row in rows]


@pytest.mark.slow
def test_transcribe_gives_what_inference_py_writes_from_paths_and_arrays(recognizer_checkpoint,
                                                                          synthetic_asr_corpus, tmp_path):
    files = manifest_files(synthetic_asr_corpus.test_sentences)
    out = tmp_path / "cli"
    inference.main(["-m", "wav2vec2", "--checkpoint", str(recognizer_checkpoint), "-i", *files, "-o", str(out),
                    "--cpu", "--quiet", "--save-predictions", "--save-logits", "-bs", "3"])
    expected = (out / "predictions.txt").read_text().splitlines()
    logits = [torch.load(out / "logits" / f"{number}.pt", weights_only=True) for number in range(1, len(files) + 1)]

    recognizer = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu", batch_size=3)
    texts, log_probs = recognizer.transcribe(files, return_log_probs=True)
    assert texts == expected
    for found, saved in zip(log_probs, logits):
        assert found.dtype == np.float32 and found.shape == tuple(saved.shape)
        assert found.shape[1] == len(recognizer.labels) and recognizer.labels[0] == "<s>"
        np.testing.assert_allclose(found, saved.log_softmax(-1).numpy(), atol=1e-5)
        np.testing.assert_allclose(np.exp(found).sum(-1), 1.0, atol=1e-4)

    # The same audio as arrays: at 16 kHz, at 22.05 kHz (resampled as a file at that rate is), and as int16 PCM.
    audio = [soundfile.read(path, dtype="float32")[0] for path in files]
    assert recognizer.transcribe(audio) == expected
    # One array alone is one file alone (not the batch's first: int8's activation scale, the default on an AVX2 CPU,
    # is the batch's, and this barely trained model's letters are near ties).
    assert recognizer.transcribe(audio[0]) == recognizer.transcribe(files[:1])
    faster = [resample_audio(clip, 16000, 22050) for clip in audio]
    rewritten = []
    for number, clip in enumerate(faster):
        rewritten.append(tmp_path / f"{number}.wav")
        soundfile.write(rewritten[-1], clip, 22050, subtype="FLOAT")
    assert recognizer.transcribe(faster, sampling_rate=22050) == recognizer.transcribe(rewritten)
    pcm = [soundfile.read(path, dtype="int16")[0] for path in files]
    assert recognizer.transcribe(pcm) == expected


@pytest.mark.slow
def test_a_hugging_face_folder_transcribes_as_the_checkpoint(recognizer_checkpoint, synthetic_asr_corpus, tmp_path):
    from wav2vec2.convert import to_hf

    to_hf(recognizer_checkpoint, tmp_path / "hf")
    files = manifest_files(synthetic_asr_corpus.test_sentences)[:2]
    ours = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu").transcribe(files, return_log_probs=True)
    theirs = Recognizer.from_checkpoint(tmp_path / "hf", device="cpu").transcribe(files, return_log_probs=True)
    assert theirs[0] == ours[0]
    for mine, converted in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(converted, mine, atol=1e-5)


def test_recognizer_refuses_bad_audio_with_one_clear_error(recognizer_checkpoint, tmp_path):
    recognizer = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu")
    with pytest.raises(UserError, match=r"audio 1 has shape \(1, 2, 3\): give each utterance as a 1-D"):
        recognizer.transcribe([np.zeros((1, 2, 3), dtype=np.float32)])
    with pytest.raises(UserError, match="audio 2 holds no samples"):
        recognizer.transcribe([np.zeros(1600, dtype=np.float32), np.zeros(0, dtype=np.float32)])
    with pytest.raises(UserError, match="audio 1: audio file not found: .*missing.wav"):
        recognizer.transcribe([tmp_path / "missing.wav"])
    with pytest.raises(UserError, match="batch_size must be at least 1"):
        Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu", batch_size=0)
    save_checkpoint({"model_name": "Tacotron2", "state_dict": {}}, tmp_path / "tacotron2.pt")
    with pytest.raises(UserError, match="tacotron2.pt is a Tacotron2 checkpoint, expected wav2vec2"):
        Recognizer.from_checkpoint(tmp_path / "tacotron2.pt", device="cpu")
