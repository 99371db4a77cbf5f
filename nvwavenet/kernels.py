"""nv-wavenet's CUDA inference kernels from Python: build, load, pack a trained model's weights, generate audio.

    from nvwavenet.kernels import KernelVocoder
    vocoder = KernelVocoder(model, precision="fp16")          # packs the weights once, on the GPU
    audio = vocoder(mel, implementation="auto")                # (B, frames * hop) float audio in [-1, 1]

Three kernel variants (nvwavenet/csrc): "single" (the whole model in one block per batch group), "dual" (split over
two cooperating blocks) and "persistent" (weights resident in registers across 3L+ blocks); "auto" times the ones
that fit this model, batch and GPU and keeps the fastest. Precision "fp32", or "fp16" (fp16 weights, fp32
arithmetic). The CUDA extension is compiled on first use with torch.utils.cpp_extension (ninja); it needs a CUDA
build of PyTorch and nvcc. Without CUDA, importing this module still works: `cuda_status()` says why only the CPU
path (nvwavenet.incremental.generate) is available, and the GPU entry points raise that message.

The same kernel sources also build for the CPU emulation backend (g++, thread blocks as threads, CUDA threads as
fibers): `run_emulated(...)` drives it with exactly the arguments the GPU gets. It exists for testing
(tests/nvwavenet/test_kernels_emulated.py) and runs small shapes only.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import torch

CSRC = Path(__file__).resolve().parent / "csrc"
VARIANTS = {"single": 0, "dual": 1, "persistent": 2}
PRECISIONS = {"fp32": 0, "fp16": 1}
IMPLEMENTATIONS = ("auto", *VARIANTS)
DEFAULT_CHUNK = 2048  # samples per launch: the conditioning of one chunk is chunk * L * B * 2R floats
# At most this many conditioning values per launch. The kernels index with 32-bit ints and refuse a chunk of 2^31
# values or more (csrc/api.h: validate), which chunks of 2048 samples reach at batch ~400 for 20 layers and ~200 for
# 40; and a chunk is a dense float32 tensor on the device, so this also bounds its memory (512 MiB). Shorter chunks
# only cost launches, each of them tiny next to the thousands of samples per second a chunk takes.
CONDITIONING_CHUNK_ELEMENTS = 2 ** 27

# ---------------------------------------------------------------------------------------------------------------
# The argument struct (mirror of NvwArgs in csrc/wavenet_args.h; the libraries report its size to check this)

_INT_FIELDS = ("variant", "precision", "residual_channels", "skip_channels", "audio_classes", "num_layers", "batch",
               "batch_per_block", "total_samples", "sample_begin", "sample_end", "ring_slots", "tanh_embedding",
               "silence_class", "output_blocks", "reserved")
_WEIGHT_FIELDS = ("dilations", "embedding_prev", "embedding_cur", "w_prev", "w_cur", "b_gate", "w_res", "b_res",
                  "w_skip", "b_skip", "w_hidden", "b_hidden", "w_logits", "b_logits")
_STATE_FIELDS = ("x_ring", "a_prev", "history", "h_buffer", "skip_buffer", "flags")
_DUMP_FIELDS = ("dump_x", "dump_h", "dump_skip", "dump_logits")
_POINTER_FIELDS = (*_WEIGHT_FIELDS, "conditioning", "selectors", "forced_classes", "classes", *_STATE_FIELDS,
                   *_DUMP_FIELDS)


class NvwArgs(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in _INT_FIELDS] + [(name, ctypes.c_void_p) for name in _POINTER_FIELDS]


# ---------------------------------------------------------------------------------------------------------------
# Weights in the kernels' layout


def _column_major(weight: torch.Tensor, precision: str) -> torch.Tensor:
    """(..., M, K) PyTorch (out, in) -> the kernels' M x K column-major, fp16 as half2 pairs of adjacent inputs."""
    if precision == "fp32":
        return weight.transpose(-1, -2).float().contiguous()
    *leading, rows, cols = weight.shape
    return weight.reshape(*leading, rows, cols // 2, 2).transpose(-3, -2).half().contiguous()


@dataclass
class PackedWeights:
    """export_inference_weights(model) (nvwavenet/incremental.py) in the layout and precision the kernels read."""
    precision: str
    residual_channels: int
    skip_channels: int
    audio_classes: int
    num_layers: int
    max_dilation: int
    tanh_embedding: bool
    silence_class: int
    tensors: dict[str, torch.Tensor]  # keyed by the NvwArgs pointer field names

    @property
    def device(self) -> torch.device:
        return self.tensors["w_cur"].device

    def to(self, device: torch.device | str) -> PackedWeights:
        moved = {name: tensor.to(device) for name, tensor in self.tensors.items()}
        return PackedWeights(**{**self.__dict__, "tensors": moved})


def pack_weights(exported: dict[str, torch.Tensor], precision: str = "fp32",
                 silence_class: int | None = None) -> PackedWeights:
    """Converts `export_inference_weights(model)` to PackedWeights (on the exported tensors' device)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {tuple(PRECISIONS)}, got {precision!r}")
    audio_classes, residual = exported["embedding_cur"].shape
    layers, skip = exported["skip_weight"].shape[:2]
    dilations = exported["dilations"].to(torch.int32)
    if int(dilations.min()) < 1:
        raise ValueError(f"dilations must be positive, got {dilations.tolist()}")
    matrices = {"w_prev": "dilated_weight_prev", "w_cur": "dilated_weight_cur", "w_res": "res_weight",
                "w_skip": "skip_weight", "w_hidden": "hidden_weight", "w_logits": "logits_weight"}
    vectors = {"embedding_prev": "embedding_prev", "embedding_cur": "embedding_cur", "b_gate": "dilated_bias",
               "b_res": "res_bias", "b_skip": "skip_bias", "b_hidden": "hidden_bias", "b_logits": "logits_bias"}
    tensors = {field: _column_major(exported[key], precision) for field, key in matrices.items()}
    tensors.update({field: exported[key].float().contiguous() for field, key in vectors.items()})
    tensors["dilations"] = dilations.contiguous()
    return PackedWeights(precision=precision, residual_channels=residual, skip_channels=skip,
                         audio_classes=audio_classes, num_layers=layers, max_dilation=int(dilations.max()),
                         tanh_embedding=bool(exported["embedding_tanh"]),
                         silence_class=audio_classes // 2 if silence_class is None else silence_class,
                         tensors=tensors)


def effective_weights(exported: dict[str, torch.Tensor], precision: str) -> dict[str, torch.Tensor]:
    """The exported weights as float64 after the rounding the kernels' storage applies: what an exact reference
    must use so that a comparison measures the kernels' arithmetic, not fp16 quantisation."""
    storage = torch.float16 if precision == "fp16" else torch.float32
    matrices = {"dilated_weight_prev", "dilated_weight_cur", "res_weight", "skip_weight", "hidden_weight",
                "logits_weight"}
    return {key: (value.to(storage if key in matrices else torch.float32).double()
                  if value.is_floating_point() else value) for key, value in exported.items()}


# ---------------------------------------------------------------------------------------------------------------
# The two backends behind one interface: the CPU emulation library (ctypes) and the CUDA extension (pybind11)


class _Backend:
    """launch/state_elements/capacity/kernels over the C API of csrc/api.h."""
    name = "?"
    device = torch.device("cpu")

    def launch(self, args: NvwArgs, stream: int) -> None:
        raise NotImplementedError

    def state_elements(self, args: NvwArgs) -> list[int]:
        raise NotImplementedError

    def capacity(self, args: NvwArgs) -> int:
        raise NotImplementedError

    def kernels(self) -> list[tuple[str, str, int, int, int, int]]:
        raise NotImplementedError


def _decode_entry(entry) -> tuple[str, str, int, int, int, int]:
    variant = {v: k for k, v in VARIANTS.items()}[int(entry[0])]
    precision = {v: k for k, v in PRECISIONS.items()}[int(entry[1])]
    return (variant, precision, *(int(value) for value in entry[2:6]))


class _EmulationBackend(_Backend):
    name = "emulation"

    def __init__(self, library_path: Path):
        lib = ctypes.CDLL(str(library_path))
        lib.nvw_launch.argtypes = [ctypes.POINTER(NvwArgs), ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.nvw_state_elements.argtypes = [ctypes.POINTER(NvwArgs), ctypes.POINTER(ctypes.c_int64)]
        lib.nvw_capacity.argtypes = [ctypes.POINTER(NvwArgs), ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                     ctypes.c_int]
        lib.nvw_kernel_entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int32)]
        lib.nvw_emulation_configure.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_double]
        lib.nvw_emulation_self_test.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        if lib.nvw_args_size() != ctypes.sizeof(NvwArgs):
            raise RuntimeError(f"{library_path}: NvwArgs is {lib.nvw_args_size()} bytes in C++ but "
                               f"{ctypes.sizeof(NvwArgs)} in kernels.py; the two definitions disagree")
        self.lib = lib

    def configure(self, schedule: str, seed: int, watchdog_seconds: float) -> None:
        schedules = {"forward": 0, "reverse": 1, "random": 2}
        if schedule not in schedules:
            raise ValueError(f"schedule must be one of {tuple(schedules)}, got {schedule!r}")
        self.lib.nvw_emulation_configure(schedules[schedule], seed, watchdog_seconds)

    def self_test(self, which: str) -> str:
        """Runs one of the emulator's own checks ("early_exit", "mismatched_barrier", "collectives"): "" when it
        passes, else what went wrong ("mismatched_barrier" passes by returning the emulator's report)."""
        tests = {"early_exit": 0, "mismatched_barrier": 1, "collectives": 2}
        message = ctypes.create_string_buffer(4096)
        self.lib.nvw_emulation_self_test(tests[which], message, len(message))
        return message.value.decode()

    def launch(self, args: NvwArgs, stream: int) -> None:
        error = ctypes.create_string_buffer(4096)
        if self.lib.nvw_launch(ctypes.byref(args), None, error, len(error)):
            raise RuntimeError(error.value.decode())

    def state_elements(self, args: NvwArgs) -> list[int]:
        sizes = (ctypes.c_int64 * len(_STATE_FIELDS))()
        self.lib.nvw_state_elements(ctypes.byref(args), sizes)
        return list(sizes)

    def capacity(self, args: NvwArgs) -> int:
        blocks, error = ctypes.c_int(), ctypes.create_string_buffer(4096)
        if self.lib.nvw_capacity(ctypes.byref(args), ctypes.byref(blocks), error, len(error)):
            raise RuntimeError(error.value.decode())
        return blocks.value

    def kernels(self) -> list[tuple[str, str, int, int, int, int]]:
        entries = []
        for index in range(self.lib.nvw_kernel_count()):
            out = (ctypes.c_int32 * 6)()
            self.lib.nvw_kernel_entry(index, out)
            entries.append(_decode_entry(out))
        return entries


