"""Compile gate for the CUDA kernels: no GPU needed, only CUDA compilers. It runs with every CUDA toolkit it finds.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_compile.py
    NVWAVENET_FULL_COMPILE_GATE=1 .venv/bin/python -m pytest -q tests/nvwavenet/test_kernels_compile.py  # all

Toolkits, each with its version in the test id ([cuda13.0-nvcc], [cuda12.9-nvrtc]); an absent one is skipped, naming it:
  nvcc          $NVCC, nvcc on PATH or /usr/local/cuda: the system CUDA (13 on the development machines).
  CUDA 12       the nvidia-cuda-*-cu12 wheels of requirements-test.txt, installed in this Python's environment.
                PyPI has no CUDA 12 nvcc, only its parts: NVRTC (CUDA 12's C++ front end and NVVM optimizer, the
                ones nvcc's cicc has), ptxas, and the headers. So this toolkit compiles device code (NVRTC to PTX,
                then ptxas), not host code: the launchers and the C API are built by nvcc only. Once
                nvidia-cuda-nvcc-cu12 is installed, a failure of this toolkit fails the test.

Builds kernel instantiations for sm_80 and sm_90 with `ptxas -v` and fails when a persistent or fp16 kernel spills
registers to local memory (those kernels keep weight rows in registers: a spill turns every weight read into
a memory access). The default run compiles one representative instantiation per variant and precision (the
largest shapes, where spills would show first); NVWAVENET_FULL_COMPILE_GATE=1 compiles every instantiation of
csrc/instantiations.h, which takes several minutes on 2 cores.
fp32 single/dual kernels may spill a little (R = 64 fp32 rows need 64 of their 128 registers); that is reported,
not failed. With nvcc the full gate compiles the extension's own sources, links the PyTorch extension from them
and imports it (no GPU needed to load it), checking that its kernel list and argument struct agree with
nvwavenet/kernels.py; the CUDA 12 toolkit stops at the spill check (the extension links against the system CUDA).
"""
from __future__ import annotations

import ctypes
import importlib.metadata
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
    ("persistent", "fp32", 128, 256, 256, 2),
    ("persistent", "fp16", 128, 256, 256, 2),
]
KERNEL_NAMES = {"single": "single_block_kernel", "dual": "dual_block_kernel", "persistent": "persistent_kernel"}
# C++17: the oldest standard the kernels must build with (PyTorch builds the extension as C++17 or C++20).
# PyTorch's own nvcc defines (no implicit half conversions...) as in the extension build.
NVCC_FLAGS = [*cpp_extension.COMMON_NVCC_FLAGS, *CUDA_FLAGS, "-std=c++17"]


def gencode(arch: str) -> str:
    return f"-gencode=arch=compute_{arch},code=sm_{arch}"


def parallel_map(function, items: list) -> list:
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        return list(pool.map(function, items))


class Nvcc:
    """A full CUDA toolkit's nvcc: host and device code, as the extension build compiles them."""

    def __init__(self, path: str):
        self.path = path
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        release = re.search(r"release (\d+\.\d+)", version).group(1)  # "Cuda compilation tools, release 13.0, ..."
        self.id = f"cuda{release}-nvcc"

    def compile(self, source: Path, output: Path, archs=ARCHS) -> str:
        """Compiles source to an object; returns ptxas's report."""
        command = [self.path, *NVCC_FLAGS, "--compiler-options=-fPIC", "-c", *map(gencode, archs), "-Xptxas=-v",
                   f"-I{CSRC}", str(source), "-o", str(output)]
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-6000:]}"
        return result.stderr

    def kernel_report(self, configs: list[tuple], workdir: Path) -> str:
        # The launchers too: what the extension's kernels_<variant>_<precision>.cu files compile.
        source = workdir / "kernels.cu"
        source.write_text("#define NVW_DEFINE_LAUNCHERS\n#include \"instantiations.h\"\n#include \"launch.h\"\n" +
                          "".join(f"NVW_INSTANTIATE({v}, {p}, {r}, {s}, {a}, {b})\n" for v, p, r, s, a, b in configs))
        return self.compile(source, workdir / "kernels.o")

    def build_every_instantiation(self, workdir: Path) -> list[str]:
        """The extension's own sources, compiled to objects in workdir (the full gate links them)."""
        def build(name: str) -> str:
            return self.compile(CSRC / name, workdir / f"{name}.o")

        return parallel_map(build, [*CUDA_KERNEL_SOURCES, "cuda_api.cu"])


