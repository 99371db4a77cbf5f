"""A tiny WaveGlow with random (non-identity) couplings and its inputs (tests/waveglow/test_model.py,
test_fast_path.py)."""
import torch

from waveglow.model import WaveGlow

TINY = dict(n_mel_channels=8, flows=4, groups=8, early_every=2, early_size=2, wn_channels=16, wn_layers=2,
            wn_kernel_size=3, hop_length=256, win_length=1024)
MEL_FRAMES = 8  # 2048 samples


def tiny_model(seed: int = 0, dtype=torch.float32, **overrides) -> WaveGlow:
    torch.manual_seed(seed)
    model = WaveGlow(**{**TINY, **overrides})
    # The end layers start at zero (identity couplings); random ones make the couplings do something to test.
    with torch.no_grad():
        for wn in model.WN:
            wn.end.weight.normal_(0, 0.05)
            wn.end.bias.normal_(0, 0.05)
    return model.to(dtype)


def mel_and_audio(batch_size=2, frames=MEL_FRAMES, n_mel=8, dtype=torch.float32, seed=1):
    generator = torch.Generator().manual_seed(seed)
    mel = torch.randn(batch_size, n_mel, frames, generator=generator).to(dtype)
    audio = (0.3 * torch.randn(batch_size, frames * 256, generator=generator)).to(dtype)
    return mel, audio
