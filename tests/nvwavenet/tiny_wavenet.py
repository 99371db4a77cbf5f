"""A tiny WaveNet, its inputs and its conditioning's impulse response (tests/nvwavenet/test_model.py,
test_incremental.py)."""
import torch

from nvwavenet.model import WaveNet

TINY = dict(n_mel_channels=8, hop_length=16, residual_channels=8, skip_channels=16, out_channels=16, n_layers=4,
            max_dilation=4)
FRAMES = 32  # 512 samples


def tiny_model(seed: int = 0, dtype=torch.float64, **overrides) -> WaveNet:
    torch.manual_seed(seed)
    return WaveNet(**{**TINY, **overrides}).to(dtype).eval()


def tiny_inputs(batch: int = 2, seed: int = 1, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    mel = torch.randn(batch, TINY["n_mel_channels"], FRAMES, generator=generator, dtype=dtype)
    classes = torch.randint(0, TINY["out_channels"], (batch, FRAMES * TINY["hop_length"]), generator=generator)
    return mel, classes


def conditioning_impulse_response(model: WaveNet, mel: torch.Tensor, classes: torch.Tensor, t: int,
                                  logits_of) -> torch.Tensor:
    """Per-sample max change of logits_of(model, mel, classes) when only sample t's upsampled mel is changed."""
    upsampled = model.upsample_mel(mel).detach()
    bumped = upsampled.clone()
    bumped[:, :, t] += 1.0
    original_upsample = model.upsample_mel
    try:
        model.upsample_mel = lambda _: upsampled
        before = logits_of(model, mel, classes)
        model.upsample_mel = lambda _: bumped
        after = logits_of(model, mel, classes)
    finally:
        model.upsample_mel = original_upsample
    return (after - before).abs().amax(dim=(0, 1))