# NVRTC has no C++ standard library; the kernels include two of its headers, which CUDA's own libcu++ provides.
NVRTC_STANDARD_HEADERS = {
    "type_traits": "#include <cuda/std/type_traits>\nnamespace std { using namespace cuda::std; }\n",
    "stdint.h": "#include <cuda/std/cstdint>\n" + "".join(
        f"using cuda::std::{sign}int{bits}_t;\n" for sign in ("", "u") for bits in (8, 16, 32, 64)),
}


def nvrtc_and_ptxas_options(nvcc_flags: list[str]) -> tuple[list[str], list[str]]:
    """The extension's nvcc flags as NVRTC and ptxas options. A flag not known here fails the gate rather than
    being dropped, so that the CUDA 12 toolkit never quietly compiles something other than what nvcc does."""
    nvrtc, ptxas = [], ["-O3"]  # -O3: nvcc's default for ptxas
    for flag in nvcc_flags:
        if flag.startswith(("-D", "-std=")):
            nvrtc.append(flag)
        elif flag == "--expt-relaxed-constexpr":
            # NVRTC has no such flag and rejects every function not marked __device__ ("host functions are not
            # allowed in JIT mode"), the constexpr helpers of device.h included; compiling unmarked functions as
            # device code is what lets the kernels call them, as relaxed constexpr does under nvcc.
            nvrtc.append("-default-device")
        elif flag == "-lineinfo":
            nvrtc.append(flag)
            ptxas.append(flag)
        elif flag == "-O3":  # host optimisation under nvcc; NVRTC always optimises device code
            continue
        elif flag.startswith("-Xptxas="):
            ptxas.extend(flag.removeprefix("-Xptxas=").split(","))
        else:
            raise AssertionError(f"teach nvrtc_and_ptxas_options the nvcc flag {flag!r}")
    return nvrtc, ptxas


