"""inference.py end to end: wavs per line in input order, batching, TorchScript, benchmark mode and clear errors."""
import re

import numpy as np
import pytest
import soundfile
import torch

import inference
from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.errors import UserError
from common.inference_args import latency_statistics
from common.logger import read_dllogger_file
from tacotron2.inference import Synthesizer


@pytest.fixture()
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("Hello world.\n\nA much longer sentence comes second, with a number: 42.\nShort.\n")
    return path


def run(args):
    # Griffin-Lim in 2 iterations, fast, where it vocodes: the other vocoders refuse its flags
    griffin_lim = [] if {"--waveglow", "--wavenet", "--hifigan", "--vocoder-checkpoint"} & set(args) else [
        "--griffin-lim-iters", "2"]
    inference.main([*args, "--quiet", "--cpu", *griffin_lim])


@pytest.mark.slow
def test_one_wav_per_line_named_by_line_number(tacotron2_checkpoint, phrases, tmp_path):
    out = tmp_path / "out"
    run(["-i", str(phrases), "-o", str(out), "--tacotron2", str(tacotron2_checkpoint), "--save-alignments"])
    assert sorted(p.name for p in out.glob("*.wav")) == ["audio_1.wav", "audio_3.wav", "audio_4.wav"]
    # The tiny model's 40 decoder steps say at most 10 symbols a piece: a longer line is said in parts, each with its
    # own alignment.
    alignments = {p.name for p in out.glob("*.png")}
    assert "alignment_4.png" in alignments and "alignment_3.png" not in alignments
    for line in (1, 3):
        parts = sorted(name for name in alignments if name.startswith(f"alignment_{line}_"))
        assert parts == [f"alignment_{line}_{part}.png" for part in range(1, len(parts) + 1)] and len(parts) > 1
    assert len(alignments) == 1 + sum(name.startswith(("alignment_1_", "alignment_3_")) for name in alignments)
    for wav in out.glob("*.wav"):
        info = soundfile.info(str(wav))
        assert info.samplerate == 22050 and info.channels == 1 and info.subtype == "PCM_16"
        assert info.frames % 256 == 0 and info.frames > 0
    records = [r["data"] for r in read_dllogger_file(out / "nvlog.json") if r["type"] == "LOG"
               and isinstance(r["step"], list)]
    assert {"tacotron2_latency", "vocoder_latency", "real_time_factor", "samples_per_sec",
            "tacotron2_mel_frames_per_sec", "alignment_score"} <= set(records[0])
    assert records[0]["real_time_factor"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("weights, tolerance", [
    (["--no-half-lstm-weights"], 1e-4),  # float32: equal to rounding
    ([], 5e-3)])  # the CPU's default: 16-bit LSTM weights, float16 alone, bf16 (where native) for 3 at once
def test_batched_output_equals_one_by_one(tacotron2_checkpoint, phrases, tmp_path, weights, tolerance):
    run(["-i", str(phrases), "-o", str(tmp_path / "batched"), "--tacotron2", str(tacotron2_checkpoint),
         "--batch-size", "3", "--seed", "5", *weights])
    arguments = inference.build_parser().parse_args(["-i", "x", "-o", "y", "--tacotron2", str(tacotron2_checkpoint),
                                                     "--cpu", *weights])
    synthesizer = Synthesizer.from_args(arguments)
    texts = ["Hello world.", "A much longer sentence comes second, with a number: 42.", "Short."]
    together = synthesizer.synthesize_batch(texts, ["a", "b", "c"], seed=5)
    for index, text in enumerate(texts):
        alone = synthesizer.synthesize_batch([text], ["x"], seed=5)
        length = int(alone["mel_lengths"][0])
        assert int(together["mel_lengths"][index]) == length
        torch.testing.assert_close(together["mel"][index, :, :length], alone["mel"][0, :, :length],
                                   atol=tolerance, rtol=tolerance)


def test_seed_makes_inference_reproducible(tacotron2_checkpoint, phrases, tmp_path):
    for name in ("first", "second"):
        run(["-i", str(phrases), "-o", str(tmp_path / name), "--tacotron2", str(tacotron2_checkpoint),
             "--seed", "11"])
    first, _ = soundfile.read(str(tmp_path / "first" / "audio_3.wav"))
    second, _ = soundfile.read(str(tmp_path / "second" / "audio_3.wav"))
    np.testing.assert_array_equal(first, second)


def test_torchscript_path_equals_eager(tacotron2_checkpoint):
    results = {}
    for flag in ("--torchscript", "--no-torchscript"):  # both the reference decoder step
        arguments = inference.build_parser().parse_args(["-i", "x", "-o", "y", "--tacotron2",
                                                         str(tacotron2_checkpoint), "--cpu", flag,
                                                         "--no-fast-decoder"])
        results[flag] = Synthesizer.from_args(arguments).synthesize_batch(["Testing one two."], ["t"], seed=3)
    torch.testing.assert_close(results["--torchscript"]["mel"], results["--no-torchscript"]["mel"])


def test_benchmark_mode_reports_measured_percentiles(tacotron2_checkpoint, phrases, tmp_path):
    out = tmp_path / "bench"
    run(["-i", str(phrases), "-o", str(out), "--tacotron2", str(tacotron2_checkpoint), "--batch-size", "2",
         "--benchmark-repeats", "4"])
    summary = [r["data"] for r in read_dllogger_file(out / "nvlog.json") if r["step"] == []][0]
    assert summary["repeats"] == 4 and summary["batch_size"] == 2
    assert summary["latency_p50"] <= summary["latency_p90"] <= summary["latency_p99"]
    assert summary["latency_mean"] > 0 and summary["real_time_factor"] > 0
    assert not list(out.glob("*.wav"))


def test_latency_statistics_are_measured_percentiles():
    stats = latency_statistics([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats["latency_p50"] == 3.0
    assert stats["latency_p90"] == pytest.approx(4.0 + 0.6 * 96.0)
    assert stats["latency_mean"] == 22.0


def test_bad_inputs_give_clear_errors(tacotron2_checkpoint, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match="empty.txt has no text"):
        run(["-i", str(empty), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint)])
    with pytest.raises(FileNotFoundError, match="input file not found: .*nope.txt"):
        run(["-i", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint)])
    with pytest.raises(SystemExit):
        run(["-i", str(empty), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint),
             "--sigma-infr", "1"])
    assert "unrecognized arguments: --sigma-infr" in capsys.readouterr().err
    phrases = tmp_path / "p.txt"
    phrases.write_text("Hello.\n")
    save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, tmp_path / "waveglow.pt")
    with pytest.raises(ValueError, match="is a WaveGlow checkpoint, expected Tacotron2"):
        run(["-i", str(phrases), "-o", str(tmp_path / "o"), "--tacotron2", str(tmp_path / "waveglow.pt")])


