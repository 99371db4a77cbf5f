"""common/cpu.py: whether bf16 is native here, as the trainer's warning, demo_asr.sh and the benchmarks ask."""
import os
import subprocess
import sys

import pytest
import torch

from common.cpu import ONEDNN_ISAS, cpu_description

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAS_BF16_INSTRUCTIONS = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def native_bf16_in_a_process_with(isa: str | None) -> bool:
    """`python -m common.cpu`'s answer (exit status 0: native) under ONEDNN_MAX_CPU_ISA=isa (None: unset)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
    if isa is not None:
        environment["ONEDNN_MAX_CPU_ISA"] = isa
    completed = subprocess.run([sys.executable, "-m", "common.cpu"], cwd=ROOT, env=environment)
    assert completed.returncode in (0, 1)
    return completed.returncode == 0


@pytest.mark.parametrize("isa, allowed", [(None, True), ("AVX2", False), ("avx512_core", False),
                                          ("AVX512_CORE_BF16", True), ("AVX512_CORE_AMX", True), ("ALL", True)])
def test_bf16_is_native_only_where_the_cpu_has_it_and_onednn_may_use_it(isa, allowed):
    assert native_bf16_in_a_process_with(isa) == (HAS_BF16_INSTRUCTIONS and allowed)


def test_the_isa_names_are_onednn_s_and_bf16_starts_at_avx512_core_bf16():
    assert ONEDNN_ISAS.index("AVX2") < ONEDNN_ISAS.index("AVX512_CORE") < ONEDNN_ISAS.index("AVX512_CORE_BF16")
    assert ONEDNN_ISAS.index("AVX512_CORE_BF16") < ONEDNN_ISAS.index("AVX512_CORE_AMX")


def test_the_cpu_description_names_the_flags_that_choose_the_kernels():
    description = cpu_description()
    assert "; flags: " in description
    flags = description.split("; flags: ")[1].split()
    assert set(flags) <= {"avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16"} or flags[0] == "none"


@pytest.mark.parametrize("products", ["vectorized_half_products", "vectorized_int8_products"])
@pytest.mark.parametrize("capability, vectorized", [("avx2", True), ("default", False)])
def test_products_count_as_vectorized_only_with_avx2_or_better(products, capability, vectorized):
    """ATEN_CPU_CAPABILITY=default runs ATen's scalar kernels, where a float16 weight is slower than float32's; the
    int8 default follows the same setting (its x86 engine is there on every x86 build of torch)."""
    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("this CPU's ATen kernels are not x86 AVX2 or AVX-512")
    environment = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    completed = subprocess.run([sys.executable, "-c", f"from common.cpu import {products} as v; "
                                "raise SystemExit(0 if v() else 1)"], cwd=ROOT, env=environment)
    assert completed.returncode == (0 if vectorized else 1)