class Cuda12Wheels:
    """CUDA 12 from PyPI wheels: NVRTC compiles device code to PTX, the nvcc wheel's ptxas assembles it.

    No host compiler is involved, so the host g++ needs no CUDA 12 support (nvcc 12.9 itself would accept g++ up to
    14, crt/host_config.h; the development machines have g++ 12)."""

    NVCC = "nvidia-cuda-nvcc-cu12"  # ptxas, libdevice, crt headers: the wheel whose presence turns the toolkit on
    WHEELS = (NVCC, "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cccl-cu12")

    def __init__(self, installed: dict[str, importlib.metadata.Distribution]):
        self.installed = installed
        release = ".".join(installed[self.NVCC].version.split(".")[:2])
        self.id = f"cuda{release}-nvrtc"

    @classmethod
    def find(cls) -> Cuda12Wheels | None:
        installed = {}
        for wheel in cls.WHEELS:
            try:
                installed[wheel] = importlib.metadata.distribution(wheel)
            except importlib.metadata.PackageNotFoundError:
                pass
        return cls(installed) if cls.NVCC in installed else None

    def file(self, wheel: str, path: str) -> Path:
        return Path(self.installed[wheel].locate_file(path))

    def check_complete(self):
        missing = [wheel for wheel in self.WHEELS if wheel not in self.installed]
        assert not missing, f"{self.NVCC} is installed but not {missing}: pip install -r requirements-test.txt"
        # Headers of one CUDA release with the compiler of another is not a CUDA 12.x toolkit.
        releases = {wheel: dist.version.split(".")[:2] for wheel, dist in self.installed.items()}
        assert len({tuple(r) for r in releases.values()}) == 1, f"CUDA 12 wheels of different releases: {releases}"

    def nvrtc_ptx(self, source: str, options: list[str]) -> str:
        nvrtc = ctypes.CDLL(str(self.file("nvidia-cuda-nvrtc-cu12", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")))
        program = ctypes.c_void_p()
        names, texts = zip(*NVRTC_STANDARD_HEADERS.items())
        status = nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernels.cu", len(names),
                                          (ctypes.c_char_p * len(texts))(*(t.encode() for t in texts)),
                                          (ctypes.c_char_p * len(names))(*(n.encode() for n in names)))
        assert status == 0, f"nvrtcCreateProgram: error {status}"
        try:
            encoded = [option.encode() for option in options]
            status = nvrtc.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
            log = self._read(nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, program)
            assert status == 0, f"NVRTC {' '.join(options)} failed:\n{log[-6000:]}"
            return self._read(nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, program)
        finally:
            nvrtc.nvrtcDestroyProgram(ctypes.byref(program))

    @staticmethod
    def _read(get_size, get, program) -> str:
        size = ctypes.c_size_t()
        get_size(program, ctypes.byref(size))
        text = ctypes.create_string_buffer(size.value)
        get(program, text)
        return text.value.decode()

    def kernel_report(self, configs: list[tuple], workdir: Path) -> str:
        """Compiles the kernels of configs for every arch; returns ptxas's report."""
        self.check_complete()
        # The kernels alone: their launchers are host code.
        source = "".join(f'#include "kernel_{name}.h"\n' for name in ("dual_block", "persistent", "single_block"))
        source += "".join(f"template __global__ void nvw::{KERNEL_NAMES[v]}<nvw::KernelConfig<nvw::Precision::{p}, "
                          f"{r}, {s}, {a}, {b}>>(nvw::NvwArgs);\n" for v, p, r, s, a, b in configs)
        nvrtc_options, ptxas_options = nvrtc_and_ptxas_options(NVCC_FLAGS)
        # The include path of a CUDA 12 toolkit's include/: libcu++, the runtime's headers, nvcc's crt/.
        includes = [f"-I{CSRC}", *(f"-I{self.file(wheel, f'nvidia/{package}/include')}" for wheel, package in (
            ("nvidia-cuda-cccl-cu12", "cuda_cccl"), ("nvidia-cuda-runtime-cu12", "cuda_runtime"),
            (self.NVCC, "cuda_nvcc")))]
        ptxas = self.file(self.NVCC, "nvidia/cuda_nvcc/bin/ptxas")
        report = []
        for arch in ARCHS:
            ptx = workdir / f"kernels_{arch}.ptx"
            ptx.write_text(self.nvrtc_ptx(source, [*nvrtc_options, f"-arch=compute_{arch}", *includes]))
            command = [str(ptxas), *ptxas_options, f"-arch=sm_{arch}", "-v", str(ptx), "-o", str(ptx) + ".cubin"]
            result = subprocess.run(command, capture_output=True, text=True)
            assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-6000:]}"
            report.append(result.stderr)
        return "".join(report)

    def build_every_instantiation(self, workdir: Path) -> list[str]:
        """Every instantiation, one program per variant and precision as in the extension's sources."""
        groups: dict[tuple, list[tuple]] = {}
        for config in kernel_list("gpu"):
            groups.setdefault(config[:2], []).append(config)

        def build(variant_and_precision: tuple) -> str:
            group_dir = workdir / "_".join(variant_and_precision)
            group_dir.mkdir()
            return self.kernel_report(groups[variant_and_precision], group_dir)

        return parallel_map(build, list(groups))


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


NVCC = find_nvcc()
SYSTEM_NVCC = Nvcc(NVCC) if NVCC else None
CUDA12_WHEELS = Cuda12Wheels.find()
needs_nvcc = pytest.mark.skipif(SYSTEM_NVCC is None, reason="nvcc not found (set NVCC or put it on PATH)")
TOOLKITS = [
    pytest.param(SYSTEM_NVCC, id=SYSTEM_NVCC.id if SYSTEM_NVCC else "nvcc", marks=needs_nvcc),
    pytest.param(CUDA12_WHEELS, id=CUDA12_WHEELS.id if CUDA12_WHEELS else "cuda12-nvrtc", marks=pytest.mark.skipif(
        CUDA12_WHEELS is None, reason=f"CUDA 12 wheels not installed ({Cuda12Wheels.NVCC} and the others of "
                                      "requirements-test.txt)")),
]