def test_vocoder_with_other_audio_parameters_is_refused(tacotron2_checkpoint, tmp_path, monkeypatch):
    import common.vocoder

    class MismatchedVocoder(common.vocoder.GriffinLimVocoder):
        def __init__(self, audio_params, *settings):
            super().__init__(AudioParams(mel_fmax=7000.0), *settings)

    monkeypatch.setattr(common.vocoder, "GriffinLimVocoder", MismatchedVocoder)
    phrases = tmp_path / "p.txt"
    phrases.write_text("Hello.\n")
    with pytest.raises(ValueError, match=r"mel_fmax: 7000.0 \(the vocoder .*\) vs 8000.0"):
        run(["-i", str(phrases), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint)])


@pytest.mark.slow
def test_nvidia_format_checkpoints_synthesize_end_to_end(nvidia_checkpoint, tmp_path):
    """Files as NVIDIA's train.py writes them (config, DDP prefix, legacy weight norm, no audio or text settings of
    ours): inference.py builds both models from their configs and falls back to NVIDIA's front-end defaults."""
    from tacotron2.model import Tacotron2

    torch.manual_seed(0)
    config = dict(symbols_embedding_dim=16, encoder_embedding_dim=16, encoder_n_convolutions=1,
                  attention_rnn_dim=16, decoder_rnn_dim=16, prenet_dim=8, attention_dim=8,
                  postnet_embedding_dim=8, postnet_n_convolutions=1, max_decoder_steps=12)
    tacotron2 = Tacotron2(**config)
    tacotron2_path = tmp_path / "checkpoint_Tacotron2_1500.pt"
    torch.save({"epoch": 1500, "config": config, "optimizer": {}, "scaler": {},
                "state_dict": {f"module.{key}": value for key, value in tacotron2.state_dict().items()}},
               tacotron2_path)
    waveglow_path, _ = nvidia_checkpoint
    phrases = tmp_path / "p.txt"
    phrases.write_text("Hello there.\nSecond line, 2 words.\n")
    inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--quiet", "--cpu", "--tacotron2",
                    str(tacotron2_path), "--waveglow", str(waveglow_path), "-s", "0.6", "-d", "0.01",
                    "--no-split-sentences"])
    for line in (1, 2):
        audio, rate = soundfile.read(str(tmp_path / "out" / f"audio_{line}.wav"))
        assert rate == 22050 and 0 < len(audio) <= 12 * 256 and len(audio) % 256 == 0