class _CudaBackend(_Backend):
    name = "cuda"

    def __init__(self, extension):
        if extension.args_size() != ctypes.sizeof(NvwArgs):
            raise RuntimeError(f"nvwavenet CUDA extension: NvwArgs is {extension.args_size()} bytes in C++ but "
                               f"{ctypes.sizeof(NvwArgs)} in kernels.py; the two definitions disagree")
        self.ext = extension
        self.device = torch.device("cuda", torch.cuda.current_device())

    def launch(self, args: NvwArgs, stream: int) -> None:
        self.ext.launch(ctypes.addressof(args), stream)

    def state_elements(self, args: NvwArgs) -> list[int]:
        return list(self.ext.state_elements(ctypes.addressof(args)))

    def capacity(self, args: NvwArgs) -> int:
        return int(self.ext.capacity(ctypes.addressof(args)))

    def kernels(self) -> list[tuple[str, str, int, int, int, int]]:
        return [_decode_entry(entry) for entry in self.ext.kernels()]


# ---------------------------------------------------------------------------------------------------------------
# Building


def _build_dir() -> Path:
    root = os.environ.get("NVWAVENET_BUILD_DIR") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                                                           "nvwavenet")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _source_digest(paths: list[Path], flags: list[str]) -> str:
    digest = hashlib.sha256(" ".join(flags).encode())
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