def cuda_library_dir() -> Path | None:
    """The lib64 holding libcudart (nvcc may be a wrapper script outside the CUDA tree)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    if NVCC:
        roots.insert(2, str(Path(NVCC).resolve().parents[1]))
    for root in filter(None, roots):
        if any((Path(root) / "lib64").glob("libcudart.so*")):
            return Path(root) / "lib64"
    return None


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


@pytest.mark.slow
@pytest.mark.parametrize("toolkit", TOOLKITS)
def test_representative_instantiations_build_for_sm80_and_sm90_without_spills(toolkit, tmp_path):
    lines = check_no_gated_spills(parse_ptxas(toolkit.kernel_report(REPRESENTATIVE, tmp_path)), REPRESENTATIVE)
    print("\n".join(lines))


@pytest.mark.slow
@needs_nvcc
def test_the_c_api_builds_with_nvcc(tmp_path):
    # The dispatcher sees only launcher declarations: no kernel may be compiled here (that is the per-variant files'
    # job, so ninja can build them in parallel). ptxas reporting only the init kernel proves it.
    entries = parse_ptxas(SYSTEM_NVCC.compile(CSRC / "cuda_api.cu", tmp_path / "api.o", archs=("90",)))
    assert [config_of(e["name"]) for e in entries] == [None], [e["name"] for e in entries]


def test_every_representative_config_is_in_the_instantiation_list():
    compiled = set(kernel_list("gpu"))
    assert set(REPRESENTATIVE) <= compiled
    # R in {32, 64, 128}, S in {128, 256}, A = 256 are all covered by some variant, in both precisions.
    for r in (32, 64, 128):
        for s in (128, 256):
            for precision in ("fp32", "fp16"):
                assert any(e[1:5] == (precision, r, s, 256) for e in compiled), (precision, r, s)


def test_nvcc_flags_translate_for_nvrtc_and_ptxas():
    nvrtc, ptxas = nvrtc_and_ptxas_options(["-DX=1", "-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "-O3",
                                            "-Xptxas=-warn-spills,-warn-lmem-usage"])
    assert nvrtc == ["-DX=1", "-std=c++17", "-default-device", "-lineinfo"]
    assert ptxas == ["-O3", "-lineinfo", "-warn-spills", "-warn-lmem-usage"]
    with pytest.raises(AssertionError, match="--use_fast_math"):
        nvrtc_and_ptxas_options(["--use_fast_math"])


def test_an_incomplete_or_mixed_cuda12_toolkit_fails_rather_than_skips():
    class Wheel:
        def __init__(self, version: str):
            self.version = version

    complete = {wheel: Wheel("12.9.1") for wheel in Cuda12Wheels.WHEELS}
    Cuda12Wheels(complete).check_complete()
    with pytest.raises(AssertionError, match="nvidia-cuda-cccl-cu12"):
        Cuda12Wheels({w: v for w, v in complete.items() if w != "nvidia-cuda-cccl-cu12"}).check_complete()
    with pytest.raises(AssertionError, match="different releases"):
        Cuda12Wheels({**complete, "nvidia-cuda-nvrtc-cu12": Wheel("12.6.77")}).check_complete()


@pytest.mark.skipif(not FULL_GATE, reason="set NVWAVENET_FULL_COMPILE_GATE=1 to build every instantiation")
@pytest.mark.parametrize("toolkit", TOOLKITS)
def test_full_gate_every_instantiation(toolkit, tmp_path):
    reports = toolkit.build_every_instantiation(tmp_path)
    entries = [entry for report in reports for entry in parse_ptxas(report)]
    lines = check_no_gated_spills(entries, kernel_list("gpu"))
    print("\n".join(lines))
    if toolkit is SYSTEM_NVCC:  # the extension links against the system CUDA: only nvcc's objects go into it
        link_and_import_the_extension(tmp_path)


def link_and_import_the_extension(object_dir: Path):
    """Links the extension as torch.utils.cpp_extension would and loads it: it must import without a GPU."""
    compiler = os.environ.get("CXX", "g++")
    includes = [f"-I{path}" for path in [*cpp_extension.include_paths(), sysconfig.get_paths()["include"], CSRC]]
    objects = [str(object_dir / f"{name}.o") for name in [*CUDA_KERNEL_SOURCES, "cuda_api.cu"]]
    torch_lib = Path(cpp_extension.__file__).parents[1] / "lib"  # torch/utils/cpp_extension.py -> torch/lib
    cuda_lib = cuda_library_dir()
    assert cuda_lib is not None, "libcudart not found: set CUDA_HOME"
    module = object_dir / "nvwavenet_gate_extension.so"
    for command in (
        [compiler, "-std=c++20", "-O1", "-fPIC", "-DTORCH_EXTENSION_NAME=nvwavenet_gate_extension",
         "-DTORCH_API_INCLUDE_EXTENSION_H", *includes, "-c", str(CSRC / "extension.cpp"), "-o",
         str(object_dir / "extension.o")],
        [compiler, "-shared", str(object_dir / "extension.o"), *objects, f"-L{torch_lib}", "-lc10", "-ltorch",
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