def wav_bytes(folder) -> dict:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.wav"))}


def test_the_command_line_without_m_is_tacotron2(tacotron2_checkpoint, phrases, tmp_path):
    """inference.py's command line from before -m existed runs -m Tacotron2, with the same files, byte for byte."""
    arguments = ["-i", str(phrases), "--tacotron2", str(tacotron2_checkpoint), "--batch-size", "2", "--seed", "7"]
    run([*arguments, "-o", str(tmp_path / "old")])
    run(["-m", "Tacotron2", *arguments, "-o", str(tmp_path / "new")])
    old, new = wav_bytes(tmp_path / "old"), wav_bytes(tmp_path / "new")
    assert sorted(old) == ["audio_1.wav", "audio_3.wav", "audio_4.wav"] and old == new
    assert inference.build_parser().parse_args(arguments + ["-o", "x"]).model_name == "Tacotron2"


@pytest.mark.slow
def test_vocoder_by_name_equals_vocoder_by_checkpoint_flag(tacotron2_checkpoint, nvidia_checkpoint, phrases,
                                                           tmp_path):
    waveglow, _ = nvidia_checkpoint
    base = ["-i", str(phrases), "--tacotron2", str(tacotron2_checkpoint), "-s", "0.6", "-d", "0.01"]
    choices = {"flag": ["--waveglow", str(waveglow)],
               "name": ["--vocoder", "WaveGlow", "--vocoder-checkpoint", str(waveglow)],
               "both": ["--vocoder", "waveglow", "--waveglow", str(waveglow)]}
    for name, choice in choices.items():
        run([*base, *choice, "-o", str(tmp_path / name)])
    assert wav_bytes(tmp_path / "flag") == wav_bytes(tmp_path / "name") == wav_bytes(tmp_path / "both")
    run([*base, "-o", str(tmp_path / "griffin_lim")])
    run([*base, "--vocoder", "GriffinLim", "-o", str(tmp_path / "griffin_lim_named")])
    assert wav_bytes(tmp_path / "griffin_lim") == wav_bytes(tmp_path / "griffin_lim_named")
    assert wav_bytes(tmp_path / "griffin_lim") != wav_bytes(tmp_path / "flag")
    vocoders = [r["data"]["vocoder"] for name in ("name", "griffin_lim_named")
                for r in read_dllogger_file(tmp_path / name / "nvlog.json") if r["step"] == "PARAMETER"]
    assert vocoders == ["waveglow", "griffin_lim"]


@pytest.mark.parametrize("choice, message", [
    (["--vocoder", "WaveGlow"],
     "--vocoder WaveGlow needs its checkpoint: --vocoder-checkpoint CKPT or --waveglow CKPT"),
    (["--vocoder", "WaveNet", "--waveglow", "W.pt"], "--vocoder WaveNet contradicts --waveglow; drop one of them"),
    (["--waveglow", "W.pt", "--wavenet", "N.pt"], "give one vocoder checkpoint, got --waveglow and --wavenet"),
    (["--vocoder-checkpoint", "W.pt"],
     "--vocoder-checkpoint needs --vocoder NAME (WaveGlow, WaveNet, HiFiGAN, MelInverter)"),
    (["--vocoder", "GriffinLim", "--vocoder-checkpoint", "W.pt"], "--vocoder GriffinLim takes no checkpoint"),
])
def test_contradictory_vocoder_choices_are_user_errors(tacotron2_checkpoint, phrases, tmp_path, choice, message):
    with pytest.raises(UserError, match=f"^{re.escape(message)}"):
        run(["-i", str(phrases), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint), *choice])


@pytest.mark.parametrize("flag, value", [("--griffin-lim-iters", "8"), ("--griffin-lim-power", "1.5"),
                                         ("--griffin-lim-momentum", "0.5"), ("--griffin-lim-phase-init", "pghi")])
