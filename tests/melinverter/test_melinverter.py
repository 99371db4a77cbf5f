"""The mel inverter: its shapes, its loss against the audio's own spectrum, that training it on a corpus beats the
least-squares inverse of the mel filterbank, and that it vocodes text to wav and mel files through inference.py."""
import numpy as np
import pytest
import soundfile
import torch

import inference
import train
from common.audio import AudioParams, MelSpectrogram, griffin_lim_phase, least_squares_magnitude, load_wav
from common.trained_model import load_trained_model
from common.errors import UserError
from common.filelist import read_filelist
from common.vocoder import GriffinLimVocoder
from melinverter.loss_function import absolute_errors, edge_frames, log_magnitude
from melinverter.model import MelInverter
from melinverter.recipe import RECIPE
from melinverter.vocoder import MelInverterVocoder
from tacotron2.api import Synthesizer
from tests.training_runs import TINY_TACOTRON2, run_training

PARAMS = AudioParams()


def test_the_inverter_maps_each_mel_frame_to_a_linear_frame():
    model = MelInverter(n_mel_channels=80, n_fft_bins=513, channels=8, kernel_size=3, n_blocks=2)
    assert model(torch.randn(2, 80, 17)).shape == (2, 513, 17)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        MelInverter(kernel_size=4)


def test_the_loss_is_zero_for_the_audios_own_spectrum_and_leaves_out_the_edge_frames():
    audio = torch.randn(2, 32 * PARAMS.hop_length)
    exact = log_magnitude(audio, PARAMS)[..., :32]
    errors = absolute_errors(exact, audio, PARAMS)
    assert edge_frames(PARAMS) == 2 and errors.shape == (2, 513, 32 - 4)
    assert float(errors.abs().max()) == 0.0
    assert torch.allclose(absolute_errors(exact + 0.5, audio, PARAMS), torch.full_like(errors, 0.5))
    # A clip of 3 frames keeps its middle frame rather than nothing.
    short = torch.randn(1, 3 * PARAMS.hop_length)
    assert absolute_errors(log_magnitude(short, PARAMS)[..., :3], short, PARAMS).shape == (1, 513, 1)


def least_squares_log_magnitude(log_mel: torch.Tensor) -> torch.Tensor:
    """What Griffin-Lim alone starts from (common/audio.py's griffin_lim)."""
    return torch.log(torch.clamp(least_squares_magnitude(log_mel, PARAMS), min=1e-5))


@pytest.mark.slow
def test_training_on_the_corpus_beats_the_least_squares_inverse_and_vocodes(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    run_training(synthetic_corpus, tmp_path / "inverter", "MelInverter", "--channels", "32", "--n-blocks", "1",
                 "--segment-length", "8192", "--epochs", "30", "-lr", "3e-3")
    checkpoint = tmp_path / "inverter" / "checkpoint_MelInverter_last.pt"
    model, _ = load_trained_model(RECIPE, checkpoint, torch.device("cpu"))
    mel_spectrogram = MelSpectrogram(PARAMS)
    learned, least_squares = [], []
    with torch.no_grad():
        for entry in read_filelist(synthetic_corpus.val_filelist, synthetic_corpus.dataset_dir, need_text=False):
            audio = load_wav(entry.path, PARAMS.sampling_rate).unsqueeze(0)
            log_mel = mel_spectrogram(audio)
            learned.append(absolute_errors(model(log_mel), audio, PARAMS).mean())
            least_squares.append(absolute_errors(least_squares_log_magnitude(log_mel), audio, PARAMS).mean())
    learned, least_squares = torch.stack(learned).mean(), torch.stack(least_squares).mean()
    assert learned < 0.8 * least_squares, (float(learned), float(least_squares))

    # Its vocoder is the inverter's magnitude with Griffin-Lim's phase (same seed as Griffin-Lim alone).
    vocoder = MelInverterVocoder(model, PARAMS, n_iters=4)
    log_mel = torch.randn(1, 80, 12)
    expected = griffin_lim_phase(torch.exp(model(log_mel)), PARAMS, n_iters=4)
    assert torch.equal(vocoder(log_mel), expected)
    assert not torch.equal(vocoder(log_mel), GriffinLimVocoder(PARAMS, n_iters=4)(log_mel))

    # Text to wav with it, and the saved mel through `inference.py -m MelInverter`: the same wav.
    run_training(synthetic_corpus, tmp_path / "tacotron2", "Tacotron2", *TINY_TACOTRON2)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Hi.\n")
    inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--cpu", "--quiet", "--max-decoder-steps", "4",
                    "--save-mels", "--tacotron2", str(tmp_path / "tacotron2" / "checkpoint_Tacotron2_last.pt"),
                    "--melinverter", str(checkpoint)])
    first, rate = soundfile.read(str(tmp_path / "out" / "audio_1.wav"))
    assert rate == 22050 and len(first) == 4 * 256
    inference.main(["-m", "MelInverter", "-i", str(tmp_path / "out" / "mel_1.pt"), "-o", str(tmp_path / "vocoded"),
                    "--cpu", "--quiet", "--melinverter", str(checkpoint)])
    assert (tmp_path / "vocoded" / "mel_1.wav").read_bytes() == (tmp_path / "out" / "audio_1.wav").read_bytes()
    # --griffin-lim-phase-init reaches the inverter's phase: PGHI's start instead of random phases gives other audio
    inference.main(["-i", str(phrases), "-o", str(tmp_path / "pghi"), "--cpu", "--quiet", "--max-decoder-steps", "4",
                    "--tacotron2", str(tmp_path / "tacotron2" / "checkpoint_Tacotron2_last.pt"),
                    "--melinverter", str(checkpoint), "--griffin-lim-phase-init", "pghi"])
    pghi_start, _ = soundfile.read(str(tmp_path / "pghi" / "audio_1.wav"))
    assert pghi_start.shape == first.shape and not np.array_equal(pghi_start, first)
    # The Python API tells the family from the file
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tmp_path / "tacotron2" / "checkpoint_Tacotron2_last.pt",
                                               vocoder=checkpoint, device="cpu")
    assert isinstance(synthesizer.vocoder, MelInverterVocoder)
    with pytest.raises(UserError, match="drop --griffin-lim-power"):
        inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--cpu", "--quiet", "--tacotron2",
                        str(tmp_path / "tacotron2" / "checkpoint_Tacotron2_last.pt"), "--melinverter",
                        str(checkpoint), "--griffin-lim-power", "1.5"])


def test_a_checkpoint_of_another_family_is_a_user_error(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    run_training(synthetic_corpus, tmp_path / "wavenet", "WaveNet", "--residual-channels", "8", "--skip-channels",
                 "16", "--out-channels", "256", "--n-layers", "2", "--max-dilation", "2", "--segment-length", "1024")
    torch.save(torch.zeros(80, 4), tmp_path / "mel.pt")
    with pytest.raises(UserError, match="WaveNet"):
        inference.main(["-m", "MelInverter", "-i", str(tmp_path / "mel.pt"), "-o", str(tmp_path / "out"), "--cpu",
                        "--quiet", "--melinverter", str(tmp_path / "wavenet" / "checkpoint_WaveNet_last.pt")])
