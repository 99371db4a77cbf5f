"""Checkpoints: written atomically, read with weights_only=True, and tolerant of NVIDIA's published layouts.

A training checkpoint of this project is a dict:
    format_version, model_name, model_config, audio_params, text (symbol table and cleaners, text models only),
    state_dict, optimizer, scaler, lr_schedule, epoch (epochs completed), iteration (optimizer steps taken),
    rng_states (one entry per rank), args (the training command line as a dict)
NVIDIA's published checkpoints hold only {'state_dict', 'config', ...} (or a bare state dict) with DDP's `module.`
prefix and the old weight_g/weight_v weight-norm names; `model_state_from_checkpoint` accepts those too, and
`load_trained_model` (common/trained_model.py) also takes weights saved after weight norm was folded away (what
NVIDIA's inference holds).

Every mistake in what the user gave (missing, corrupt or unsafe file, another model's checkpoint, weights that do not
fit) is a common.errors.UserError naming the file (and the flag that gave it, where the caller says which).
"""
from __future__ import annotations

import errno
import os
import pickle
import re
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import parametrize

from common.errors import UserError, UserFileNotFoundError
from common.torch_version import check_torch_version

FORMAT_VERSION = 1


def checkpoint_path(output_dir: str | Path, model_name: str, epoch: int) -> Path:
    return Path(output_dir) / f"checkpoint_{model_name}_{epoch}.pt"


def last_checkpoint_pointer(output_dir: str | Path, model_name: str) -> Path:
    return Path(output_dir) / f"checkpoint_{model_name}_last.pt"


def periodic_checkpoints(output_dir: str | Path, model_name: str) -> list[Path]:
    """The periodic checkpoints of `model_name` in `output_dir` (those the `last` link follows): files named
    checkpoint_<model>_<epochs>.pt, or checkpoint_<model>_<epoch>_<batches>.pt mid-epoch; not the `last` link, the
    best checkpoint, nor a save's hidden temporary. In name order, which is not their order in training."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    name = re.compile(rf"checkpoint_{re.escape(model_name)}_\d+(_\d+)?\.pt")
    return sorted(path for path in folder.iterdir() if name.fullmatch(path.name) and path.is_file())


@contextmanager
def replaced_whole(path: Path):
    """Yields a temporary path beside `path`; what the block writes there then replaces `path` in one rename, so a
    crash never leaves half a file. A write the system refuses (a full disk, a folder without write permission) is a
    UserError naming `path`; the temporary is removed either way."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        if temporary.is_symlink() or temporary.exists():  # left by a crashed process of the same id
            temporary.unlink()
        yield temporary
        os.replace(temporary, path)
    except OSError as error:
        raise _unwritable(path, error) from error
    finally:
        if temporary.is_symlink() or temporary.exists():
            temporary.unlink()


class _FileKeepingWriteErrors:
    """A file for torch.save that keeps the OSError of a write the system refused. torch.save's zip writer turns that
    error (ENOSPC on a full disk, EFBIG past a file-size limit) into a RuntimeError ("unexpected pos 704 vs 598")
    that no longer says why, and that is no OSError: the write would end in a traceback instead of the error line
    naming the checkpoint, and under DDP rank 0 would die without telling the other ranks."""

    def __init__(self, handle):
        self.handle = handle
        self.refused: OSError | None = None

    def write(self, data) -> int:
        try:
            return self.handle.write(data)
        except OSError as error:
            self.refused = error
            raise

    def flush(self) -> None:
        self.handle.flush()


def save_checkpoint(checkpoint: dict, path: str | Path) -> None:
    """Write `checkpoint` to `path` whole or not at all (flushed to disk before it takes the name). A write the
    system refuses (a full disk, a file-size limit) is a UserError naming `path` (see replaced_whole)."""
    with replaced_whole(Path(path)) as temporary, open(temporary, "wb") as handle:
        writer = _FileKeepingWriteErrors(handle)
        try:
            torch.save(checkpoint, writer)
        except RuntimeError as error:
            if writer.refused is None:
                raise  # not the disk: a bug (an object that cannot be pickled)
            raise writer.refused from error
        handle.flush()
        os.fsync(handle.fileno())


def point_last_checkpoint_to(output_dir: str | Path, model_name: str, target: Path) -> None:
    """Repoint checkpoint_<model>_last.pt (a relative symlink) at target, atomically."""
    with replaced_whole(last_checkpoint_pointer(output_dir, model_name)) as temporary:
        os.symlink(target.name, temporary)


