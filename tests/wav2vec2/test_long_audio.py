"""Long recordings through the recognizer (wav2vec2/api.py: windows_of, Recognizer.utterance_logits): a recording
longer than the chunk is read in windows of the chunk and some context on either side, whose kept frames join into
exactly the frames of the whole recording, each computed from its own window; one CTC decode runs over them.

What a trained model makes of a long recording read so, against its sentences one by one, and the peak memory
against length, is measured by experiments/wav2vec2_long_audio/ (wav2vec2/RESULTS.md, "Long recordings")."""
from __future__ import annotations

import numpy as np
import pytest
import soundfile
import torch

import inference
from wav2vec2.api import Recognizer, Utterance, samples_for, windows_of
from wav2vec2.decoding import transcripts
from wav2vec2.masking import conv_output_lengths
from wav2vec2.model import ConvFeatureExtractor, parse_conv_feature_layers

BASE_LAYERS = parse_conv_feature_layers("[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2")
SMALL_LAYERS = [(8, kernel, stride) for _, kernel, stride in BASE_LAYERS]  # Base's kernels and strides, 8 channels


@pytest.mark.parametrize("samples", [16000 * 31, 16000 * 95 + 123, 16000 * 60])
def test_the_windows_kept_frames_tile_the_whole_recording(samples):
    utterance = Utterance(1, "long", torch.zeros(samples))
    windows = windows_of(utterance, BASE_LAYERS, chunk_samples=16000 * 30, context_samples=16000 * 5)
    frames = int(conv_output_lengths(samples, BASE_LAYERS))
    assert len(windows) == -(-frames // 1500)
    assert [window.part for window in windows] == list(range(1, len(windows) + 1))
    covered, offset = [], 0
    for window in windows:
        first, last = window.keep
        window_frames = int(conv_output_lengths(window.audio.numel(), BASE_LAYERS))
        assert 0 <= first < last <= window_frames and window.parts == len(windows)
        start = window.audio.data_ptr() // 4 - utterance.audio.data_ptr() // 4  # a view: where it starts
        assert start % 320 == 0  # on the extractor's stride, so its frames are the recording's
        covered += list(range(start // 320 + first, start // 320 + last))
        offset = start
    assert covered == list(range(frames)) and offset > 0
    assert windows[1].keep[0] == 5 * 50  # five seconds of context before the second chunk


def test_a_recording_within_the_chunk_is_one_window_read_whole():
    utterance = Utterance(1, "short", torch.zeros(16000 * 30))
    (window,) = windows_of(utterance, BASE_LAYERS, chunk_samples=16000 * 30, context_samples=16000 * 5)
    assert window.keep is None and window.audio is utterance.audio
    assert len(windows_of(utterance, BASE_LAYERS, chunk_samples=0, context_samples=0)) == 1


def test_samples_for_is_the_fewest_samples_that_give_the_frames():
    for frames in (1, 2, 49, 1500):
        samples = samples_for(frames, BASE_LAYERS)
        assert int(conv_output_lengths(samples, BASE_LAYERS)) == frames
        assert int(conv_output_lengths(samples - 1, BASE_LAYERS)) == frames - 1


def test_each_windows_kept_features_are_the_whole_recordings():
    """With a per-frame norm (Large's layer_norm extractor), the features of each window's kept frames are those the
    whole recording gives: the windows start where the recording's frames start."""
    torch.manual_seed(0)
    extractor = ConvFeatureExtractor(SMALL_LAYERS, mode="layer_norm").eval()
    audio = torch.randn(16000 * 7 + 77)
    with torch.no_grad():
        whole = extractor(audio[None])[0]
        utterance = Utterance(1, "long", audio)
        windows = windows_of(utterance, SMALL_LAYERS, chunk_samples=16000 * 2, context_samples=8000)
        joined = torch.cat([extractor(window.audio[None])[0][:, window.keep[0]:window.keep[1]] for window in windows],
                           dim=1)
    assert len(windows) == 4
    torch.testing.assert_close(joined, whole, atol=1e-5, rtol=1e-5)


@pytest.fixture
def long_recording(synthetic_asr_corpus, tmp_path):
    """The corpus's test utterances joined with 0.3 s pauses, about 20 s: a recording of several chunks of 5 s."""
    root, *rows = synthetic_asr_corpus.test_sentences.read_text().splitlines()
    clips = [soundfile.read(f"{root}/{row.split(chr(9))[0]}", dtype="float32")[0] for row in rows]
    pause = np.zeros(4800, dtype=np.float32)
    audio = np.concatenate([part for clip in clips for part in (clip, pause)])
    path = tmp_path / "long.wav"
    soundfile.write(path, audio, 16000)
    return path, audio


def test_a_long_recording_is_decoded_once_over_its_joined_frames(recognizer_checkpoint, long_recording):
    path, audio = long_recording
    chunked = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu", chunk_seconds=5, context_seconds=1)
    assert len(chunked.windows(chunked.utterances([audio]))) == -(-len(audio) // 80000)
    (text,), (log_probs,) = chunked.transcribe([audio], return_log_probs=True)
    layers = parse_conv_feature_layers(chunked.model.config["conv_feature_layers"])
    assert log_probs.shape == (int(conv_output_lengths(len(audio), layers)), len(chunked.labels))
    # One decode over the joined frames: a word across a chunk's edge is not cut into two.
    assert text == transcripts(torch.from_numpy(log_probs)[None], None, chunked.dictionary)[0]
    whole = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu", chunk_seconds=0)
    assert whole.transcribe([audio], return_log_probs=True)[1][0].shape == log_probs.shape
    # A recording within the chunk reads exactly as before.
    short = audio[:16000 * 4]
    np.testing.assert_array_equal(chunked.transcribe([short], return_log_probs=True)[1][0],
                                  whole.transcribe([short], return_log_probs=True)[1][0])


def test_the_command_line_reads_long_recordings_in_chunks(recognizer_checkpoint, long_recording, tmp_path, capsys):
    path, audio = long_recording
    common = ["-m", "wav2vec2", "--checkpoint", str(recognizer_checkpoint), "-i", str(path), "--cpu", "--quiet",
              "--save-logits", "--save-predictions"]
    inference.main([*common, "-o", str(tmp_path / "chunked"), "--chunk-seconds", "5", "--chunk-context-seconds", "1"])
    inference.main([*common, "-o", str(tmp_path / "api"), "--chunk-seconds", "0"])
    chunked = torch.load(tmp_path / "chunked" / "logits" / "1.pt", weights_only=True)
    whole = torch.load(tmp_path / "api" / "logits" / "1.pt", weights_only=True)
    assert chunked.shape == whole.shape
    recognizer = Recognizer.from_checkpoint(recognizer_checkpoint, device="cpu", chunk_seconds=5, context_seconds=1)
    assert (tmp_path / "chunked" / "predictions.txt").read_text().splitlines() == recognizer.transcribe([str(path)])
    with pytest.raises(SystemExit):
        inference.main([*common, "-o", str(tmp_path / "bad"), "--chunk-seconds", "-1"])
    assert "--chunk-seconds: must be >= 0" in capsys.readouterr().err
