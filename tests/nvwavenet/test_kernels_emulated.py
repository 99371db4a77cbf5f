"""The CUDA kernels' own sources, run on the CPU emulation backend (csrc/device_emulation.h), against fp64.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_emulated.py

Every layer's residual output and gated activation, the skip sum and the logits of every sample are compared with
an independent float64 reference, in fp32 and fp16 (whose reference uses the same fp16-rounded weights, so the
comparison measures the kernels' arithmetic and indexing, not quantisation), for each variant, several shapes,
batch groupings and chunkings, and three fiber schedules. The sampled classes are checked against inverse-CDF
sampling of the kernel's own logits. A correct kernel gives bit-identical results under every schedule and
chunking, so those are compared exactly: a missing barrier or a racy hand-off shows up as a difference.
"""
from __future__ import annotations

import os
import shutil

import pytest
import torch

from nvwavenet import kernels
from nvwavenet.incremental import conditioning_for_samples, export_inference_weights, generate
from nvwavenet.model import WaveNet
from tests.nvwavenet.kernel_reference import TOLERANCE, check_sampling, inputs, random_export, reference

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="no C++ compiler to build the emulation library")


@pytest.fixture(scope="session", autouse=True)
def emulation_library():
    """Built once per session (and cached on disk by source hash, so usually just loaded)."""
    return kernels.emulation_library()


# variant, precision, R, S, A, layers, max dilation, batch, batch per block, samples, chunk, persistent output blocks
CASES = [
    ("single", "fp32", 32, 64, 64, 4, 4, 2, 1, 20, 7, 1),
    ("single", "fp32", 32, 64, 64, 4, 4, 4, 2, 12, 12, 1),
    ("single", "fp16", 32, 64, 64, 4, 4, 4, 2, 12, 5, 1),
    ("single", "fp32", 64, 32, 128, 5, 8, 1, 1, 20, 20, 1),
    ("single", "fp16", 64, 32, 128, 5, 8, 2, 2, 20, 9, 1),
    ("dual", "fp32", 32, 64, 64, 4, 4, 2, 1, 20, 7, 1),
    ("dual", "fp16", 32, 64, 64, 4, 4, 4, 2, 12, 12, 1),
    ("dual", "fp32", 64, 32, 128, 3, 2, 1, 1, 16, 5, 1),
    ("persistent", "fp32", 32, 64, 64, 4, 4, 4, 1, 16, 6, 2),  # 4 batch groups pipelined, 2 output blocks
    ("persistent", "fp32", 32, 64, 64, 3, 2, 4, 2, 12, 12, 1),
    ("persistent", "fp16", 32, 64, 64, 4, 4, 2, 1, 12, 5, 1),
    ("persistent", "fp16", 64, 32, 128, 5, 8, 4, 2, 16, 7, 2),
    ("persistent", "fp32", 128, 64, 64, 4, 4, 2, 1, 12, 5, 2),  # 128-register fp32 rows, 384 threads per block
    ("persistent", "fp32", 128, 64, 64, 3, 2, 4, 2, 10, 10, 1),
]