def _unwritable(path: Path, error: OSError) -> UserError:
    """A write the system refused (ENOSPC, EDQUOT, EACCES, EROFS...), as the user's to fix."""
    advice = refused_write_advice(error)
    return UserError(f"cannot write checkpoint {path}: {error.strerror or error} (nothing half-written was left "
                     f"there, and the checkpoints written before are intact); {advice}")


def refused_write_advice(error: OSError) -> str:
    """What the user can do about a write the system refused, by its errno."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space on that disk"
    if error.errno == errno.EFBIG:  # past the process's file-size limit (ulimit -f) or the file system's
        return "raise the file-size limit (ulimit -f) or write to another file system"
    return "make the folder writable or write elsewhere"


# The temporary of a save (replaced_whole): .checkpoint_<model>_<name>.pt.tmp-<process id>.
def _temporary_name(model_name: str) -> re.Pattern:
    return re.compile(rf"\.checkpoint_{re.escape(model_name)}_\w+\.pt\.tmp-\d+")


def remove_stale_temporaries(output_dir: str | Path, model_name: str) -> list[Path]:
    """Delete the save temporaries of `model_name` left in `output_dir` by a process killed while it wrote a
    checkpoint (SIGKILL, a node lost): never loaded, they would otherwise take a checkpoint's space on the disk for
    good. At start-up, before this run writes any: a run of the same model writing into the same folder at the same
    time would overwrite this run's checkpoints and `last` link anyway. Returns the files deleted."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    pattern = _temporary_name(model_name)
    stale = sorted(path for path in folder.iterdir() if pattern.fullmatch(path.name))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def bytes_in_words(count: float) -> str:
    """1536 -> '1.5 KiB': sizes in messages."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.0f} B" if power == 0 else f"{count:.1f} {units[power]}"


def describe_source(path: str | Path, flag: str | None = None) -> str:
    """How messages name a checkpoint: with the flag that gave it when known (`--waveglow out/w.pt`)."""
    return f"{flag} {path}" if flag else str(path)


_UNSAFE_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _unreadable_checkpoint(path: Path, source: str, error: BaseException) -> UserError:
    """What to tell the user when torch.load fails. torch's own message for weights_only=True suggests retrying with
    weights_only=False, which is the wrong advice for a corrupt file and unsafe advice for a file of unknown origin."""
    unsafe = _UNSAFE_GLOBAL.search(str(error))
    if unsafe:
        return UserError(
            f"cannot read checkpoint {source}: it stores a Python object ({unsafe.group(1)}) besides tensors and plain "
            "containers, and this project only loads weights (unpickling objects can run code); if you trust the "
            f"file, re-save its weights once: torch.save(torch.load('{path}', weights_only=False)['state_dict'], "
            "'weights.pt') (or .state_dict() of the model it holds) and give weights.pt instead")
    if path.stat().st_size == 0:
        reason = "the file is empty"
    elif isinstance(error, RuntimeError):  # the zip reader: truncated or damaged archive
        reason = f"the file is damaged or truncated ({str(error).split('.')[0].strip()})"
    else:
        reason = "the file is damaged, truncated, or not a PyTorch checkpoint"
    return UserError(f"cannot read checkpoint {source}: {reason}; copy or download it again, or give another file")


def existing_checkpoint_file(path: str | Path, flag: str | None = None) -> tuple[Path, str]:
    """(path, how messages name it), once it is checked to be a file that exists."""
    path = Path(path)
    source = describe_source(path, flag)
    if not path.exists():
        raise UserFileNotFoundError(f"checkpoint not found: {source}")
    if path.is_dir():
        raise UserError(f"{source} is a folder; give a checkpoint file (e.g. {path}/checkpoint_<model>_last.pt)")
    return path, source


def load_checkpoint(path: str | Path, expected_model: str | None = None, flag: str | None = None) -> dict:
    """Read a checkpoint safely (tensors and plain containers only) and check which model it belongs to.
    `flag` is the command-line flag that gave the path, for the error messages."""
    check_torch_version()  # the Python APIs load through here without train.py's or inference.py's check
    path, source = existing_checkpoint_file(path, flag)
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except PermissionError as error:
        raise UserError(f"cannot read checkpoint {source}: {error.strerror}") from error
    except (OSError, pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, IndexError, TypeError,
            AttributeError, ImportError, UnicodeDecodeError) as error:  # what a damaged pickle or zip can raise
        raise _unreadable_checkpoint(path, source, error) from error
    if not isinstance(checkpoint, dict):
        raise UserError(f"checkpoint {source} holds a {type(checkpoint).__name__}, expected a dict (a state dict, "
                        "or a checkpoint of this project or of NVIDIA's)")
    found = checkpoint.get("model_name")
    if expected_model is not None and found is not None and found != expected_model:
        raise UserError(f"checkpoint {source} is a {found} checkpoint, expected {expected_model}; "
                        f"give a {expected_model} checkpoint there")
    return checkpoint


_LEGACY_WEIGHT_NORM = re.compile(r"^(.*)\.weight_([gv])$")


def remap_legacy_state_dict(state_dict: dict) -> dict:
    """Strip DDP/DataParallel prefixes and rename torch.nn.utils.weight_norm's weight_g/weight_v to parametrizations."""
    remapped = {}
    for key, value in state_dict.items():
        for prefix in ("module.1.", "module."):  # module.1. came from an older NVIDIA wrapper around the model
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        match = _LEGACY_WEIGHT_NORM.match(key)
        if match:
            which = "original0" if match.group(2) == "g" else "original1"
            key = f"{match.group(1)}.parametrizations.weight.{which}"
        remapped[key] = value
    return remapped