EMULATION_SOURCES = ("emulation_api.cpp", "emulation_runtime.cpp")
EMULATION_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-DNVW_EMULATION", "-Wall", "-Wextra"]


@lru_cache(maxsize=None)
def emulation_library() -> _EmulationBackend:
    """Compiles (once; cached on disk by source hash) and loads the CPU emulation build of the kernels."""
    compiler = os.environ.get("CXX", "g++")
    if shutil.which(compiler) is None:
        raise RuntimeError(f"the nvwavenet emulation library needs a C++17 compiler; {compiler!r} is not on PATH")
    sources = [CSRC / name for name in EMULATION_SOURCES]
    digest = _source_digest([*sources, *CSRC.glob("*.h")], [compiler, *EMULATION_FLAGS])
    library = _build_dir() / f"libnvwavenet_emulation_{digest}.so"
    if not library.exists():
        with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
            partial = Path(scratch) / library.name
            command = [compiler, *EMULATION_FLAGS, *map(str, sources), "-o", str(partial), "-lpthread"]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError("building the nvwavenet emulation library failed:\n" + " ".join(command) + "\n" +
                                   result.stderr[-8000:])
            os.replace(partial, library)  # atomic: a concurrent build never loads a half-written library
    return _EmulationBackend(library)


CUDA_KERNEL_SOURCES = tuple(f"kernels_{variant}_{precision}.cu" for variant in VARIANTS for precision in PRECISIONS)
CUDA_SOURCES = ("extension.cpp", "cuda_api.cu", *CUDA_KERNEL_SOURCES)
DEFAULT_CUDA_ARCHS = ("80", "90")  # sm_80 (A100) and sm_90 (H100); PTX of the last runs on newer GPUs


