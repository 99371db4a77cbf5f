"""What this machine's CPU computes in hardware. bf16 is native only with AVX512-BF16 or AMX; elsewhere (an AVX2-only
CPU) oneDNN cannot run bf16 matrix products and PyTorch falls back to a reference kernel: a bf16 autocast step of
`make demo-asr`'s model took 6.5 s there against 0.29 s in fp32 (wav2vec2/RESULTS.md, "bf16 and CPUs")."""
from __future__ import annotations

import platform
from pathlib import Path

import torch

NO_NATIVE_BF16 = ("this CPU has no native bf16 (avx512_bf16 or amx_bf16): bf16 matrix products are emulated, about "
                  "20 times slower than fp32")


def native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX512-BF16 or AMX)."""
    checks = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(check() for check in checks if check is not None)


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