def model_state_from_checkpoint(checkpoint: dict, source: str = "checkpoint") -> dict:
    """The model weights of a checkpoint of ours, of NVIDIA's ({'state_dict': ...}), or a bare state dict."""
    if isinstance(checkpoint.get("state_dict"), dict):
        return remap_legacy_state_dict(checkpoint["state_dict"])
    if checkpoint and all(isinstance(value, torch.Tensor) for value in checkpoint.values()):
        return remap_legacy_state_dict(checkpoint)
    raise UserError(f"{source} has no 'state_dict' entry and is no bare state dict (keys: {sorted(checkpoint)[:10]}); "
                    "give a checkpoint of this project, NVIDIA's, or a saved state_dict()")


def unfold_weight_norm_where_folded(model: nn.Module, state_dict: dict) -> list[str]:
    """Drop the weight-norm parametrization of each module whose weights were saved with weight norm folded away.

    NVIDIA's inference removes weight norm after loading (WaveGlow.remove_weightnorm), and a state dict saved from
    that model holds one plain `<module>.weight` where ours holds `parametrizations.weight.original0/1`. Such
    weights are exactly what inference computes with, so the module takes them as a plain weight: the audio equals
    that of the unfolded weights, which inference folds the same way. Returns the modules changed."""
    changed = []
    for name, module in model.named_modules():
        prefix = f"{name}." if name else ""
        if (parametrize.is_parametrized(module, "weight") and f"{prefix}weight" in state_dict
                and f"{prefix}parametrizations.weight.original0" not in state_dict):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
            changed.append(name)
    return changed


def weight_norm_names_as_the_model_has_them(state_dict: dict, expected: dict) -> dict:
    """remap_legacy_state_dict names weight norm as torch's parametrizations; a model that keeps fairseq's own
    `weight_g` / `weight_v` parameters (wav2vec 2.0's positional convolution) gets those names back."""
    renamed = {}
    for key, value in state_dict.items():
        for which, legacy in (("original0", "weight_g"), ("original1", "weight_v")):
            suffix = f"parametrizations.weight.{which}"
            if key.endswith(suffix) and key not in expected and key[:-len(suffix)] + legacy in expected:
                key = key[:-len(suffix)] + legacy
        renamed[key] = value
    return renamed


def load_model_state(model: nn.Module, state_dict: dict, source: str) -> None:
    """Strict load whose error lists the missing and unexpected keys and any shape mismatch, naming the source."""
    expected = model.state_dict()
    state_dict = weight_norm_names_as_the_model_has_them(state_dict, expected)
    missing = [key for key in expected if key not in state_dict]
    unexpected = [key for key in state_dict if key not in expected]
    wrong_shape = [
        f"{key}: {tuple(state_dict[key].shape)} in {source}, {tuple(expected[key].shape)} in the model"
        for key in expected
        if key in state_dict and tuple(state_dict[key].shape) != tuple(expected[key].shape)
    ]
    if missing or unexpected or wrong_shape:
        def first(items):
            return ", ".join(items[:8]) + (f" ... ({len(items)} in all)" if len(items) > 8 else "")
        problems = []
        if missing:
            problems.append(f"missing keys: {first(missing)}")
        if unexpected:
            problems.append(f"unexpected keys: {first(unexpected)}")
        if wrong_shape:
            problems.append(f"shape mismatches (check the model flags, e.g. --wn-channels): {first(wrong_shape)}")
        raise UserError(f"weights in {source} do not fit the model: " + "; ".join(problems))
    model.load_state_dict(state_dict, strict=True)