def cuda_arch_flags(archs: tuple[str, ...] | None = None) -> list[str]:
    archs = archs or tuple(os.environ.get("NVWAVENET_CUDA_ARCHS", ",".join(DEFAULT_CUDA_ARCHS)).split(","))
    flags = [f"-gencode=arch=compute_{arch},code=sm_{arch}" for arch in archs]
    return [*flags, f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}"]


# No -std: PyTorch picks the standard its headers need (C++20 for recent versions); the kernels build as C++17 up.
CUDA_FLAGS = ["-O3", "-lineinfo", "-Xptxas=-warn-spills"]


def cuda_status() -> tuple[bool, str]:
    """(kernels usable here?, why not / which device)."""
    if torch.version.cuda is None:
        return False, (f"this PyTorch ({torch.__version__}) is a CPU build, so the nvwavenet CUDA kernels are "
                       "unavailable; only the CPU path (nvwavenet.incremental.generate) runs here")
    if not torch.cuda.is_available():
        return False, ("no CUDA GPU is visible, so the nvwavenet CUDA kernels are unavailable; only the CPU path "
                       "(nvwavenet.incremental.generate) runs here")
    from torch.utils.cpp_extension import CUDA_HOME
    if CUDA_HOME is None:
        return False, "CUDA_HOME is not set and nvcc was not found, so the CUDA extension cannot be compiled"
    return True, f"CUDA kernels available on {torch.cuda.get_device_name()}"


