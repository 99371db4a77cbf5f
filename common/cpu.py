"""What this machine's CPU computes in hardware. bf16 is native only with AVX512-BF16 or AMX; elsewhere (an AVX2-only
CPU) oneDNN cannot run bf16 matrix products and PyTorch falls back to a reference kernel: a bf16 autocast step of
`make demo-asr`'s model took 6.5 s there against 0.29 s in fp32 (wav2vec2/RESULTS.md, "bf16 and CPUs")."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

NO_NATIVE_BF16 = ("this CPU has no native bf16 (avx512_bf16 or amx_bf16), or ONEDNN_MAX_CPU_ISA keeps oneDNN from "
                  "it: bf16 matrix products are emulated, about 20 times slower than fp32")


# oneDNN's instruction sets, lowest first (its ONEDNN_MAX_CPU_ISA values): from AVX512_CORE_BF16 on it computes bf16
# products in hardware; a limit below that leaves a bf16-capable CPU emulating them, as an AVX2-only CPU does.
ONEDNN_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI",
               "AVX512_CORE_BF16", "AVX10_1_512", "AVX512_CORE_FP16", "AVX10_1_512_AMX", "AVX512_CORE_AMX",
               "AVX10_1_512_AMX_FP16", "AVX512_CORE_AMX_FP16", "ALL", "DEFAULT")
FIRST_BF16_ISA = ONEDNN_ISAS.index("AVX512_CORE_BF16")


def onednn_allows_bf16() -> bool:
    """Whether ONEDNN_MAX_CPU_ISA (unset: no limit) lets oneDNN use the CPU's bf16 instructions."""
    limit = os.environ.get("ONEDNN_MAX_CPU_ISA", os.environ.get("DNNL_MAX_CPU_ISA", "ALL")).strip().upper()
    return limit not in ONEDNN_ISAS or ONEDNN_ISAS.index(limit) >= FIRST_BF16_ISA


def native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX512-BF16 or AMX) and oneDNN is allowed to use it."""
    checks = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(check() for check in checks if check is not None) and onednn_allows_bf16()


def default_dtype(device: torch.device, bf16_within_tolerance: bool) -> torch.dtype:
    """What a model runs in when no precision is asked for: bf16 autocast on a CPU that computes bf16 natively, for a
    model whose bf16 output was measured within its stated tolerance (bf16_within_tolerance, the family's own
    constant); fp32 everywhere else (a GPU keeps fp32 unless --amp or --bf16 is given, as NVIDIA's scripts do)."""
    if device.type == "cpu" and bf16_within_tolerance and native_bf16():
        return torch.bfloat16
    return torch.float32


def vectorized_half_products() -> bool:
    """Whether ATen's CPU kernels run with AVX2 or AVX-512 (x86; not with ATEN_CPU_CAPABILITY=default), where its
    float16 matrix-vector product converts and sums in SIMD registers: there a float16 weight is read at half
    float32's bytes and the product runs 3-5x faster for weights larger than the cache; its scalar kernel is 2x
    slower than float32's (measured for Tacotron 2's decoder, tacotron2/RESULTS.md)."""
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def vectorized_int8_products() -> bool:
    """Whether int8 products run on PyTorch's x86 quantized engine (FBGEMM) with AVX2 or AVX-512, where a recognizer's
    int8 linear layers were measured 1.4-1.6x (every kernel held to AVX2) and 2.1-2.5x (AVX-512) faster than float32's
    (docs/benchmarks.md); elsewhere (ARM's engine, no SIMD) int8 was not measured. FBGEMM takes its ISA from the CPU
    and FBGEMM_ENABLE_INSTRUCTIONS, not from ATEN_CPU_CAPABILITY, which this reads as the CPU's."""
    return (torch.backends.quantized.engine in ("x86", "fbgemm")
            and torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"))


def cpu_description() -> str:
    """lscpu's model name and the flags that decide which kernels run."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    shown = [flag for flag in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags]
    return f"{model}; flags: {' '.join(shown) or 'none of avx2, fma, avx512f, avx512_bf16, amx_bf16'}"


if __name__ == "__main__":  # for shell scripts: exit status 0 where bf16 is native
    raise SystemExit(0 if native_bf16() else 1)
