"""The CUDA kernels on a real GPU against the fp64 reference, and the Python API around them.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_gpu.py

Without a CUDA GPU (and a CUDA build of PyTorch) the GPU tests are skipped with the reason, and what runs checks
that the module imports and says that only the CPU path is available. The first GPU test compiles the extension
(several minutes; cached afterwards by source hash).
"""
from __future__ import annotations

import json

import pytest
import torch

from nvwavenet import benchmark, kernels
from nvwavenet.incremental import select_by_inverse_cdf, teacher_forced_logits
from nvwavenet.model import WaveNet
from tests.nvwavenet.kernel_reference import TOLERANCE, check_sampling, inputs, random_export, reference

CUDA_USABLE, CUDA_REASON = kernels.cuda_status()
needs_gpu = pytest.mark.skipif(not CUDA_USABLE, reason=CUDA_REASON)


def gpu_model(residual: int = 64, skip: int = 128, layers: int = 6, seed: int = 0) -> WaveNet:
    torch.manual_seed(seed)
    return WaveNet(n_mel_channels=80, hop_length=64, residual_channels=residual, skip_channels=skip,
                   out_channels=256, n_layers=layers, max_dilation=8).eval()


# ---------------------------------------------------------------------------------------------------------------
# Without CUDA


@pytest.mark.skipif(CUDA_USABLE, reason="CUDA is available here: the CPU-only behaviour cannot be observed")
def test_without_cuda_only_the_cpu_path_is_reported_and_the_gpu_api_says_so():
    usable, reason = kernels.cuda_status()
    assert not usable and "only the CPU path (nvwavenet.incremental.generate)" in reason
    with pytest.raises(RuntimeError, match="only the CPU path"):
        kernels.KernelVocoder(gpu_model(layers=2))


def test_benchmark_runs_the_cpu_path_and_records_why_gpu_rows_are_missing(tmp_path):
    output = tmp_path / "benchmark.json"
    benchmark.main(["--models", "medium", "--cpu-samples", "32", "--output", str(output)]
                   + ([] if not CUDA_USABLE else ["--precisions", "fp16", "--gpu-samples", "512", "--max-batch", "4",
                                                   "--auto-batches", "1"]))
    results = json.loads(output.read_text())
    cpu = [row for row in results["rows"] if row["implementation"] == "cpu"]
    assert len(cpu) == 1 and cpu[0]["samples_per_second"] > 0
    if not CUDA_USABLE:
        assert results["gpu"] == {"available": False, "reason": CUDA_REASON}
        assert all(row["implementation"] == "cpu" for row in results["rows"])
    else:
        gpu = {row["implementation"]: row for row in results["rows"] if row["implementation"] != "cpu"}
        assert set(gpu) == {"single", "dual", "persistent", "auto"}
        for variant in ("single", "dual", "persistent"):
            assert "error" not in gpu[variant] and gpu[variant]["samples_per_second"] > 0, gpu[variant]
        assert gpu["auto"]["auto_choice"] in gpu["auto"]["rates"], gpu["auto"]


# ---------------------------------------------------------------------------------------------------------------
# On a GPU

GPU_CASES = [  # variant, precision, R, S, batch, batch per block
    ("single", "fp32", 64, 128, 4, 2),
    ("single", "fp16", 64, 256, 4, 4),
    ("single", "fp16", 32, 128, 1, 1),
    ("dual", "fp32", 64, 128, 4, 2),
    ("dual", "fp16", 32, 256, 2, 1),
    ("persistent", "fp32", 64, 256, 4, 2),
    ("persistent", "fp16", 64, 128, 8, 2),
    ("persistent", "fp16", 128, 256, 2, 1),
    ("persistent", "fp32", 128, 256, 2, 1),
    ("persistent", "fp32", 128, 128, 4, 2),
]