@lru_cache(maxsize=None)
def cuda_library() -> _CudaBackend:
    """Compiles (first use; ninja caches it under the build dir) and loads the CUDA extension."""
    usable, reason = cuda_status()
    if not usable:
        raise RuntimeError(reason)
    from torch.utils import cpp_extension
    sources = [CSRC / name for name in CUDA_SOURCES]
    flags = [*CUDA_FLAGS, *cuda_arch_flags()]
    digest = _source_digest([*sources, *CSRC.glob("*.h")], flags)
    build = _build_dir() / f"cuda_{digest}"
    build.mkdir(exist_ok=True)
    extension = cpp_extension.load(name=f"nvwavenet_cuda_{digest}", sources=[str(s) for s in sources],
                                   extra_cflags=["-O2"], extra_cuda_cflags=flags,
                                   build_directory=str(build), verbose=bool(os.environ.get("NVWAVENET_VERBOSE_BUILD")))
    return _CudaBackend(extension)


def kernel_list(source: str = "gpu") -> list[tuple[str, str, int, int, int, int]]:
    """The instantiations in csrc/instantiations.h as (variant, precision, R, S, A, batch per block), read from the
    source (no build needed): source="gpu" for the CUDA build, "emulation" for the CPU emulation build."""
    text = (CSRC / "instantiations.h").read_text()
    if source == "gpu":
        batches = [int(b) for b in re.search(r"#define NVW_BATCHES_PER_BLOCK ([\d, ]+)", text).group(1).split(",")]
        shapes = re.findall(r"NVW_SHAPE(_UPTO2)?\(X, (\w+), (\w+), (\d+), (\d+), (\d+)\)", text)
        return [(v, p, int(r), int(s), int(a), b) for upto2, v, p, r, s, a in shapes
                for b in (batches if not upto2 else [b for b in batches if b <= 2])]
    if source == "emulation":
        entries = re.findall(r"X\((\w+), (\w+), (\d+), (\d+), (\d+), (\d+)\)", text)
        return [(v, p, int(r), int(s), int(a), int(b)) for v, p, r, s, a, b in entries]
    raise ValueError(f"source must be 'gpu' or 'emulation', got {source!r}")


# ---------------------------------------------------------------------------------------------------------------
# Running the kernels over an utterance, chunk by chunk


@dataclass
class KernelRun:
    classes: torch.Tensor                 # (B, T) int64 sampled classes
    dumps: dict[str, torch.Tensor]        # when requested: x (T, L, B, R), h (T, L, B, R), skip (T, B, S), logits (T, B, A)