def test_griffin_lim_flags_with_a_vocoder_that_does_not_use_them_are_user_errors(tacotron2_checkpoint,
                                                                                 nvidia_checkpoint, phrases, tmp_path,
                                                                                 flag, value):
    waveglow, _ = nvidia_checkpoint
    message = f"{flag} {value} sets Griffin-Lim, which the WaveGlow vocoder of --waveglow does not use: drop {flag}"
    with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
        run(["-i", str(phrases), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint),
             "--waveglow", str(waveglow), flag, value])
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*.wav"))


def test_each_model_takes_its_own_flags(capsys):
    waveglow = inference.build_parser("WaveGlow").parse_args(["-m", "WaveGlow", "-i", "a.pt", "b/", "-o", "out",
                                                              "--waveglow", "W.pt", "-s", "0.6", "--bf16"])
    assert waveglow.input == ["a.pt", "b/"] and waveglow.sigma_infer == 0.6 and waveglow.bf16
    assert not hasattr(waveglow, "wavenet_impl")  # another vocoder's flags are not offered
    for argv, complaint in [(["-m", "WaveGlow", "-i", "a.pt", "-o", "out"], "required: --waveglow"),
                            (["-m", "WaveGlow", "-i", "a.pt", "-o", "out", "--waveglow", "W.pt", "--tacotron2", "T"],
                             "unrecognized arguments: --tacotron2"),
                            (["-m", "HiFiGAN", "-i", "a.pt", "-o", "out"], "required: --hifigan"),
                            (["-m", "FastPitch", "-i", "a.pt", "-o", "out"], "invalid choice: 'FastPitch'"),
                            (["-i", "p.txt", "-o", "out", "--tacotron2", "T", "--vocoder", "hifi"],
                             "unknown vocoder 'hifi'; choose one of GriffinLim, WaveGlow, WaveNet, HiFiGAN, "
                             "MelInverter")]:
        with pytest.raises(SystemExit):
            inference.main(argv)
        assert complaint in capsys.readouterr().err


@pytest.mark.slow
def test_mel_to_wav_mode_gives_the_audio_of_text_to_wav(tacotron2_checkpoint, nvidia_checkpoint, phrases, tmp_path):
    """-m WaveGlow on the mels that text-to-wav saved (--save-mels, one utterance per batch, each said whole) gives the
    same wavs."""
    waveglow, _ = nvidia_checkpoint
    vocoder = ["--waveglow", str(waveglow), "-s", "0.6", "-d", "0.01", "--seed", "3"]
    run(["-i", str(phrases), "-o", str(tmp_path / "tts"), "--tacotron2", str(tacotron2_checkpoint), "--batch-size",
         "1", "--save-mels", "--no-split-sentences", *vocoder])
    mels = sorted(path.name for path in (tmp_path / "tts").glob("*.pt"))
    assert mels == ["mel_1.pt", "mel_3.pt", "mel_4.pt"]
    inference.main(["-m", "WaveGlow", "-i", str(tmp_path / "tts"), "-o", str(tmp_path / "vocoded"), "--suffix",
                    "_wg", "--quiet", "--cpu", *vocoder])
    vocoded = wav_bytes(tmp_path / "vocoded")
    assert sorted(vocoded) == ["mel_1_wg.wav", "mel_3_wg.wav", "mel_4_wg.wav"]
    for line in (1, 3, 4):
        mel = torch.load(tmp_path / "tts" / f"mel_{line}.pt", weights_only=True)
        audio, _ = soundfile.read(str(tmp_path / "vocoded" / f"mel_{line}_wg.wav"))
        assert mel.shape[0] == 80 and len(audio) == mel.shape[1] * 256
        assert vocoded[f"mel_{line}_wg.wav"] == (tmp_path / "tts" / f"audio_{line}.wav").read_bytes()
    records = [r["data"] for r in read_dllogger_file(tmp_path / "vocoded" / "nvlog.json") if r["step"] == [0]]
    assert records[0]["samples_per_sec"] > 0 and records[0]["input"].endswith("mel_1.pt")


def test_mel_to_wav_mode_refuses_mels_of_the_wrong_shape(nvidia_checkpoint, tmp_path):
    waveglow, _ = nvidia_checkpoint
    torch.save(torch.zeros(40, 5), tmp_path / "small.pt")
    with pytest.raises(UserError, match=r"small.pt holds a float32 array of shape \(40, 5\), expected a float log mel of shape \(80, frames\)"):
        inference.main(["-m", "WaveGlow", "-i", str(tmp_path / "small.pt"), "-o", str(tmp_path / "o"), "--cpu",
                        "--waveglow", str(waveglow)])


