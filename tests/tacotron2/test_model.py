import argparse
import inspect
import io
import logging

import pytest
import torch
import torch.nn.functional as F

from common.arguments import config_from_args
from common.trained_model import load_trained_model
from common.registry import get_recipe
from common.training_settings import add_training_args
from tacotron2.arg_parser import Tacotron2TrainingSettings, add_args, loss_config, model_config
from tacotron2.alignment import alignment_health
from tacotron2.loss_function import Tacotron2Loss
from tacotron2.model import Prenet, Tacotron2, build_model
from tests.tacotron2.tiny_tacotron2 import TINY, padded_text, tiny_model, training_batch


def stop_when_attention_reaches_end(model: Tacotron2, threshold: float = 1.0) -> None:
    """Make the gate fire once an utterance has put `threshold` attention on its last symbol: stops that differ
    between utterances and depend only on each utterance's own state, as a trained model's do."""
    original = model.decoder.step

    def step(prenet_output, state, memory, processed_memory, padding):
        frames, _, state = original(prenet_output, state, memory, processed_memory, padding)
        last = (~padding).sum(1, keepdim=True) - 1
        reached = state.attention_weights_cum.gather(1, last).squeeze(1) > threshold
        return frames, torch.where(reached, 10.0, -10.0), state

    model.decoder.step = step


# ---------------------------------------------------------------------------------------------------------------
# NVIDIA checkpoint compatibility


def reference_state_dict_shapes() -> dict[str, tuple]:
    """The 84 keys and shapes of NVIDIA's published Tacotron 2 state dict (reference notes, section 3.1)."""
    shapes = {"embedding.weight": (148, 512)}

    def batch_norm(prefix, channels):
        for name in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{prefix}.{name}"] = (channels,)
        shapes[f"{prefix}.num_batches_tracked"] = ()

    for i in range(3):
        shapes[f"encoder.convolutions.{i}.0.conv.weight"] = (512, 512, 5)
        shapes[f"encoder.convolutions.{i}.0.conv.bias"] = (512,)
        batch_norm(f"encoder.convolutions.{i}.1", 512)
    for suffix in ("", "_reverse"):
        shapes[f"encoder.lstm.weight_ih_l0{suffix}"] = (1024, 512)
        shapes[f"encoder.lstm.weight_hh_l0{suffix}"] = (1024, 256)
        shapes[f"encoder.lstm.bias_ih_l0{suffix}"] = (1024,)
        shapes[f"encoder.lstm.bias_hh_l0{suffix}"] = (1024,)
    shapes["decoder.prenet.layers.0.linear_layer.weight"] = (256, 80)
    shapes["decoder.prenet.layers.1.linear_layer.weight"] = (256, 256)
    for rnn, input_size in (("attention_rnn", 768), ("decoder_rnn", 1536)):
        shapes[f"decoder.{rnn}.weight_ih"] = (4096, input_size)
        shapes[f"decoder.{rnn}.weight_hh"] = (4096, 1024)
        shapes[f"decoder.{rnn}.bias_ih"] = (4096,)
        shapes[f"decoder.{rnn}.bias_hh"] = (4096,)
    attention = "decoder.attention_layer"
    shapes[f"{attention}.query_layer.linear_layer.weight"] = (128, 1024)
    shapes[f"{attention}.memory_layer.linear_layer.weight"] = (128, 512)
    shapes[f"{attention}.v.linear_layer.weight"] = (1, 128)
    shapes[f"{attention}.location_layer.location_conv.conv.weight"] = (32, 2, 31)
    shapes[f"{attention}.location_layer.location_dense.linear_layer.weight"] = (128, 32)
    shapes["decoder.linear_projection.linear_layer.weight"] = (80, 1536)
    shapes["decoder.linear_projection.linear_layer.bias"] = (80,)
    shapes["decoder.gate_layer.linear_layer.weight"] = (1, 1536)
    shapes["decoder.gate_layer.linear_layer.bias"] = (1,)
    for i, (out_channels, in_channels) in enumerate([(512, 80), (512, 512), (512, 512), (512, 512), (80, 512)]):
        shapes[f"postnet.convolutions.{i}.0.conv.weight"] = (out_channels, in_channels, 5)
        shapes[f"postnet.convolutions.{i}.0.conv.bias"] = (out_channels,)
        batch_norm(f"postnet.convolutions.{i}.1", out_channels)
    assert len(shapes) == 84
    return shapes


