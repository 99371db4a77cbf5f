"""Compile gate for the CUDA kernels: no GPU needed, only nvcc.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_compile.py
    NVWAVENET_FULL_COMPILE_GATE=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_compile.py  # all

Builds kernel instantiations for sm_80 and sm_90 with `ptxas -v` and fails when a persistent or fp16 kernel spills
registers to local memory (those kernels keep weight rows in registers: a spill turns every weight read into
a memory access). The default run compiles one representative instantiation per variant and precision (the
largest shapes, where spills would show first); NVWAVENET_FULL_COMPILE_GATE=1 compiles every instantiation of
csrc/instantiations.h exactly as the extension build does, which takes several minutes on 2 cores.
fp32 single/dual kernels may spill a little (R = 64 fp32 rows need 64 of their 128 registers); that is reported,
not failed. The full gate also links the PyTorch extension from those objects and imports it (no GPU needed to
load it), checking that its kernel list and argument struct agree with nvwavenet/kernels.py.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from torch.utils import cpp_extension

from nvwavenet.kernels import CSRC, CUDA_FLAGS, CUDA_KERNEL_SOURCES, NvwArgs, _decode_entry, kernel_list

ARCHS = ("80", "90")
FULL_GATE = os.environ.get("NVWAVENET_FULL_COMPILE_GATE") == "1"
# One per variant and precision, at the shapes with the most registers per thread.
REPRESENTATIVE = [
    ("single", "fp32", 64, 128, 256, 2),
    ("single", "fp16", 64, 256, 256, 4),
    ("dual", "fp32", 64, 128, 256, 1),
    ("dual", "fp16", 64, 256, 256, 2),
    ("persistent", "fp32", 64, 256, 256, 4),
    ("persistent", "fp16", 128, 256, 256, 2),
]
KERNEL_NAMES = {"single": "single_block_kernel", "dual": "dual_block_kernel", "persistent": "persistent_kernel"}


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


NVCC = find_nvcc()


def cuda_library_dir() -> Path | None:
    """The lib64 holding libcudart (nvcc may be a wrapper script outside the CUDA tree)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    if NVCC:
        roots.insert(2, str(Path(NVCC).resolve().parents[1]))
    for root in filter(None, roots):
        if any((Path(root) / "lib64").glob("libcudart.so*")):
            return Path(root) / "lib64"
    return None
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found (set NVCC or put it on PATH): no compile gate")


def gencode(arch: str) -> str:
    return f"-gencode=arch=compute_{arch},code=sm_{arch}"