def weight_norm_split_where_folded(state_dict: dict, expected: dict) -> dict:
    """`state_dict` with each weight saved with weight norm folded away (a plain `<module>.weight` where the model
    trains `parametrizations.weight.original0/1`; see unfold_weight_norm_where_folded) given back as weight norm's
    magnitude and direction: original1 = the weight, original0 = its norm over every dimension but the first. The
    module then computes the same weight, and trains with weight norm (warm start)."""
    split = {}
    for key, value in state_dict.items():
        module = key[:-len("weight")]
        magnitude, direction = (f"{module}parametrizations.weight.{which}" for which in ("original0", "original1"))
        norm = (torch.linalg.vector_norm(value, dim=tuple(range(1, value.dim())), keepdim=True)
                if key.endswith("weight") and value.dim() > 1 else None)
        if (key not in expected and magnitude in expected and direction in expected
                and norm is not None and norm.shape == expected[magnitude].shape):
            split[magnitude], split[direction] = norm, value
        else:
            split[key] = value
    return split


def names_layer(key: str, name: str) -> bool:
    """Whether --ignore-layers NAME covers state-dict key `key`: the key itself or a module prefix of it
    (`embedding` covers `embedding.weight`, `decoder.attention_rnn` every weight of that LSTM cell)."""
    return key == name or key.startswith(name + ".")


def warm_start_weights(model: nn.Module, checkpoint: dict, source: str, ignore_layers: list[str]) -> list[str]:
    """Load into `model` every weight of `checkpoint` (ours, NVIDIA's, or a bare state dict) that has a name and
    shape of the model and is not named by `ignore_layers`; the model's other weights stay as initialised. Returns
    one line per weight not loaded, with its name, shape(s) and why. A name in `ignore_layers` that covers no weight
    of either, or a checkpoint none of whose weights fit (another family's), is a UserError."""
    expected = model.state_dict()
    saved = weight_norm_names_as_the_model_has_them(model_state_from_checkpoint(checkpoint, source), expected)
    saved = weight_norm_split_where_folded(saved, expected)
    unmatched = [name for name in ignore_layers if not any(names_layer(key, name) for key in [*expected, *saved])]
    if unmatched:
        example = next(iter(expected)).rsplit(".", 1)[0]
        raise UserError(f"--ignore-layers {' '.join(unmatched)}: no weight of the model or of {source} has that name "
                        f"or lies under that module; give parameter names or module prefixes (e.g. {example})")
    fitting, skipped = {}, []
    for key, value in saved.items():
        shape = tuple(value.shape)
        if key not in expected:
            skipped.append(f"{key} {shape}: not in this model")
        elif any(names_layer(key, name) for name in ignore_layers):
            skipped.append(f"{key} {shape}: --ignore-layers")
        elif shape != tuple(expected[key].shape):
            skipped.append(f"{key}: {shape} in the checkpoint, {tuple(expected[key].shape)} in this model")
        else:
            fitting[key] = value
    if not fitting:
        raise UserError(f"none of the weights in {source} fit this model (first names: {', '.join(list(saved)[:3])}; "
                        f"the model's: {', '.join(list(expected)[:3])}): is it a checkpoint of another family?")
    skipped += [f"{key} {tuple(value.shape)}: not in the checkpoint" for key, value in expected.items()
                if key not in saved]
    model.load_state_dict(fitting, strict=False)
    return skipped


def model_from_checkpoint(recipe, checkpoint: dict, source: str, published_config: dict | None = None
                          ) -> tuple[torch.nn.Module, dict]:
    """(model with the checkpoint's weights, on the CPU, the config it was built from) from a checkpoint already
    read: load_trained_model's work after reading the file (its docstring says where the config comes from)."""
    config = checkpoint.get("model_config")
    if config is None and isinstance(checkpoint.get("config"), dict) and recipe.config_from_reference is not None:
        try:
            config = {**(published_config or {}), **recipe.config_from_reference(checkpoint["config"])}
        except (KeyError, TypeError) as error:
            raise UserError(f"{source}: cannot read NVIDIA's model config {checkpoint['config']}: {error!r}") from error
    config = config if config is not None else published_config
    if config is None:
        raise UserError(f"{source} carries no model config; give the model flags on the command line")
    try:
        model = recipe.build_model(config)
    except (TypeError, ValueError) as error:  # a config that names unknown settings or impossible sizes
        raise UserError(f"{source}: its model config {config} does not build a {recipe.name}: {error}") from error
    state_dict = model_state_from_checkpoint(checkpoint, source)
    unfold_weight_norm_where_folded(model, state_dict)
    load_model_state(model, state_dict, source)
    return model, config
