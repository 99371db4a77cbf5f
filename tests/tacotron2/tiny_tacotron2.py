"""A tiny Tacotron 2 and its inputs (tests/tacotron2/test_model.py, test_fast_path.py), the conformance test's
tiny Tacotron 2 run through train.py with the per-iteration losses it logs (test_training.py, test_fast_path.py), and
a decoder made to move its attention one symbol a step, so that where it stops is exact (test_stopping.py,
test_long_text.py)."""
import torch

from common.logger import read_dllogger_file
from tacotron2.model import Tacotron2
from tests.families import run_args

TINY = dict(n_mel_channels=8, n_symbols=20, symbols_embedding_dim=32, encoder_embedding_dim=32,
            attention_rnn_dim=64, decoder_rnn_dim=64, prenet_dim=16, attention_dim=16,
            attention_location_n_filters=4, attention_location_kernel_size=5, postnet_embedding_dim=16,
            max_decoder_steps=60)


def tiny_model(seed: int = 0, **overrides) -> Tacotron2:
    torch.manual_seed(seed)
    return Tacotron2(**{**TINY, **overrides})


def padded_text(lengths: list[int], n_symbols: int = 20, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    text = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        text[row, :length] = torch.randint(1, n_symbols, (length,), generator=generator)
    return text, torch.tensor(lengths)


def training_batch(text_lengths: list[int], mel_lengths: list[int], n_mel: int = 8, multiple: int = 1) -> dict:
    text, text_lengths = padded_text(text_lengths)
    n_frames = max(mel_lengths) + (-max(mel_lengths)) % multiple
    generator = torch.Generator().manual_seed(1)
    mel = torch.zeros(len(mel_lengths), n_mel, n_frames)
    gate = torch.zeros(len(mel_lengths), n_frames)
    for row, length in enumerate(mel_lengths):
        # smooth, learnable targets: a few sinusoids per channel
        phase = torch.rand(n_mel, 1, generator=generator) * 6.28
        mel[row, :, :length] = torch.sin(torch.linspace(0, 3, length) + phase) - 2.0
        gate[row, length - 1:] = 1.0
    return {"text": text, "text_lengths": text_lengths, "mel": mel, "gate": gate,
            "mel_lengths": torch.tensor(mel_lengths)}


def train_args(corpus, output, *extra):
    return run_args("Tacotron2", corpus, output, "--epochs", "3", *extra)  # the conformance test's tiny Tacotron 2


def iteration_losses(log_file):
    return [(tuple(r["step"]), r["data"]["train_loss"]) for r in read_dllogger_file(log_file)
            if r["type"] == "LOG" and isinstance(r["step"], list) and len(r["step"]) == 2]


def attention_moves_one_symbol_a_step(model: Tacotron2) -> None:
    """Both decoder steps (and so every loop) put all attention on symbol s at step s, and on the last symbol from
    then on, whatever the weights say: the stop rule's input made exact. The steps done so far are read off the
    state (each step's one-hot weights add 1 to the cumulative ones), so this works in the graph loop too."""
    for name in ("step", "fast_step"):
        original = getattr(model.decoder, name)

        def step(prenet_output, state, memory, processed_memory, padding, *weights, original=original):
            frames, gate, new_state = original(prenet_output, state, memory, processed_memory, padding, *weights)
            steps_done = state.attention_weights_cum.float().sum(1).round().long()
            position = torch.minimum(steps_done, (~padding).sum(1) - 1)
            one_hot = torch.zeros_like(new_state.attention_weights).scatter_(1, position.unsqueeze(1), 1.0)
            return frames, gate, new_state._replace(attention_weights=one_hot,
                                                    attention_weights_cum=state.attention_weights_cum + one_hot)

        setattr(model.decoder, name, step)


def hold_gate_shut(model: Tacotron2) -> None:
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.bias.fill_(-1e4)