@needs_gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(map(str, c)))
def test_gpu_kernels_match_fp64_reference(case):
    variant, precision, R, S, B, per_block = case
    A, L, T = 256, 8, 48
    exported = random_export(R, S, A, L, max_dilation=8, seed=11)
    weights = kernels.pack_weights(exported, precision).to("cuda")
    conditioning, forced, selectors = inputs(R, L, B, T, A, seed=12)
    backend = kernels.cuda_library()
    groups = B // per_block
    run = kernels.run_kernels(backend, weights, lambda a, b: conditioning[a:b].cuda(), selectors.cuda(),
                              variant=variant, batch_per_block=per_block, output_blocks=min(2, groups),
                              forced_classes=forced, chunk_size=20, dumps=True,
                              stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    expected = reference(kernels.effective_weights(exported, precision), conditioning, forced, A // 2)
    for name in ("x", "h", "skip", "logits"):
        torch.testing.assert_close(run.dumps[name].cpu().double(), expected[name], rtol=2 * TOLERANCE["rtol"],
                                   atol=2 * TOLERANCE["atol"], msg=lambda m: f"{name}: {m}")
    check_sampling(run.dumps["logits"].cpu(), selectors, run.classes.cpu())


@needs_gpu
@pytest.mark.parametrize("variant", ["single", "dual", "persistent"])
def test_kernel_vocoder_samples_like_the_incremental_cpu_path(variant):
    model = gpu_model()
    generator = torch.Generator().manual_seed(5)
    mel = torch.randn(3, 80, 4, generator=generator)
    selectors = torch.rand(3, 4 * 64, generator=generator, dtype=torch.float64)
    classes = kernels.KernelVocoder(model, "fp32").generate_classes(mel, variant, selectors=selectors,
                                                                   chunk_size=100).cpu()
    # The CPU path's logits along the kernel's own trajectory must pick the same classes (up to float ties).
    logits = teacher_forced_logits(model.cpu().double(), mel.double(), classes)  # (B, A, T)
    expected = torch.stack([select_by_inverse_cdf(logits[:, :, t], selectors[:, t]) for t in range(classes.shape[1])],
                           dim=1)
    mismatches = (expected != classes).sum().item()
    assert mismatches <= 1, f"{mismatches} samples differ from inverse-CDF sampling of the CPU path's logits"


@needs_gpu
def test_auto_implementation_returns_audio_and_unsupported_shapes_fail_clearly():
    vocoder = kernels.KernelVocoder(gpu_model(layers=4), "fp16")
    audio = vocoder(torch.randn(2, 80, 3), "auto")
    assert audio.shape == (2, 3 * 64) and torch.isfinite(audio).all() and audio.abs().max() <= 1
    with pytest.raises(ValueError, match="no single kernel is compiled for fp32 R=128"):
        kernels.KernelVocoder(gpu_model(residual=128, skip=256, layers=2), "fp32").generate_classes(
            torch.randn(1, 80, 1), "single")


@needs_gpu
def test_inference_vocoder_on_the_gpu_is_seeded_and_matches_its_requested_kernel():
    # nvwavenet/vocoder.py is what inference.py --wavenet runs: the same seed must give the same audio, and "auto"
    # must give the audio of the kernel it picked (same uniforms, same weights).
    from common.audio import AudioParams
    from nvwavenet.vocoder import WaveNetVocoder
    model = gpu_model(layers=4).cuda()
    mel = torch.randn(2, 80, 3, generator=torch.Generator().manual_seed(9)).cuda()
    auto = WaveNetVocoder(model, AudioParams(), "auto", "fp16", seed=3)
    first, again = auto(mel), auto(mel)
    assert first.shape == (2, 3 * 64) and first.is_cuda and torch.isfinite(first).all()
    assert torch.equal(first, again)
    picked = auto.kernels._auto_choice[2]
    assert torch.equal(WaveNetVocoder(model, AudioParams(), picked, "fp16", seed=3)(mel), first)
