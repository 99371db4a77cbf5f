import numpy as np
import pytest
import torch

from nvwavenet.incremental import (conditioning_for_samples, export_inference_weights, generate,
                                   select_by_inverse_cdf, teacher_forced_logits)
from tests.nvwavenet.tiny_wavenet import conditioning_impulse_response, tiny_inputs, tiny_model


def naive_full_recompute_logits(weights: dict, conditioning: np.ndarray, samples: np.ndarray,
                                silence: int) -> np.ndarray:
    """fp64, one stream: for every t, recompute the whole causal stack over samples 0..t and keep the last logits.

    Written from the equations in model.py's docstring against the exported weights (no model code), so it checks
    the forward pass, the incremental queues and the export layout at once. conditioning (T, L, 2R), samples (T,).
    """
    w = {name: value.double().numpy() for name, value in weights.items() if value.is_floating_point()}
    dilations, embedding_tanh = weights["dilations"].tolist(), bool(weights["embedding_tanh"])
    num_samples, R = len(samples), w["embedding_cur"].shape[1]
    history = np.concatenate([[silence, silence], samples])  # history[t] = y_{t-2}
    logits = []
    for t in range(num_samples):
        x = w["embedding_prev"][history[:t + 1]] + w["embedding_cur"][history[1:t + 2]]  # (t+1, R)
        if embedding_tanh:
            x = np.tanh(x)
        skip_sum = 0.0
        for layer, dilation in enumerate(dilations):
            past = np.concatenate([np.zeros((dilation, R)), x])[:t + 1]  # x[s - d], zero before the start
            gate = (past @ w["dilated_weight_prev"][layer].T + x @ w["dilated_weight_cur"][layer].T
                    + w["dilated_bias"][layer] + conditioning[:t + 1, layer])
            gated = np.tanh(gate[:, :R]) / (1 + np.exp(-gate[:, R:]))
            skip_sum = skip_sum + gated @ w["skip_weight"][layer].T + w["skip_bias"][layer]
            x = x + gated @ w["res_weight"][layer].T + w["res_bias"][layer]
        hidden = np.maximum(0, np.maximum(0, skip_sum[t]) @ w["hidden_weight"].T + w["hidden_bias"])
        logits.append(hidden @ w["logits_weight"].T + w["logits_bias"])
    return np.stack(logits, axis=1)  # (A, T)


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [{}, {"upsampling": "repeat", "embedding_tanh": False}])
def test_incremental_equals_forward_and_naive_fp64(overrides):
    model = tiny_model(**overrides)
    mel, classes = tiny_inputs()
    with torch.no_grad():
        forward = model(mel, classes)
    incremental = teacher_forced_logits(model, mel, classes)
    torch.testing.assert_close(incremental, forward, rtol=0, atol=1e-11)

    weights = export_inference_weights(model)
    conditioning = conditioning_for_samples(weights, model.upsample_mel(mel).detach(), 0, 512)  # (T, L, B, 2R)
    for stream in range(2):
        naive = naive_full_recompute_logits(weights, conditioning[:, :, stream].numpy(), classes[stream].numpy(),
                                            model.silence)
        np.testing.assert_allclose(forward[stream].numpy(), naive, rtol=0, atol=1e-11)
    assert forward.abs().max() > 0.1  # the comparison is of real numbers, not of zeros


def test_incremental_in_float32_is_close_to_fp64():
    model = tiny_model()
    mel, classes = tiny_inputs()
    exact = teacher_forced_logits(model, mel, classes)
    single = teacher_forced_logits(model.float(), mel.float(), classes)
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), exact, rtol=0, atol=1e-4)


def test_sample_t_conditioning_first_reaches_logit_t_in_both_paths():
    model = tiny_model()
    mel, classes = tiny_inputs()
    for t in (0, 37, 511):
        forward = conditioning_impulse_response(model, mel, classes, t, lambda m, x, y: m(x, y).detach())
        incremental = conditioning_impulse_response(model, mel, classes, t, teacher_forced_logits)
        for change in (forward, incremental):
            assert torch.all(change[:t] == 0) and change[t] > 1e-3
        torch.testing.assert_close(incremental, forward, rtol=0, atol=1e-11)


def test_conditioning_chunks_cover_every_sample(monkeypatch):
    # Chunk boundaries (here every 100 samples) must not shift the conditioning.
    monkeypatch.setattr("nvwavenet.incremental.CONDITIONING_CHUNK", 100)
    model = tiny_model()
    mel, classes = tiny_inputs()
    torch.testing.assert_close(teacher_forced_logits(model, mel, classes), model(mel, classes).detach(),
                               rtol=0, atol=1e-11)