def case_id(case) -> str:
    variant, precision, R, S, A, L, _, B, per_block = case[:9]
    return f"{variant}-{precision}-R{R}S{S}A{A}-L{L}-B{B}x{per_block}"


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_teacher_forced_activations_and_logits_match_fp64(case):
    variant, precision, R, S, A, L, max_dilation, B, per_block, T, chunk, output_blocks = case
    exported = random_export(R, S, A, L, max_dilation)
    weights = kernels.pack_weights(exported, precision)
    conditioning, forced, selectors = inputs(R, L, B, T, A)
    runs = {schedule: kernels.run_emulated(weights, conditioning, selectors, variant=variant,
                                           batch_per_block=per_block, output_blocks=output_blocks,
                                           forced_classes=forced, chunk_size=chunk, schedule=schedule, seed=7)
            for schedule in ("forward", "reverse", "random")}
    expected = reference(kernels.effective_weights(exported, precision), conditioning, forced, A // 2)
    run = runs["forward"]
    for name in ("x", "h", "skip", "logits"):
        torch.testing.assert_close(run.dumps[name].double(), expected[name], **TOLERANCE, msg=lambda m: f"{name}: {m}")
    check_sampling(run.dumps["logits"], selectors, run.classes)
    for schedule in ("reverse", "random"):  # same arithmetic in the same order: bit-identical or a race
        for name in ("x", "h", "skip", "logits"):
            assert torch.equal(runs[schedule].dumps[name], run.dumps[name]), f"{schedule} schedule changed {name}"
        assert torch.equal(runs[schedule].classes, run.classes)


def test_fp16_reference_differs_from_fp32_so_the_fp16_check_is_not_vacuous():
    exported = random_export(32, 64, 64, 4, 4)
    conditioning, forced, selectors = inputs(32, 4, 2, 8, 64)
    fp16 = kernels.run_emulated(kernels.pack_weights(exported, "fp16"), conditioning, selectors, variant="single",
                                batch_per_block=1, forced_classes=forced)
    fp32_reference = reference(kernels.effective_weights(exported, "fp32"), conditioning, forced, 32)
    assert (fp16.dumps["logits"].double() - fp32_reference["logits"]).abs().max() > 100 * TOLERANCE["atol"]


@pytest.mark.parametrize("variant,precision,per_block,output_blocks",
                         [("single", "fp32", 1, 1), ("dual", "fp16", 2, 1), ("persistent", "fp32", 1, 2)])


def test_free_running_generation_matches_fp64_driven_by_the_kernels_own_samples(variant, precision, per_block,
                                                                               output_blocks):
    R, S, A, L, B, T = 32, 64, 64, 4, 2, 24
    exported = random_export(R, S, A, L, 4, seed=3)
    conditioning, _, selectors = inputs(R, L, B, T, A, seed=4)
    run = kernels.run_emulated(kernels.pack_weights(exported, precision), conditioning, selectors, variant=variant,
                               batch_per_block=per_block, output_blocks=output_blocks, chunk_size=10)
    expected = reference(kernels.effective_weights(exported, precision), conditioning, run.classes.T, A // 2)
    for name in ("x", "skip", "logits"):
        torch.testing.assert_close(run.dumps[name].double(), expected[name], **TOLERANCE)
    check_sampling(run.dumps["logits"], selectors, run.classes)
    assert len(set(run.classes.flatten().tolist())) > 5  # it really samples, not a constant


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["single", "dual", "persistent"])
def test_chunking_does_not_change_a_bit(variant):
    exported = random_export(32, 64, 64, 4, 4, seed=5)
    weights = kernels.pack_weights(exported, "fp32")
    conditioning, _, selectors = inputs(32, 4, 2, 16, 64, seed=6)
    runs = [kernels.run_emulated(weights, conditioning, selectors, variant=variant, batch_per_block=1, chunk_size=c)
            for c in (16, 1, 5)]
    for other in runs[1:]:
        assert torch.equal(other.classes, runs[0].classes)
        assert torch.equal(other.dumps["logits"], runs[0].dumps["logits"])


def test_chunks_shrink_to_the_conditioning_limit_without_changing_a_bit(monkeypatch):
    # On a GPU, chunks of 2048 samples at batch >= ~400 (20 layers) exceed the kernels' 2^31-value index limit and
    # were refused; run_kernels must shorten them instead. Here the limit is lowered to three samples' worth.
    R, L, B, T = 32, 3, 2, 14
    exported = random_export(R, 64, 64, L, 2, seed=10)
    weights = kernels.pack_weights(exported, "fp32")
    conditioning, _, selectors = inputs(R, L, B, T, 64, seed=11)
    whole = kernels.run_emulated(weights, conditioning, selectors, variant="persistent", batch_per_block=1)
    monkeypatch.setattr(kernels, "CONDITIONING_CHUNK_ELEMENTS", 3 * L * B * 2 * R + 5)
    requested = []

    def chunk(start, stop):
        requested.append((start, stop))
        return conditioning[start:stop]

    backend = kernels.emulation_library()
    backend.configure("forward", 0, 30.0)
    limited = kernels.run_kernels(backend, weights, chunk, selectors, variant="persistent", batch_per_block=1,
                                  chunk_size=2048, dumps=True)
    assert requested == [(s, min(s + 3, T)) for s in range(0, T, 3)]
    assert torch.equal(limited.classes, whole.classes)
    assert torch.equal(limited.dumps["logits"], whole.dumps["logits"])


def test_without_tanh_and_with_a_nonzero_silence_class():
    exported = random_export(32, 64, 64, 3, 2, seed=8)
    exported["embedding_tanh"] = torch.tensor(False)
    weights = kernels.pack_weights(exported, "fp32", silence_class=5)
    conditioning, forced, selectors = inputs(32, 3, 1, 10, 64, seed=9)
    run = kernels.run_emulated(weights, conditioning, selectors, variant="persistent", batch_per_block=1,
                               forced_classes=forced)
    expected = reference(kernels.effective_weights(exported, "fp32"), conditioning, forced, 5)
    torch.testing.assert_close(run.dumps["logits"].double(), expected["logits"], **TOLERANCE)


# ---------------------------------------------------------------------------------------------------------------
# The trained model's weights through the kernels


def small_model(seed: int = 0) -> WaveNet:
    torch.manual_seed(seed)
    return WaveNet(n_mel_channels=8, hop_length=8, residual_channels=32, skip_channels=64, out_channels=64,
                   n_layers=4, max_dilation=4).double().eval()


def test_teacher_forced_kernel_logits_equal_model_forward():
    model = small_model()
    generator = torch.Generator().manual_seed(2)
    mel = torch.randn(2, 8, 5, generator=generator, dtype=torch.float64)
    classes = torch.randint(0, 64, (2, 40), generator=generator)
    with torch.no_grad():
        expected = model(mel, classes)  # (B, A, T)
        exported = export_inference_weights(model)
        conditioning = conditioning_for_samples(exported, model.upsample_mel(mel), 0, 40)
    weights = kernels.pack_weights(exported, "fp32", silence_class=model.silence)
    for variant in ("single", "persistent"):
        run = kernels.run_emulated(weights, conditioning.float(), torch.rand(40, 2), variant=variant,
                                   batch_per_block=2 if variant == "single" else 1, forced_classes=classes.T,
                                   chunk_size=16)
        torch.testing.assert_close(run.dumps["logits"].permute(1, 2, 0).double(), expected, **TOLERANCE)


def test_free_running_kernel_samples_equal_the_cpu_incremental_path():
    model = small_model(seed=1)
    generator = torch.Generator().manual_seed(3)
    mel = torch.randn(2, 8, 4, generator=generator, dtype=torch.float64)
    selectors = torch.rand(2, 32, generator=generator, dtype=torch.float64)
    cpu_classes = generate(model, mel, selectors=selectors)
    with torch.no_grad():
        exported = export_inference_weights(model)
        conditioning = conditioning_for_samples(exported, model.upsample_mel(mel), 0, 32)
    run = kernels.run_emulated(kernels.pack_weights(exported, "fp32", silence_class=model.silence),
                               conditioning.float(), selectors.T.float(), variant="dual", batch_per_block=1)
    assert torch.equal(run.classes, cpu_classes)


# ---------------------------------------------------------------------------------------------------------------
# The emulator itself


def test_barriers_count_only_live_threads():
    assert kernels.emulation_library().self_test("early_exit") == ""


def test_a_barrier_mismatch_inside_a_block_is_reported_not_hung():
    report = kernels.emulation_library().self_test("mismatched_barrier")
    assert report.startswith("reported: ") and "deadlock inside block 0" in report, report
    assert "1 at a warp collective" in report and "63 at block_sync" in report, report


def test_warp_collectives_follow_cuda_semantics():
    assert kernels.emulation_library().self_test("collectives") == ""


# ---------------------------------------------------------------------------------------------------------------
# Failing clearly


@pytest.mark.parametrize("variant,R,compiled", [
    ("single", 64, r"no single-block fp32 kernel for R=64, S=64, A=64.*Compiled"),
    ("single", 128, r"no single-block fp32 kernel for R=128, S=64, A=64.*Compiled"),  # 5R rows per block
    ("dual", 128, r"no dual-block fp32 kernel for R=128, S=64, A=64.*Compiled"),
    ("persistent", 256, r"no persistent fp32 kernel for R=256, S=64, A=64.*Compiled.* 128/64/64x1"),
])


def test_unsupported_shape_is_an_error_listing_what_is_compiled(variant, R, compiled):
    weights = kernels.pack_weights(random_export(R, 64, 64, 2, 2), "fp32")
    conditioning, _, selectors = inputs(R, 2, 1, 4, 64)
    with pytest.raises(RuntimeError, match=compiled):
        kernels.run_emulated(weights, conditioning, selectors, variant=variant, batch_per_block=1)


def test_bad_arguments_are_errors():
    weights = kernels.pack_weights(random_export(32, 64, 64, 2, 2), "fp32")
    conditioning, _, selectors = inputs(32, 2, 3, 4, 64)
    with pytest.raises(RuntimeError, match="multiple of batch_per_block"):
        kernels.run_emulated(weights, conditioning, selectors, variant="single", batch_per_block=2)
    conditioning, _, selectors = inputs(32, 2, 2, 4, 64)
    with pytest.raises(RuntimeError, match="output_blocks must be 1..2"):
        kernels.run_emulated(weights, conditioning, selectors, variant="persistent", batch_per_block=1,
                             output_blocks=3)
    with pytest.raises(ValueError, match="variant must be one of"):
        kernels.run_emulated(weights, conditioning, selectors, variant="manyblock", batch_per_block=1)
    with pytest.raises(ValueError, match=r"conditioning\(0, 4\) must have shape"):
        kernels.run_emulated(weights, conditioning[:, :1], selectors, variant="single", batch_per_block=1)


class SkippingFirstChunk(kernels._Backend):
    """Drops the first launch, so the second finds no state: its blocks wait for flags nobody will set."""

    def __init__(self, inner):
        self.inner, self.name, self.device, self.launches = inner, inner.name, inner.device, 0

    def launch(self, args, stream):
        self.launches += 1
        if self.launches > 1:
            self.inner.launch(args, stream)

    def state_elements(self, args):
        return self.inner.state_elements(args)


def test_an_inter_block_deadlock_fails_with_a_message_instead_of_hanging():
    backend = kernels.emulation_library()
    backend.configure("forward", 0, 0.5)
    weights = kernels.pack_weights(random_export(32, 64, 64, 2, 2), "fp32")
    conditioning, _, selectors = inputs(32, 2, 1, 8, 64)
    try:
        with pytest.raises(RuntimeError, match=r"(?s)made no progress for .*inter-block deadlock.*thread 0 waits for flag"):
            kernels.run_kernels(SkippingFirstChunk(backend), weights, lambda a, b: conditioning[a:b], selectors,
                                variant="dual", batch_per_block=1, chunk_size=4)
    finally:
        backend.configure("forward", 0, 30.0)


class LimitedCapacity(kernels._Backend):
    """The emulation library, pretending the device holds only `capacity` resident blocks."""

    def __init__(self, inner, capacity):
        self.inner, self.name, self.device, self.blocks = inner, inner.name, inner.device, capacity

    def capacity(self, args):
        return self.blocks

    def kernels(self):
        return self.inner.kernels()


def test_launch_plans_fit_the_device_or_fail_clearly():
    weights = kernels.pack_weights(random_export(32, 64, 64, 3, 2), "fp32")  # compiled for 1 or 2 per block
    roomy = kernels.emulation_library()
    assert kernels.plan_launch(roomy, weights, 3, "single") == kernels.LaunchPlan("single", 1, 1, 3)
    assert kernels.plan_launch(roomy, weights, 3, "persistent") == kernels.LaunchPlan("persistent", 2, 2, 4)
    # Two resident blocks: a batch of 4 packs 2 columns per block to keep every block resident.
    assert kernels.plan_launch(LimitedCapacity(roomy, 2), weights, 4, "single").batch_per_block == 2
    with pytest.raises(ValueError, match="dual-block kernel needs 4 co-resident blocks for batch 4, .* holds 2"):
        kernels.plan_launch(LimitedCapacity(roomy, 2), weights, 4, "dual")
    with pytest.raises(ValueError, match="persistent kernel needs 10 co-resident blocks for 3 layers"):
        kernels.plan_launch(LimitedCapacity(roomy, 9), weights, 1, "persistent")
    with pytest.raises(ValueError, match="no dual kernel is compiled for fp16 R=64 S=32 A=128"):
        kernels.plan_launch(roomy, kernels.pack_weights(random_export(64, 32, 128, 3, 2), "fp16"), 1, "dual")


def test_the_emulation_library_lists_its_kernels_like_the_source_says():
    assert kernels.emulation_library().kernels() == kernels.kernel_list("emulation")
