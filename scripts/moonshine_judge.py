"""Moonshine base (English) as a judge of synthesized speech: a recognizer nobody here trained, and not on eSpeak NG's
voice, so its errors are not the project's own recognizer's blind spots.

    judge = MoonshineJudge()
    texts = judge.transcribe(["audio_1.wav", "audio_2.wav"])   # as written: "The 29th bottle was heavy."

The model ships inside the `moonshine-cpp` wheel (MIT licence; nothing is downloaded): an encoder and a decoder with
its key/value cache in ONNX Runtime's format, and a tokenizer. The wheel's own C library is built for CPUs with
AVX-512 (it stops with an illegal instruction on an AVX2-only one), so the two graphs run here on `onnxruntime`'s CPU
provider, read back into ONNX first (scripts/ort_format.py: the files keep their weights in int8 and would turn them
into float32 on every call), decoded greedily: the decoder starts from <s> with the encoder's states and its cache,
takes the most likely token each step, and stops at </s> or after 6 tokens a second of audio (Moonshine's own limit,
which also bounds the repetition a sequence-to-sequence model can fall into). The packages are optional:
requirements-judge.txt.

silence_seconds puts that much silence before and after each clip, and the token limit counts it as the audio it is.
Clips that start and end on the speech, as eSpeak NG's and Tacotron 2's do, lose their first or last word to
Moonshine and draw repeats from it; with silence around them it hears them better, and the limit no longer cuts
off the end of fast speech (experiments/moonshine_silence).

Moonshine writes text (digits, punctuation, capitals): scripts/intelligibility.py reads both its text and the
reference through the same spoken-word normalisation before scoring.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from common.audio import load_wav
from common.errors import UserError
from scripts.ort_format import onnx_model

SAMPLING_RATE = 16000
TOKENS_PER_SECOND = 6
START, END = 1, 2  # <s>, </s>
MISSING = ("--judge moonshine needs the moonshine-cpp, onnx and onnxruntime packages: pip install -r "
           "requirements-judge.txt")


def read_tokenizer(path: Path) -> list[bytes]:
    """tokenizer.bin: each token's bytes after its length (one byte; two, little-endian in 7-bit groups, from 128),
    in id order; '\u2581' marks a space."""
    data = path.read_bytes()
    tokens, position = [], 0
    while position < len(data):
        length = data[position]
        position += 1
        if length >= 128:
            length = (length - 128) + (data[position] << 7)
            position += 1
        tokens.append(data[position:position + length])
        position += length
    return tokens


class MoonshineJudge:
    def __init__(self, threads: int | None = None, silence_seconds: float = 0.0):
        if not silence_seconds >= 0:
            raise ValueError(f"silence_seconds must be at least 0, got {silence_seconds}")
        self.silence = np.zeros(round(silence_seconds * SAMPLING_RATE), np.float32)
        try:
            import moonshine_cpp
            import onnx  # noqa: F401  (scripts.ort_format reads the model files with it)
            import onnxruntime
        except ImportError as error:
            raise UserError(MISSING) from error
        folder = Path(moonshine_cpp.__file__).parent / "models" / "base-en"
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.encoder = self.session(folder / "encoder_model.ort", options)
        self.decoder = self.session(folder / "decoder_model_merged.ort", options)
        self.tokens = read_tokenizer(folder / "tokenizer.bin")
        self.cache_inputs = [node for node in self.decoder.get_inputs() if node.name.startswith("past_key_values")]
        self.outputs = [node.name for node in self.decoder.get_outputs()]

    @staticmethod
    def session(path: Path, options):
        """An ONNX Runtime session of the ORT-format file at path, read back as ONNX so that ONNX Runtime folds its
        int8 weights into float32 once rather than on every call (scripts/ort_format.py)."""
        import onnxruntime

        return onnxruntime.InferenceSession(onnx_model(path).SerializeToString(), options,
                                            providers=["CPUExecutionProvider"])

    def transcribe_audio(self, audio: np.ndarray) -> str:
        """What Moonshine hears in mono float audio at 16 kHz (with the judge's silence around it), as it writes it."""
        heard = np.concatenate([self.silence, np.asarray(audio, dtype=np.float32), self.silence])[None]
        max_tokens = int(heard.shape[1] / SAMPLING_RATE * TOKENS_PER_SECOND) + 1
        states = self.encoder.run(None, {"input_values": heard})[0]
        cache = {node.name: np.zeros((1, node.shape[1], 0, node.shape[3]), np.float32) for node in self.cache_inputs}
        said: list[int] = []
        token = START
        for step in range(max_tokens):
            results = self.decoder.run(None, {"input_ids": np.array([[token]], np.int64),
                                              "encoder_hidden_states": states,
                                              "use_cache_branch": np.array([step > 0]), **cache})
            token = int(results[0][0, -1].argmax())
            for name, value in zip(self.outputs[1:], results[1:]):
                # The encoder's keys and values are computed at the first step and kept; the decoder's grow.
                if step == 0 or ".decoder." in name:
                    cache[name.replace("present", "past_key_values")] = value
            if token == END:
                break
            said.append(token)
        text = b"".join(self.tokens[token] for token in said if token < len(self.tokens))
        return text.decode("utf-8", errors="replace").replace("\u2581", " ").strip()

    def transcribe(self, paths: list[Path]) -> list[str]:
        """Each sound file (any rate, channels mixed) as Moonshine writes what it hears."""
        return [self.transcribe_audio(load_wav(Path(path), SAMPLING_RATE, source=str(path), mix_to_mono=True,
                                               resample=True).numpy()) for path in paths]