def test_a_line_the_text_front_end_cannot_read_is_a_user_error_naming_it(tacotron2_checkpoint, tmp_path):
    phrases = tmp_path / "emoji.txt"
    phrases.write_text("Hello.\n\U0001F600 \U0001F600\n")
    with pytest.raises(UserError, match=r"emoji.txt:2: transcript .* encodes to no symbols"):
        run(["-i", str(phrases), "-o", str(tmp_path / "o"), "--tacotron2", str(tacotron2_checkpoint)])


def test_griffin_lim_flags_reach_the_vocoder():
    import common.vocoder
    from common.audio import AudioParams, griffin_lim

    flags = ["-i", "in.txt", "-o", "out", "--tacotron2", "T.pt"]
    args = inference.build_parser().parse_args([*flags, "--griffin-lim-iters", "3", "--griffin-lim-power", "1.5",
                                                "--griffin-lim-momentum", "0", "--griffin-lim-phase-init", "pghi"])
    vocoder = common.vocoder.load_vocoder(common.vocoder.vocoder_settings_from_args(args), torch.device("cpu"),
                                          torch.float32, AudioParams())
    mel = torch.randn(1, 80, 12) - 5.0
    torch.testing.assert_close(vocoder(mel), griffin_lim(mel, AudioParams(), n_iters=3, power=1.5, momentum=0.0,
                                                         phase_init="pghi"))
    assert not torch.allclose(vocoder(mel), griffin_lim(mel, AudioParams(), n_iters=3, power=1.5, momentum=0.0))
    assert not torch.allclose(vocoder(mel), griffin_lim(mel, AudioParams(), n_iters=3))  # the defaults differ
    for flag, value in (("--griffin-lim-momentum", "1"), ("--griffin-lim-power", "0"), ("--griffin-lim-iters", "-1"),
                        ("--griffin-lim-phase-init", "zeros")):
        with pytest.raises(SystemExit):
            inference.build_parser().parse_args([*flags, flag, value])


def test_every_family_declares_its_parts_under_its_registered_name():
    import importlib

    from common.inference_part import InferencePart
    from common.registry import FAMILIES, INFERENCE, VOCODERS, get_inference_part, get_recipe
    from common.vocoder import VocoderSpec, vocoder_spec

    assert list(INFERENCE) == list(FAMILIES) and set(VOCODERS) < set(FAMILIES)
    for name in FAMILIES:
        assert get_recipe(name).name == name
        part = get_inference_part(name)
        assert isinstance(part, InferencePart) and part.name == name
    for name in VOCODERS:
        spec = vocoder_spec(name)
        assert isinstance(spec, VocoderSpec) and spec.name == name
        assert spec is importlib.import_module(VOCODERS[name]).VOCODER


def test_a_vocoder_left_out_of_the_installation_is_offered_and_refused_only_when_chosen(monkeypatch, tmp_path):
    """A slim image without a vocoder's folder still runs everything else; choosing that vocoder is one error line."""
    from common import registry
    from common.vocoder import load_vocoder, vocoder_settings_from_args, vocoder_spec

    monkeypatch.setitem(registry.VOCODERS, "HiFiGAN", "hifigan_left_out.vocoder")
    assert vocoder_spec("HiFiGAN") is None
    flags = ["-i", "in.txt", "-o", str(tmp_path), "--tacotron2", "T.pt"]
    assert inference.build_parser().parse_args(flags).hifigan is None  # the others' flags are all there
    args = inference.build_parser().parse_args([*flags, "--hifigan", "H.pt"])
    assert not hasattr(args, "ema")  # its own flags are not
    with pytest.raises(UserError, match="^--hifigan: the HiFiGAN vocoder is not available in this installation$"):
        load_vocoder(vocoder_settings_from_args(args), torch.device("cpu"), torch.float32, AudioParams())

    (tmp_path / "broken_family").mkdir()  # there, but needing a package that is not installed: a real error
    (tmp_path / "broken_family" / "__init__.py").write_text("")
    (tmp_path / "broken_family" / "vocoder.py").write_text("import a_package_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.VOCODERS, "HiFiGAN", "broken_family.vocoder")
    with pytest.raises(ModuleNotFoundError, match="a_package_that_is_not_installed"):
        vocoder_spec("HiFiGAN")