def compile_with_ptxas_report(source: Path, output: Path, archs=ARCHS) -> str:
    # C++17: the oldest standard the kernels must build with (PyTorch builds the extension as C++17 or C++20).
    # PyTorch's own nvcc defines (no implicit half conversions...) as in the extension build.
    command = [NVCC, *cpp_extension.COMMON_NVCC_FLAGS, *CUDA_FLAGS, "-std=c++17", "--compiler-options=-fPIC", "-c",
               *map(gencode, archs), "-Xptxas=-v", f"-I{CSRC}", str(source), "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-6000:]}"
    return result.stderr


def parse_ptxas(report: str) -> list[dict]:
    """ptxas -v output -> one dict per (kernel, arch): name (demangled), arch, registers, spill_stores/loads."""
    entries = []
    for block in re.split(r"(?=ptxas info\s+: Compiling entry function)", report):
        head = re.search(r"Compiling entry function '(\w+)' for 'sm_(\d+)'", block)
        if not head:
            continue
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
        registers = re.search(r"Used (\d+) registers", block)
        assert spills and registers, f"unexpected ptxas report for {head.group(1)}:\n{block}"
        entries.append({"mangled": head.group(1), "arch": head.group(2), "registers": int(registers.group(1)),
                        "spill_stores": int(spills.group(1)), "spill_loads": int(spills.group(2))})
    if entries:
        demangled = subprocess.run(["c++filt"], input="\n".join(e["mangled"] for e in entries), capture_output=True,
                                   text=True).stdout.splitlines()
        for entry, name in zip(entries, demangled):
            entry["name"] = name
    return entries


def config_of(name: str) -> tuple[str, str, int, int, int, int] | None:
    """'void nvw::persistent_kernel<nvw::KernelConfig<(nvw::Precision)1, 128, 256, 256, 2> >(nvw::NvwArgs)' -> tuple."""
    match = re.search(r"nvw::(\w+_kernel)<nvw::KernelConfig<\(nvw::Precision\)(\d), (\d+), (\d+), (\d+), (\d+)", name)
    if not match:
        return None
    variant = {v: k for k, v in KERNEL_NAMES.items()}[match.group(1)]
    return (variant, ("fp32", "fp16")[int(match.group(2))], *map(int, match.groups()[2:]))


def check_no_gated_spills(entries: list[dict], expected: list[tuple]) -> list[str]:
    """Fails on spills in persistent or fp16 kernels; returns report lines for every kernel."""
    seen, failures, lines = set(), [], []
    for entry in entries:
        config = config_of(entry["name"])
        if config is None:  # the init kernel
            continue
        seen.add((config, entry["arch"]))
        spilled = entry["spill_stores"] + entry["spill_loads"]
        lines.append(f"sm_{entry['arch']} {config}: {entry['registers']} registers, {entry['spill_stores']} B spill "
                     f"stores, {entry['spill_loads']} B spill loads")
        if spilled and (config[0] == "persistent" or config[1] == "fp16"):
            failures.append(lines[-1])
    missing = [(config, arch) for config in expected for arch in ARCHS if (tuple(config), arch) not in seen]
    assert not missing, f"ptxas reported no entry for {missing}"
    assert not failures, "register spills in kernels that must keep their weights in registers:\n" + \
        "\n".join(failures)
    return lines


def test_representative_instantiations_build_for_sm80_and_sm90_without_spills(tmp_path):
    source = tmp_path / "representative.cu"
    source.write_text("#define NVW_DEFINE_LAUNCHERS\n#include \"instantiations.h\"\n#include \"launch.h\"\n" +
                      "".join(f"NVW_INSTANTIATE({v}, {p}, {r}, {s}, {a}, {b})\n" for v, p, r, s, a, b in
                              REPRESENTATIVE))
    lines = check_no_gated_spills(parse_ptxas(compile_with_ptxas_report(source, tmp_path / "r.o")), REPRESENTATIVE)
    print("\n".join(lines))


def test_the_c_api_builds_with_nvcc(tmp_path):
    # The dispatcher sees only launcher declarations: no kernel may be compiled here (that is the per-variant files'
    # job, so ninja can build them in parallel). ptxas reporting only the init kernel proves it.
    entries = parse_ptxas(compile_with_ptxas_report(CSRC / "cuda_api.cu", tmp_path / "api.o", archs=("90",)))
    assert [config_of(e["name"]) for e in entries] == [None], [e["name"] for e in entries]


def test_every_representative_config_is_in_the_instantiation_list():
    compiled = set(kernel_list("gpu"))
    assert set(REPRESENTATIVE) <= compiled
    # R in {32, 64, 128}, S in {128, 256}, A = 256 are all covered by some variant, in both precisions where the
    # registers allow (fp32 R = 128 rows would not fit).
    for r in (32, 64, 128):
        for s in (128, 256):
            precisions = ("fp16",) if r == 128 else ("fp32", "fp16")
            for precision in precisions:
                assert any(e[1:5] == (precision, r, s, 256) for e in compiled), (precision, r, s)


@pytest.mark.skipif(not FULL_GATE, reason="set NVWAVENET_FULL_COMPILE_GATE=1 to build every instantiation")
def test_full_gate_every_instantiation(tmp_path):
    def build(name: str) -> str:
        return compile_with_ptxas_report(CSRC / name, tmp_path / f"{name}.o")

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        reports = list(pool.map(build, [*CUDA_KERNEL_SOURCES, "cuda_api.cu"]))
    entries = [entry for report in reports for entry in parse_ptxas(report)]
    lines = check_no_gated_spills(entries, kernel_list("gpu"))
    print("\n".join(lines))

    # Link the extension as torch.utils.cpp_extension would and load it: it must import without a GPU.
    compiler = os.environ.get("CXX", "g++")
    includes = [f"-I{path}" for path in [*cpp_extension.include_paths(), sysconfig.get_paths()["include"], CSRC]]
    objects = [str(tmp_path / f"{name}.o") for name in [*CUDA_KERNEL_SOURCES, "cuda_api.cu"]]
    torch_lib = Path(cpp_extension.__file__).parents[1] / "lib"  # torch/utils/cpp_extension.py -> torch/lib
    cuda_lib = cuda_library_dir()
    assert cuda_lib is not None, "libcudart not found: set CUDA_HOME"
    module = tmp_path / "nvwavenet_gate_extension.so"
    for command in (
        [compiler, "-std=c++20", "-O1", "-fPIC", "-DTORCH_EXTENSION_NAME=nvwavenet_gate_extension",
         "-DTORCH_API_INCLUDE_EXTENSION_H", *includes, "-c", str(CSRC / "extension.cpp"), "-o",
         str(tmp_path / "extension.o")],
        [compiler, "-shared", str(tmp_path / "extension.o"), *objects, f"-L{torch_lib}", "-lc10", "-ltorch",
         "-ltorch_cpu", "-ltorch_python", f"-L{cuda_lib}", "-lcudart", f"-Wl,-rpath,{torch_lib}",
         f"-Wl,-rpath,{cuda_lib}", "-o", str(module)],
    ):
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-6000:]}"
    spec = importlib.util.spec_from_file_location("nvwavenet_gate_extension", module)
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    assert extension.args_size() == ctypes.sizeof(NvwArgs)
    assert [_decode_entry(entry) for entry in extension.kernels()] == kernel_list("gpu")