def _pointer(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.data_ptr()


def _check_shape(name: str, tensor: torch.Tensor, shape: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(tensor.shape)}")


def run_kernels(backend: _Backend, weights: PackedWeights, conditioning: Callable[[int, int], torch.Tensor],
                selectors: torch.Tensor, *, variant: str, batch_per_block: int, output_blocks: int = 1,
                forced_classes: torch.Tensor | None = None, chunk_size: int = DEFAULT_CHUNK, dumps: bool = False,
                stream: int = 0) -> KernelRun:
    """Generates selectors.shape[0] samples for selectors.shape[1] columns.

    conditioning(start, stop) -> (stop - start, L, B, 2R) float32 on the backend's device: one chunk of per-layer
    conditioning, computed only when that chunk is launched. selectors (T, B) uniform in [0, 1); forced_classes
    (T, B) or None for teacher forcing. B must be a multiple of batch_per_block (pad columns before). Chunks are
    chunk_size samples, fewer where one would exceed CONDITIONING_CHUNK_ELEMENTS values.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {variant!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    device = backend.device
    if weights.device.type != device.type:
        raise ValueError(f"weights are on {weights.device} but the {backend.name} backend runs on {device}")
    num_samples, batch = selectors.shape
    R, S, A, L = weights.residual_channels, weights.skip_channels, weights.audio_classes, weights.num_layers
    selectors = selectors.to(device=device, dtype=torch.float32).contiguous()
    if forced_classes is not None:
        _check_shape("forced_classes", forced_classes, (num_samples, batch))
        forced_classes = forced_classes.to(device=device, dtype=torch.int32).contiguous()

    args = NvwArgs(variant=VARIANTS[variant], precision=PRECISIONS[weights.precision], residual_channels=R,
                   skip_channels=S, audio_classes=A, num_layers=L, batch=batch, batch_per_block=batch_per_block,
                   total_samples=num_samples, ring_slots=weights.max_dilation + 1,
                   tanh_embedding=int(weights.tanh_embedding), silence_class=weights.silence_class,
                   output_blocks=output_blocks)
    for field in _WEIGHT_FIELDS:
        setattr(args, field, _pointer(weights.tensors[field]))
    classes = torch.zeros(batch, num_samples, dtype=torch.int32, device=device)
    args.classes = _pointer(classes)
    state_dtypes = {"history": torch.int32, "flags": torch.int32}
    state = {field: torch.zeros(count, dtype=state_dtypes.get(field, torch.float32), device=device)
             for field, count in zip(_STATE_FIELDS, backend.state_elements(args))}
    for field, tensor in state.items():
        setattr(args, field, _pointer(tensor))
    dump_tensors = {}
    if dumps:
        dump_tensors = {"x": torch.full((num_samples, L, batch, R), float("nan"), device=device),
                        "h": torch.full((num_samples, L, batch, R), float("nan"), device=device),
                        "skip": torch.full((num_samples, batch, S), float("nan"), device=device),
                        "logits": torch.full((num_samples, batch, A), float("nan"), device=device)}
        for name, tensor in dump_tensors.items():
            setattr(args, f"dump_{name}", _pointer(tensor))

    chunk_size = min(chunk_size, max(1, CONDITIONING_CHUNK_ELEMENTS // (L * batch * 2 * R)))
    for start in range(0, num_samples, chunk_size):
        stop = min(start + chunk_size, num_samples)
        chunk = conditioning(start, stop).to(device=device, dtype=torch.float32).contiguous()
        _check_shape(f"conditioning({start}, {stop})", chunk, (stop - start, L, batch, 2 * R))
        args.sample_begin, args.sample_end = start, stop
        args.conditioning = _pointer(chunk)
        args.selectors = _pointer(selectors[start:stop])
        args.forced_classes = _pointer(None if forced_classes is None else forced_classes[start:stop])
        backend.launch(args, stream)
        # `chunk` may be freed now: on the GPU the caching allocator only reuses it for work queued after this
        # launch on the same stream.
    return KernelRun(classes=classes.long(), dumps=dump_tensors)


def run_emulated(weights: PackedWeights, conditioning: torch.Tensor, selectors: torch.Tensor, *, variant: str,
                 batch_per_block: int, output_blocks: int = 1, forced_classes: torch.Tensor | None = None,
                 chunk_size: int = DEFAULT_CHUNK, schedule: str = "forward", seed: int = 0,
                 watchdog_seconds: float = 30.0, dumps: bool = True) -> KernelRun:
    """The kernels on the CPU emulation backend. conditioning (T, L, B, 2R), selectors (T, B), both CPU tensors."""
    backend = emulation_library()
    backend.configure(schedule, seed, watchdog_seconds)
    return run_kernels(backend, weights.to("cpu"), lambda start, stop: conditioning[start:stop], selectors,
                       variant=variant, batch_per_block=batch_per_block, output_blocks=output_blocks,
                       forced_classes=forced_classes, chunk_size=chunk_size, dumps=dumps)


# ---------------------------------------------------------------------------------------------------------------
# A trained model on the GPU


@dataclass(frozen=True)
class LaunchPlan:
    variant: str
    batch_per_block: int
    output_blocks: int
    padded_batch: int


def _compiled(backend: _Backend, weights: PackedWeights, variant: str) -> list[int]:
    """Batch-per-block values compiled for this variant and the weights' precision and shape."""
    shape = (weights.precision, weights.residual_channels, weights.skip_channels, weights.audio_classes)
    return sorted(entry[5] for entry in backend.kernels() if entry[0] == variant and entry[1:5] == shape)


def plan_launch(backend: _Backend, weights: PackedWeights, batch: int, variant: str) -> LaunchPlan:
    """Batch per block, persistent output blocks and padding for one variant; raises if it cannot run this model."""
    compiled = _compiled(backend, weights, variant)
    shape = (f"{weights.precision} R={weights.residual_channels} S={weights.skip_channels} "
             f"A={weights.audio_classes}")
    if not compiled:
        raise ValueError(f"no {variant} kernel is compiled for {shape}; compiled: "
                         f"{sorted({e[:5] for e in backend.kernels() if e[0] == variant})}")
    def capacity_for(per_block: int) -> int:
        return backend.capacity(NvwArgs(variant=VARIANTS[variant], precision=PRECISIONS[weights.precision],
                                        residual_channels=weights.residual_channels,
                                        skip_channels=weights.skip_channels, audio_classes=weights.audio_classes,
                                        num_layers=weights.num_layers, batch_per_block=per_block))

    if variant == "persistent":
        # Batch groups take turns in the same blocks, so fewer, wider groups pipeline better.
        per_block = next((b for b in reversed(compiled) if b <= batch), compiled[0])
    else:
        # One column per block spreads a small batch over the most SMs; once the blocks would no longer all be
        # resident at once, more columns per block amortise each weight load instead.
        blocks_per_group = 2 if variant == "dual" else 1
        per_block = next((b for b in compiled if blocks_per_group * -(-batch // b) <= capacity_for(b)), compiled[-1])
    padded = -(-batch // per_block) * per_block
    groups = padded // per_block
    capacity = capacity_for(per_block)
    output_blocks = 1
    if variant == "persistent":
        spare = capacity - 3 * weights.num_layers
        if spare < 1:
            raise ValueError(f"the persistent kernel needs {3 * weights.num_layers + 1} co-resident blocks for "
                             f"{weights.num_layers} layers, but this GPU holds {capacity}")
        output_blocks = min(groups, spare, 8)
    elif variant == "dual" and 2 * groups > capacity:
        raise ValueError(f"the dual-block kernel needs {2 * groups} co-resident blocks for batch {batch}, "
                         f"but this GPU holds {capacity}")
    return LaunchPlan(variant, per_block, output_blocks, padded)


class KernelVocoder:
    """A trained nvwavenet.model.WaveNet packed for the CUDA kernels (once); call it on mel batches."""

    def __init__(self, model, precision: str = "fp16", device: torch.device | str | None = None):
        from nvwavenet.incremental import export_inference_weights
        self.backend = cuda_library()
        self.device = torch.device(device) if device is not None else self.backend.device
        self.model = model.to(self.device).eval()
        self.exported = {k: v.to(self.device) for k, v in export_inference_weights(self.model).items()}
        self.exported["conditioning_weight"] = self.exported["conditioning_weight"].float()
        self.weights = pack_weights(self.exported, precision, silence_class=self.model.silence)
        self._auto_choice: dict[int, str] = {}

    def candidates(self, batch: int) -> dict[str, LaunchPlan]:
        """Every variant that can run this model at this batch size on this GPU, with its launch plan."""
        plans = {}
        for variant in VARIANTS:
            try:
                plans[variant] = plan_launch(self.backend, self.weights, batch, variant)
            except ValueError:
                continue
        return plans

    def _choose(self, batch: int, implementation: str) -> LaunchPlan:
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
        if implementation != "auto":
            return plan_launch(self.backend, self.weights, batch, implementation)
        plans = self.candidates(batch)
        if not plans:
            raise ValueError(f"no nvwavenet kernel fits this model ({self.weights.precision}, "
                             f"R={self.weights.residual_channels}, S={self.weights.skip_channels}, "
                             f"A={self.weights.audio_classes}, {self.weights.num_layers} layers) at batch {batch}")
        if batch not in self._auto_choice:  # time each on a short zero-conditioned run, keep the fastest
            timings = {variant: self._time(plan, samples=512) for variant, plan in plans.items()}
            self._auto_choice[batch] = min(timings, key=timings.get)
        return plans[self._auto_choice[batch]]

    def _time(self, plan: LaunchPlan, samples: int) -> float:
        R, L = self.weights.residual_channels, self.weights.num_layers
        zeros = torch.zeros(samples, L, plan.padded_batch, 2 * R, device=self.device)
        selectors = torch.rand(samples, plan.padded_batch, device=self.device)
        run = lambda: run_kernels(self.backend, self.weights, lambda a, b: zeros[a:b], selectors,  # noqa: E731
                                  variant=plan.variant, batch_per_block=plan.batch_per_block,
                                  output_blocks=plan.output_blocks, stream=torch.cuda.current_stream().cuda_stream)
        run()  # warm-up (and first-launch overheads)
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        return time.perf_counter() - start

    @torch.no_grad()
    def generate_classes(self, mel: torch.Tensor, implementation: str = "auto", *,
                         generator: torch.Generator | None = None, selectors: torch.Tensor | None = None,
                         chunk_size: int = DEFAULT_CHUNK) -> torch.Tensor:
        """Mel (B, n_mel, frames) -> classes (B, frames * hop) int64, sampled like incremental.generate: the same
        generator (or selectors (B, T)) gives the same uniforms, in float32."""
        from nvwavenet.incremental import conditioning_for_samples
        from nvwavenet.model import check_mel_matches_audio
        mel = mel.to(self.device, torch.float32)
        batch, num_samples = mel.shape[0], mel.shape[2] * self.model.hop_length
        check_mel_matches_audio(mel, num_samples, self.model.hop_length, self.model.n_mel_channels)
        if selectors is None:
            selectors = torch.rand(batch, num_samples, generator=generator, dtype=torch.float64)
        _check_shape("selectors", selectors, (batch, num_samples))
        plan = self._choose(batch, implementation)
        pad = plan.padded_batch - batch
        # 80 (n_mel) values per sample for the whole utterance; the 2RL per-layer values only chunk by chunk.
        upsampled = self.model.upsample_mel(mel.to(self.model.embed_cur.weight.dtype)).float()

        def conditioning(start: int, stop: int) -> torch.Tensor:
            chunk = conditioning_for_samples(self.exported, upsampled, start, stop)  # (T, L, B, 2R)
            return torch.nn.functional.pad(chunk, (0, 0, 0, pad)) if pad else chunk

        padded_selectors = torch.nn.functional.pad(selectors.to(self.device, torch.float32).t(), (0, pad))
        run = run_kernels(self.backend, self.weights, conditioning, padded_selectors, variant=plan.variant,
                          batch_per_block=plan.batch_per_block, output_blocks=plan.output_blocks,
                          chunk_size=chunk_size, stream=torch.cuda.current_stream(self.device).cuda_stream)
        return run.classes[:batch]

    def __call__(self, mel: torch.Tensor, implementation: str = "auto", **kwargs) -> torch.Tensor:
        """Mel (B, n_mel, frames) -> audio (B, frames * hop) float in [-1, 1]."""
        from nvwavenet.model import mu_law_decode
        return mu_law_decode(self.generate_classes(mel, implementation, **kwargs), self.weights.audio_classes)


def infer(model, mel: torch.Tensor, implementation: str = "auto", precision: str = "fp16", **kwargs) -> torch.Tensor:
    """One-shot convenience: KernelVocoder(model, precision)(mel, implementation). Audio (B, T) on the GPU."""
    return KernelVocoder(model, precision)(mel, implementation, **kwargs)