@pytest.fixture(scope="module")
def default_model() -> Tacotron2:
    return Tacotron2()


def test_state_dict_names_and_shapes_equal_nvidias(default_model):
    shapes = {name: tuple(value.shape) for name, value in default_model.state_dict().items()}
    assert shapes == reference_state_dict_shapes()
    assert sum(p.numel() for p in default_model.parameters()) == 28_193_153


def test_a_state_dict_with_nvidias_names_loads_strictly(default_model):
    generator = torch.Generator().manual_seed(0)
    published = {name: (torch.tensor(7) if name.endswith("num_batches_tracked")
                        else torch.randn(shape, generator=generator))
                 for name, shape in reference_state_dict_shapes().items()}
    default_model.load_state_dict(published, strict=True)
    assert torch.equal(default_model.decoder.gate_layer.linear_layer.bias,
                       published["decoder.gate_layer.linear_layer.bias"])
    assert torch.equal(default_model.encoder.lstm.weight_hh_l0_reverse, published["encoder.lstm.weight_hh_l0_reverse"])


def test_nvidia_training_checkpoint_builds_from_its_config(tmp_path):
    """NVIDIA's train.py saves {'epoch', rng states, 'config' (the constructor keywords), 'state_dict' (DDP's
    module. prefix), 'optimizer', 'scaler'}; inference builds the model from that config, flags not needed."""
    trained = tiny_model(seed=5, n_frames_per_step=2)
    path = tmp_path / "checkpoint_Tacotron2_1500.pt"
    torch.save({"epoch": 1500, "cuda_rng_state_all": torch.zeros(1, 16, dtype=torch.uint8),
                "random_rng_states_all": torch.zeros(1, 5056, dtype=torch.uint8),
                "config": dict(TINY, n_frames_per_step=2),
                "state_dict": {f"module.{key}": value for key, value in trained.state_dict().items()},
                "optimizer": torch.optim.Adam(trained.parameters()).state_dict(), "scaler": {}}, path)
    model, _ = load_trained_model(get_recipe("Tacotron2"), path, torch.device("cpu"), published_config={})
    assert model.n_frames_per_step == 2 and not model.training
    assert all(torch.equal(value, trained.state_dict()[key]) for key, value in model.state_dict().items())


def test_build_model_from_a_plain_dict_and_unknown_keys_are_named():
    model = build_model(dict(TINY, n_frames_per_step=2))
    assert model.n_frames_per_step == 2
    with pytest.raises(ValueError, match="unknown keys \\['n_speakers'\\]"):
        build_model(dict(TINY, n_speakers=4))


# ---------------------------------------------------------------------------------------------------------------
# Training forward


def test_forward_shapes_unsorted_batch():
    model = tiny_model()
    batch = training_batch([4, 9, 6], [11, 17, 14])
    out = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    assert out.mel.shape == out.mel_postnet.shape == (3, 8, 17)
    assert out.gate.shape == (3, 17)
    assert out.alignments.shape == (3, 17, 9)
    valid_symbols = torch.arange(9)[None, None, :] < batch["text_lengths"][:, None, None]
    assert torch.allclose(out.alignments.sum(2), torch.ones(3, 17), atol=1e-5)
    assert float(out.alignments.detach().masked_select(~valid_symbols.expand_as(out.alignments)).abs().max()) == 0.0


def test_batch_of_one_trains_a_step():
    model = tiny_model()
    batch = training_batch([5], [12])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = model.decoder.linear_projection.linear_layer.weight.detach().clone()
    out = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    loss = Tacotron2Loss()(out, batch)["loss"]
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    optimizer.step()
    assert not torch.equal(before, model.decoder.linear_projection.linear_layer.weight)