def test_export_layout():
    model = tiny_model()
    weights = export_inference_weights(model)
    R, S, A, L, n_mel = 8, 16, 16, 4, 8
    expected_shapes = {
        "embedding_prev": (A, R), "embedding_cur": (A, R), "conditioning_weight": (L, 2 * R, n_mel),
        "dilated_weight_prev": (L, 2 * R, R), "dilated_weight_cur": (L, 2 * R, R), "dilated_bias": (L, 2 * R),
        "res_weight": (L, R, R), "res_bias": (L, R), "skip_weight": (L, S, R), "skip_bias": (L, S),
        "hidden_weight": (A, S), "hidden_bias": (A,), "logits_weight": (A, A), "logits_bias": (A,),
        "dilations": (L,), "embedding_tanh": (),
    }
    assert {name: tuple(value.shape) for name, value in weights.items()} == expected_shapes
    layer = model.layers[2]
    assert torch.equal(weights["dilated_weight_prev"][2], layer.dilated_conv.weight[:, :, 0])  # tap on x[t - d]
    assert torch.equal(weights["dilated_weight_cur"][2], layer.dilated_conv.weight[:, :, 1])
    assert torch.equal(weights["conditioning_weight"][2], model.conditioning.weight[2 * 2 * R:3 * 2 * R, :, 0])
    assert torch.all(weights["res_weight"][-1] == 0) and torch.all(weights["res_bias"][-1] == 0)
    assert weights["dilations"].tolist() == [1, 2, 4, 1] and bool(weights["embedding_tanh"])
    assert all(value.is_contiguous() for value in weights.values())
    weights["embedding_cur"].add_(1)  # a copy: editing the export leaves the model alone
    assert not torch.equal(weights["embedding_cur"], model.embed_cur.weight)


def test_inverse_cdf_selection_matches_a_scan():
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(64, 16, generator=generator, dtype=torch.float64) * 3
    selectors = torch.rand(64, generator=generator, dtype=torch.float64)
    chosen = select_by_inverse_cdf(logits, selectors)
    probabilities = torch.softmax(logits, dim=1)
    for row in range(64):
        cumulative = torch.cumsum(probabilities[row], 0)
        assert chosen[row].item() == int(torch.nonzero(cumulative >= selectors[row]).min())
    # u -> 1 picks the last class with any mass; u = 0 the first.
    assert select_by_inverse_cdf(torch.zeros(1, 16), torch.tensor([0.999999])).item() == 15
    assert select_by_inverse_cdf(torch.zeros(1, 16), torch.tensor([0.0])).item() == 0


def test_seeded_sampling_is_reproducible_and_seed_dependent():
    model = tiny_model(dtype=torch.float32)
    mel, _ = tiny_inputs(dtype=torch.float32)
    mel = mel[:, :, :8]  # 128 samples
    first = generate(model, mel, generator=torch.Generator().manual_seed(0))
    again = generate(model, mel, generator=torch.Generator().manual_seed(0))
    other = generate(model, mel, generator=torch.Generator().manual_seed(1))
    assert first.shape == (2, 128) and first.dtype == torch.long
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    assert first.min() >= 0 and first.max() < 16


def test_generated_audio_is_what_the_forward_pass_would_choose():
    # Feeding a generated sequence back through the training forward pass reproduces every choice, which ties
    # the feedback order (y_{s-1} as "cur", y_{s-2} as "prev") to the training model.
    model = tiny_model()
    mel, _ = tiny_inputs()
    mel = mel[:, :, :8]
    greedy = generate(model, mel, argmax=True)
    assert torch.equal(model(mel, greedy).argmax(dim=1), greedy)
    selectors = torch.rand(2, 128, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    sampled = generate(model, mel, selectors=selectors)
    logits = model(mel, sampled).detach()
    redone = torch.stack([select_by_inverse_cdf(logits[:, :, s], selectors[:, s]) for s in range(128)], dim=1)
    assert torch.equal(redone, sampled)
    assert not torch.equal(sampled, greedy)


def test_batch_equals_one_by_one():
    model = tiny_model()
    mel, classes = tiny_inputs(batch=3)
    mel, classes = mel[:, :, :8], classes[:, :128]
    selectors = torch.rand(3, 128, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    batched = generate(model, mel, selectors=selectors)
    batched_logits = teacher_forced_logits(model, mel, classes)
    for stream in range(3):
        one = slice(stream, stream + 1)
        assert torch.equal(generate(model, mel[one], selectors=selectors[one]), batched[one])
        torch.testing.assert_close(teacher_forced_logits(model, mel[one], classes[one]), batched_logits[one],
                                   rtol=0, atol=1e-12)
    assert not torch.equal(batched[0], batched[1])


def test_generate_input_errors():
    model = tiny_model()
    mel, classes = tiny_inputs()
    with pytest.raises(ValueError, match="selectors must be"):
        generate(model, mel, selectors=torch.rand(2, 100))
    with pytest.raises(ValueError, match="no generator or selectors"):
        generate(model, mel, argmax=True, generator=torch.Generator())
    with pytest.raises(ValueError, match="8 mel channels"):
        generate(model, mel[:, :3])
    with pytest.raises(ValueError, match="mel/audio length mismatch"):
        teacher_forced_logits(model, mel, classes[:, :100])
