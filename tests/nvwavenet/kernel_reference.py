"""The float64 reference the nv-wavenet kernels are checked against, random exported weights and inputs for them, and
the check of their inverse-CDF sampling (test_kernels_emulated.py on the CPU emulation, test_kernels_gpu.py on a GPU).
"""
from __future__ import annotations

import torch

TOLERANCE = dict(rtol=1e-5, atol=1e-5)  # fp32 arithmetic over a few layers: observed errors are ~1e-6


def random_export(R: int, S: int, A: int, layers: int, max_dilation: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """export_inference_weights-style weights, scaled so that activations are O(1) and gates are not saturated."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(*shape, fan_in):
        return (torch.rand(*shape, generator=generator, dtype=torch.float64) * 2 - 1) * 1.7 / fan_in ** 0.5

    def normal(*shape, std):
        return torch.randn(*shape, generator=generator, dtype=torch.float64) * std

    cycle = max_dilation.bit_length()
    return {"embedding_prev": normal(A, R, std=0.5), "embedding_cur": normal(A, R, std=0.5),
            "dilated_weight_prev": uniform(layers, 2 * R, R, fan_in=R),
            "dilated_weight_cur": uniform(layers, 2 * R, R, fan_in=R), "dilated_bias": normal(layers, 2 * R, std=0.1),
            "res_weight": uniform(layers, R, R, fan_in=R), "res_bias": normal(layers, R, std=0.1),
            "skip_weight": uniform(layers, S, R, fan_in=R), "skip_bias": normal(layers, S, std=0.1),
            "hidden_weight": uniform(A, S, fan_in=S), "hidden_bias": normal(A, std=0.1),
            "logits_weight": 2 * uniform(A, A, fan_in=A), "logits_bias": normal(A, std=0.1),
            "dilations": torch.tensor([2 ** (i % cycle) for i in range(layers)]),
            "embedding_tanh": torch.tensor(True)}


def reference(weights: dict[str, torch.Tensor], conditioning: torch.Tensor, fed_back: torch.Tensor,
              silence: int) -> dict[str, torch.Tensor]:
    """Float64 WaveNet step by step, feeding back fed_back (T, B). Returns x, h (T, L, B, R), skip (T, B, S) after
    relu, logits (T, B, A): the layout of the kernels' dumps."""
    w = {k: v.double() if v.is_floating_point() else v for k, v in weights.items()}
    T, L, B, two_r = conditioning.shape
    R = two_r // 2
    inputs = torch.zeros(L, T, B, R, dtype=torch.float64)  # x_l[s], for the dilated taps
    out = {"x": torch.zeros(T, L, B, R, dtype=torch.float64), "h": torch.zeros(T, L, B, R, dtype=torch.float64)}
    skips, logits = [], []
    two_back = one_back = torch.full((B,), silence)
    for s in range(T):
        x = w["embedding_prev"][two_back] + w["embedding_cur"][one_back]
        x = torch.tanh(x) if bool(w["embedding_tanh"]) else x
        skip = 0
        for layer, dilation in enumerate(w["dilations"].tolist()):
            inputs[layer, s] = x
            past = inputs[layer, s - dilation] if s >= dilation else torch.zeros_like(x)
            a = (past @ w["dilated_weight_prev"][layer].T + x @ w["dilated_weight_cur"][layer].T
                 + w["dilated_bias"][layer] + conditioning[s, layer].double())
            h = torch.tanh(a[:, :R]) * torch.sigmoid(a[:, R:])
            x = x + h @ w["res_weight"][layer].T + w["res_bias"][layer]
            skip = skip + h @ w["skip_weight"][layer].T + w["skip_bias"][layer]
            out["x"][s, layer], out["h"][s, layer] = x, h
        skips.append(torch.relu(skip))
        hidden = torch.relu(skips[-1] @ w["hidden_weight"].T + w["hidden_bias"])
        logits.append(hidden @ w["logits_weight"].T + w["logits_bias"])
        two_back, one_back = one_back, fed_back[s]
    out["skip"], out["logits"] = torch.stack(skips), torch.stack(logits)
    return out


def check_sampling(logits: torch.Tensor, selectors: torch.Tensor, classes: torch.Tensor) -> None:
    """classes (B, T) must be the first class whose cumulative mass reaches u * total, over the kernel's logits.
    Only a threshold within float rounding of a cumulative sum may go either way."""
    unnormalised = torch.exp(logits.double() - logits.double().amax(-1, keepdim=True))
    cumulative = unnormalised.cumsum(-1)
    target = selectors.double() * cumulative[..., -1]
    expected = torch.searchsorted(cumulative, target.unsqueeze(-1)).squeeze(-1).clamp(max=logits.shape[-1] - 1)
    for s, b in (expected != classes.T).nonzero().tolist():  # expected (T, B), classes (B, T)
        chosen, want = int(classes[b, s]), int(expected[s, b])
        margin = abs(float(target[s, b] - cumulative[s, b, min(chosen, want)]))
        assert margin < 1e-5 * float(cumulative[s, b, -1]), (
            f"sample {s} column {b}: kernel chose class {chosen}, inverse CDF gives {want}")


def inputs(R: int, L: int, B: int, T: int, A: int, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    conditioning = (torch.randn(T, L, B, 2 * R, generator=generator) * 0.5).float()
    forced = torch.randint(0, A, (T, B), generator=generator)
    selectors = torch.rand(T, B, generator=generator)
    return conditioning, forced, selectors