@pytest.mark.parametrize("r", [2, 3])
def test_reduction_factor_shapes_and_loss(r):
    model = tiny_model(n_frames_per_step=r)
    batch = training_batch([4, 7], [11, 8])  # 11 frames: not a multiple of r, the model needs no padding
    out = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    steps = -(-11 // r)
    assert out.mel.shape == out.mel_postnet.shape == (2, 8, 11)
    assert out.gate.shape == (2, steps) and out.alignments.shape == (2, steps, 7)
    assert torch.isfinite(Tacotron2Loss(n_frames_per_step=r)(out, batch)["loss"])
    with pytest.raises(ValueError, match="pass the model's n_frames_per_step"):
        Tacotron2Loss(n_frames_per_step=1)(out, batch)

    padded = training_batch([4, 7], [11, 8], multiple=r)  # what the collate gives: padded to a multiple of r
    out = model(padded["text"], padded["text_lengths"], padded["mel"], padded["mel_lengths"])
    assert out.gate.shape == (2, padded["mel"].size(2) // r)

    model.eval()
    stop_when_attention_reaches_end(model)
    text, lengths = padded_text([3, 8, 5])
    result = model.infer(text, lengths, generator=torch.Generator().manual_seed(0))
    assert (result.mel_lengths % r == 0).all() and (result.mel_lengths > 0).all()
    assert result.mel.shape[2] == int(result.mel_lengths.max())
    assert result.alignments.shape[1] == int(result.mel_lengths.max()) // r


def test_mask_padding_sets_pad_frames_to_zero_and_pad_gates_to_1e3():
    batch = training_batch([4, 7], [11, 6])
    plain, masked = tiny_model(), tiny_model(mask_padding=True)
    masked.load_state_dict(plain.state_dict())
    plain.eval(), masked.eval()  # so only the (seeded) prenet dropout is random
    args = (batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    out_plain = plain(*args, generator=torch.Generator().manual_seed(3))
    out_masked = masked(*args, generator=torch.Generator().manual_seed(3))
    assert out_plain.mel[1, :, 6:].abs().sum() > 0  # without masking the decoder's padding output is kept
    for name in ("mel", "mel_postnet"):
        assert getattr(out_masked, name)[1, :, 6:].abs().sum() == 0
        assert torch.equal(getattr(out_masked, name)[1, :, :6], getattr(out_plain, name)[1, :, :6])
    assert (out_masked.gate[1, 6:] == 1e3).all() and torch.equal(out_masked.gate[0], out_plain.gate[0])
    assert torch.equal(out_masked.gate[1, :6], out_plain.gate[1, :6])


def test_prenet_masks_come_from_the_generator_or_the_caller():
    model = tiny_model().eval()
    batch = training_batch([4, 7], [10, 6])
    args = (batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    seeded = model(*args, generator=torch.Generator().manual_seed(5))
    masks = model.decoder.prenet.draw_keep_masks([2, 10], torch.device("cpu"), torch.Generator().manual_seed(5))
    assert torch.equal(model(*args, prenet_masks=masks).mel, seeded.mel)
    assert not torch.equal(model(*args, generator=torch.Generator().manual_seed(6)).mel, seeded.mel)


def test_prenet_with_keep_masks_is_nvidias_dropout():
    """NVIDIA's prenet is relu(linear(x)) followed by F.dropout(p=0.5, training=True) = x * keep_mask * 2."""
    prenet = Prenet(8, 16)
    x = torch.randn(3, 8)
    masks = prenet.draw_keep_masks([3], torch.device("cpu"), torch.Generator().manual_seed(0))
    expected = x
    for layer, keep in zip(prenet.layers, masks):
        expected = F.relu(F.linear(expected, layer.linear_layer.weight)) * keep.float() * 2.0
    assert torch.allclose(prenet(x, masks), expected)
    assert 0.3 < masks.float().mean() < 0.7


def test_bad_lengths_are_clear_errors():
    model = tiny_model()
    text, _ = padded_text([4, 6])
    with pytest.raises(ValueError, match=r"text_lengths must lie in \[1, 6\]"):
        model.infer(text, torch.tensor([0, 6]))
    batch = training_batch([4, 6], [8, 5])
    with pytest.raises(ValueError, match=r"mel_lengths must lie in \[1, 8\]"):
        model(batch["text"], batch["text_lengths"], batch["mel"], torch.tensor([9, 5]))


@pytest.mark.slow
def test_tiny_model_overfits_one_batch():
    model = tiny_model(seed=1)
    batch = training_batch([5, 8], [20, 24])
    loss_function = Tacotron2Loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        out = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
        loss = loss_function(out, batch)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0], losses


# ---------------------------------------------------------------------------------------------------------------
# Inference


def test_inference_length_counts_the_step_where_the_gate_fires():
    """NVIDIA's infer stops one short; training marks the last real frame with gate 1, so it must be counted."""
    for r in (1, 3):
        model = tiny_model(n_frames_per_step=r).eval()
        with torch.no_grad():
            model.decoder.gate_layer.linear_layer.weight.zero_()
            model.decoder.gate_layer.linear_layer.bias.fill_(5.0)  # fires at the first step
        text, lengths = padded_text([3, 6])
        result = model.infer(text, lengths)
        assert result.mel_lengths.tolist() == [r, r]
        assert result.mel.shape == (2, 8, r) and not result.hit_max_decoder_steps.any()


def test_without_early_stopping_decoding_runs_to_max_steps_but_lengths_follow_the_gate():
    model = tiny_model(decoder_no_early_stopping=True, max_decoder_steps=6).eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.weight.zero_()
        model.decoder.gate_layer.linear_layer.bias.fill_(5.0)
    text, lengths = padded_text([3, 6])
    result = model.infer(text, lengths)
    assert result.alignments.shape[1] == 6 and result.mel_lengths.tolist() == [1, 1]
    assert result.mel[:, :, 1:].abs().sum() == 0 and not result.hit_max_decoder_steps.any()


def test_inference_in_any_length_order_returns_input_order():
    model = tiny_model().eval()
    stop_when_attention_reaches_end(model)
    text, lengths = padded_text([3, 8, 5, 6])
    result = model.infer(text, lengths, generator=torch.Generator().manual_seed(0))
    assert len(set(result.mel_lengths.tolist())) > 1  # the utterances do stop at different steps
    order = torch.tensor([1, 3, 2, 0])  # longest text first, as NVIDIA's code demands
    sorted_result = model.infer(text[order], lengths[order], generator=torch.Generator().manual_seed(0))
    assert torch.equal(sorted_result.mel_lengths, result.mel_lengths[order])
    assert torch.allclose(sorted_result.mel, result.mel[order], atol=1e-5)
    assert torch.allclose(sorted_result.alignments, result.alignments[order], atol=1e-5)


def test_batched_inference_equals_one_by_one():
    model = tiny_model().eval()
    stop_when_attention_reaches_end(model)
    text, lengths = padded_text([3, 8, 5, 6])
    batched = model.infer(text, lengths, generator=torch.Generator().manual_seed(4))
    assert len(set(batched.mel_lengths.tolist())) > 1
    for i, length in enumerate(lengths.tolist()):
        single = model.infer(text[i:i + 1, :length], lengths[i:i + 1], generator=torch.Generator().manual_seed(4))
        n_frames = int(single.mel_lengths[0])
        assert int(batched.mel_lengths[i]) == n_frames
        assert torch.allclose(batched.mel[i, :, :n_frames], single.mel[0], atol=1e-5)
        assert batched.mel[i, :, n_frames:].abs().sum() == 0
        assert torch.allclose(batched.alignments[i, :n_frames, :length], single.alignments[0], atol=1e-5)
        assert batched.alignments[i, n_frames:].abs().sum() == 0


def test_a_seed_reproduces_inference():
    model = tiny_model().eval()
    text, lengths = padded_text([4, 7])
    first = model.infer(text, lengths, max_decoder_steps=20, generator=torch.Generator().manual_seed(9))
    again = model.infer(text, lengths, max_decoder_steps=20, generator=torch.Generator().manual_seed(9))
    other = model.infer(text, lengths, max_decoder_steps=20, generator=torch.Generator().manual_seed(10))
    assert torch.equal(first.mel, again.mel) and torch.equal(first.alignments, again.alignments)
    assert first.mel.shape != other.mel.shape or not torch.allclose(first.mel, other.mel)


def test_max_decoder_steps_is_warned_per_utterance_and_reported(caplog):
    model = tiny_model().eval()
    stop_when_attention_reaches_end(model)
    text, lengths = padded_text([3, 8, 5, 6])
    free = model.infer(text, lengths, generator=torch.Generator().manual_seed(0)).mel_lengths
    cap = int(free.float().median())
    expected = [i for i, n in enumerate(free.tolist()) if n > cap]
    assert 0 < len(expected) < 4
    with caplog.at_level(logging.WARNING, logger="tacotron2.model"):
        result = model.infer(text, lengths, max_decoder_steps=cap, generator=torch.Generator().manual_seed(0))
    assert result.hit_max_decoder_steps.nonzero().flatten().tolist() == expected
    assert result.mel_lengths.tolist() == [min(n, cap) for n in free.tolist()]
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == len(expected)
    for index, message in zip(expected, warned):
        assert f"utterance {index} of the batch reached max_decoder_steps={cap}" in message


def test_per_call_gate_threshold_overrides_the_constructor():
    model = tiny_model(gate_threshold=0.5).eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.weight.zero_()
        model.decoder.gate_layer.linear_layer.bias.fill_(1.0)  # stop probability 0.73 at every step
    text, lengths = padded_text([4])
    assert model.infer(text, lengths).mel_lengths.tolist() == [1]
    assert model.infer(text, lengths, gate_threshold=0.9, max_decoder_steps=7).mel_lengths.tolist() == [7]


def test_torchscript_inference_on_cpu_equals_eager():
    model = tiny_model().eval()
    saved = io.BytesIO()
    torch.jit.save(torch.jit.script(model), saved)
    saved.seek(0)
    scripted = torch.jit.load(saved)
    text, lengths = padded_text([5, 3, 7])
    eager = model.infer(text, lengths, max_decoder_steps=15, generator=torch.Generator().manual_seed(2))
    script = scripted.infer(text, lengths, max_decoder_steps=15, generator=torch.Generator().manual_seed(2))
    assert torch.equal(eager.mel_lengths, script.mel_lengths)
    assert torch.allclose(eager.mel, script.mel, atol=1e-6)
    assert torch.allclose(eager.alignments, script.alignments, atol=1e-6)
    assert torch.equal(eager.hit_max_decoder_steps, script.hit_max_decoder_steps)


# ---------------------------------------------------------------------------------------------------------------
# Alignment health


def test_alignment_health_sharp_diagonal_scores_high_and_flat_or_stuck_low():
    steps, symbols = 60, 20
    diagonal = torch.zeros(1, steps, symbols)
    diagonal[0, torch.arange(steps), torch.arange(steps) * symbols // steps] = 1.0
    flat = torch.full((1, steps, symbols), 1.0 / symbols)
    scattered = torch.softmax(torch.randn(1, steps, symbols, generator=torch.Generator().manual_seed(0)) * 3, 2)
    stuck = torch.zeros(1, steps, symbols)
    stuck[0, :, 0] = 1.0
    text_lengths, mel_lengths = torch.tensor([symbols]), torch.tensor([steps])

    good = alignment_health(diagonal, text_lengths, mel_lengths)
    assert good["score"] > 0.95 and good["diagonality"] > 0.95 and good["focus"] > 0.95
    for bad in (flat, scattered, stuck):
        report = alignment_health(bad, text_lengths, mel_lengths)
        assert report["score"] < 0.3, report
        assert all(0.0 <= value <= 1.0 for value in report.values())


def test_alignment_health_ignores_padding_and_counts_reduction_factor():
    diagonal = torch.zeros(2, 12, 10)
    diagonal[0, torch.arange(12), torch.arange(12) * 10 // 12] = 1.0
    diagonal[1, torch.arange(6), torch.arange(6) * 4 // 6] = 1.0  # utterance 1: 4 symbols, 6 steps
    diagonal[1, 6:, :] = 0.1  # garbage past its end must not count
    report = alignment_health(diagonal, torch.tensor([10, 4]), torch.tensor([24, 12]), n_frames_per_step=2)
    assert report["score"] > 0.95


# ---------------------------------------------------------------------------------------------------------------
# Command-line flags


def parser() -> argparse.ArgumentParser:
    """The model's flags and the run's: every flag but the two required ones, given here."""
    parser = argparse.ArgumentParser()
    add_training_args(parser, Tacotron2TrainingSettings)
    add_args(parser)
    parser.set_defaults(output="unused", learning_rate=1e-3)
    for action in parser._actions:
        action.required = False
    return parser


def test_flag_defaults_are_the_reference_defaults_and_build_the_default_model():
    args = parser().parse_args([])
    config = model_config(args)
    defaults = {name: p.default for name, p in inspect.signature(Tacotron2.__init__).parameters.items()
                if name != "self"}
    # Our flags (two dropouts, the stop after the text's end) are saved only when changed, so a default config has
    # NVIDIA's keys alone.
    ours = {"p_encoder_dropout": 0.5, "p_postnet_dropout": 0.5, "max_frames_after_text_end": 40}
    assert config == {name: value for name, value in defaults.items() if name not in ours}
    assert {name: defaults[name] for name in ours} == ours
    settings = Tacotron2TrainingSettings(output="unused", learning_rate=1e-3)
    assert loss_config(settings, config["n_frames_per_step"]) == {
        "guided_attn_weight": 0.0, "guided_attn_sigma": 0.2, "n_frames_per_step": 1, "mask_padding_in_loss": True,
        "mel_loss": "mse"}


def test_encoder_and_postnet_dropout_flags_are_saved_when_changed_and_reach_the_layers():
    config = model_config(parser().parse_args(["--p-encoder-dropout", "0", "--p-postnet-dropout", "0.2"]))
    assert (config["p_encoder_dropout"], config["p_postnet_dropout"]) == (0.0, 0.2)
    model = tiny_model(p_encoder_dropout=0.0, p_postnet_dropout=0.2)
    assert (model.encoder.dropout, model.postnet.dropout) == (0.0, 0.2)
    # Without dropout the training-mode encoder is deterministic; with NVIDIA's 0.5 it is not.
    text, lengths = padded_text([6, 3])
    model.train()
    assert torch.equal(model.encode(text, lengths), model.encode(text, lengths))
    nvidia = tiny_model().train()
    assert nvidia.encoder.dropout == 0.5 and not torch.equal(nvidia.encode(text, lengths), nvidia.encode(text, lengths))
    with pytest.raises(SystemExit):
        parser().parse_args(["--p-postnet-dropout", "1.5"])


def test_flags_parse_and_reject_bad_values(capsys):
    args = parser().parse_args(["--mask-padding", "--n-frames-per-step", "3", "--guided-attn-weight", "2.5",
                                "--decoder-no-early-stopping", "--loss-over-padding"])
    config = model_config(args)
    assert config["mask_padding"] is True and config["n_frames_per_step"] == 3
    assert config["decoder_no_early_stopping"] is True
    loss = loss_config(config_from_args(Tacotron2TrainingSettings, args), config["n_frames_per_step"])
    assert (loss["guided_attn_weight"], loss["mask_padding_in_loss"], loss["n_frames_per_step"]) == (2.5, False, 3)
    for bad in (["--mask-padding", "False"], ["--n-frames-per-step", "0"], ["--encoder-kernel-size", "4"],
                ["--gate-threshold", "1.5"], ["--guided-attn-sigma", "0"], ["--prenet-dimm", "8"]):
        with pytest.raises(SystemExit):
            parser().parse_args(bad)
    assert "--encoder-kernel-size: must be odd" in capsys.readouterr().err
