"""Reading pickles of other implementations' training files (fairseq, NVIDIA) without running anything they hold.

    content = read_checkpoint_of_any_origin(path, "--w2v-path")  # ours with weights_only=True, theirs restricted
    content = read_restricted(path, "--w2v-path")  # tensors, plain containers, config objects as plain dicts

torch.load(weights_only=True) refuses the argparse.Namespace and omegaconf DictConfig that such files hold, and
torch.load without it would run whatever the pickle names. Here a restricted unpickler reads them instead:
argparse.Namespace becomes a dict, omegaconf's containers and nodes (and fairseq's config classes, which they
reference) become stand-ins that only keep the state the pickle hands them (omegaconf need not be installed), tensors
are rebuilt by torch's own functions, and any other class or function a file names is refused with a UserError
naming the file and the class, before it is called.

This project's own files hold only tensors and plain containers, and load with torch.load(weights_only=True)
(common.checkpoint.load_checkpoint) like every checkpoint here; read_checkpoint_of_any_origin turns to the restricted
unpickler only for a file that weights_only refuses for the objects it names. A site that sets
TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 forbids any other unpickler, so there a fairseq file is refused with what to do: convert
it once elsewhere (python -m wav2vec2.convert) into a file of this project.
"""
from __future__ import annotations

import builtins
import collections
import importlib
import os
import pathlib
import pickle
import types
from pathlib import Path

import torch

from common.checkpoint import existing_checkpoint_file, load_checkpoint
from common.errors import UserError
from common.torch_version import check_torch_version


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle names a class or function that this loader does not read."""

    def __init__(self, qualified_name: str):
        super().__init__(f"refused global {qualified_name}")
        self.qualified_name = qualified_name


class _Namespace(dict):
    """argparse.Namespace as its pickle gives it: the attributes, as a dict."""

    def __setstate__(self, state):
        self.update(state)


class _Foreign:
    """An object of a class that is never imported (omegaconf's containers, nodes and metadata; fairseq's config
    dataclasses): it keeps what its pickle gives it, and no code of that class runs."""
    qualified_name = "?"

    def __new__(cls, *args):
        # An enum member pickles as EnumClass(value): the value is what a configuration means.
        if len(args) == 1 and isinstance(args[0], (str, int, float, bool)):
            return args[0]
        return object.__new__(cls)

    def __init__(self, *args):
        self.args = args
        self.state = None

    def __setstate__(self, state):
        self.state = state


class _TypeReference:
    """A type named in omegaconf's metadata (typing.Any, Optional[int], a dataclass): read as its name."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


_FOREIGN_CLASSES: dict[str, type] = {}


def _foreign_class(qualified_name: str) -> type:
    if qualified_name not in _FOREIGN_CLASSES:
        _FOREIGN_CLASSES[qualified_name] = type(qualified_name.rsplit(".", 1)[-1], (_Foreign,),
                                                {"qualified_name": qualified_name})
    return _FOREIGN_CLASSES[qualified_name]


def _subscripted_type(container, key):
    """operator.getitem as pickles of typing.Tuple[float, float] use it; on type references only."""
    if not isinstance(container, _TypeReference):
        raise RefusedGlobal("_operator.getitem (on anything but a type)")
    return _TypeReference(f"{container.name}[{key!r}]")


def _type_of(*args):
    """builtins.type as the pickle of type(None) uses it, and nothing else."""
    if args != (None,):
        raise RefusedGlobal("builtins.type (other than type(None))")
    return type(None)


def _reconstructor(cls, base, state):
    """copyreg._reconstructor (pickle protocols 0 and 1) for the stand-ins only."""
    if base is not object or not isinstance(cls, type) or not issubclass(cls, (_Foreign, _Namespace)):
        raise RefusedGlobal(f"copyreg._reconstructor of {getattr(cls, '__name__', cls)}")
    return cls.__new__(cls)


def _path_as_text(*parts):
    """pathlib's paths (a data folder in the args) as text: built from their parts, never looked up on disk."""
    if not all(isinstance(part, str) for part in parts):
        raise RefusedGlobal("pathlib path of anything but strings")
    return str(pathlib.PurePosixPath(*parts))


def _plain_dict_from_factory(*_):
    """collections.defaultdict (omegaconf keeps a resolver cache in one): a plain dict, its factory not called."""
    return {}


_TORCH_REBUILD_FUNCTIONS = {
    "torch._utils": {"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
                     "_rebuild_parameter_with_state"},
    "torch._tensor": {"_rebuild_from_type_v2"},
}
_PLAIN_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "str", "bytes", "bytearray", "int", "float", "bool",
                   "complex", "slice", "object", "NoneType"}
_NUMPY_NAMES = {"numpy.core.multiarray": {"scalar", "_reconstruct"},
                "numpy._core.multiarray": {"scalar", "_reconstruct"},
                "numpy": {"dtype", "ndarray"}}
# Modules whose classes are read as stand-ins (_Foreign): configuration objects, never imported.
_STAND_IN_MODULES = ("omegaconf", "fairseq")


def _allowed_global(module: str, name: str):
    """What find_class returns for (module, name), or RefusedGlobal."""
    module, name = _python3_name(module, name)
    qualified = f"{module}.{name}"
    if (module, name) == ("argparse", "Namespace"):
        return _Namespace
    if module.split(".")[0] in _STAND_IN_MODULES:
        return _foreign_class(qualified)
    if module == "typing":
        return _TypeReference(qualified)
    if (module, name) in {("_operator", "getitem"), ("operator", "getitem")}:
        return _subscripted_type
    if module == "builtins":
        if name == "type":
            return _type_of
        if name in _PLAIN_BUILTINS:
            return type(None) if name == "NoneType" else getattr(builtins, name)
    if (module, name) == ("collections", "OrderedDict"):
        return collections.OrderedDict
    if (module, name) == ("collections", "defaultdict"):
        return _plain_dict_from_factory
    if module == "pathlib" and name in {"Path", "PosixPath", "PurePath", "PurePosixPath"}:
        return _path_as_text
    if (module, name) == ("copyreg", "_reconstructor"):
        return _reconstructor
    if (module, name) == ("_codecs", "encode"):  # how protocol 2 writes bytes
        return importlib.import_module("_codecs").encode
    if name in _TORCH_REBUILD_FUNCTIONS.get(module, ()):
        return getattr(importlib.import_module(module), name)
    if module == "torch" and (name in {"Size", "Tensor", "device"} or isinstance(getattr(torch, name, None),
                                                                                    torch.dtype)):
        return getattr(torch, name)
    if (module, name) == ("torch.nn.parameter", "Parameter"):
        return torch.nn.Parameter
    if name in _NUMPY_NAMES.get(module, ()):  # numpy floats in fairseq's extra_state (best loss...)
        numpy_module = "numpy._core.multiarray" if module.endswith("multiarray") else "numpy"
        try:
            return getattr(importlib.import_module(numpy_module), name)
        except ImportError:  # numpy 1.x
            return getattr(importlib.import_module(module), name)
    raise RefusedGlobal(qualified)


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """Protocol 2 pickles name Python 2's modules (__builtin__.unicode): what the default find_class maps."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return _allowed_global(module, name)


def _restricted_load(file, **kwargs):
    return _RestrictedUnpickler(file, **kwargs).load()


# The pickle_module that torch's loader takes: Unpickler for the data, load for the legacy format's headers.
RESTRICTED_PICKLE = types.SimpleNamespace(__name__="common.safe_unpickle.restricted_pickle",
                                          Unpickler=_RestrictedUnpickler, load=_restricted_load)


def weights_only_is_forced() -> bool:
    """Whether TORCH_FORCE_WEIGHTS_ONLY_LOAD makes every torch.load weights_only=True (as torch reads it), which
    also refuses a pickle_module such as the restricted unpickler's."""
    return os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true")


def names_objects(error: BaseException | None) -> bool:
    """Whether torch.load(weights_only=True) failed because the pickle names a class or function it does not
    allow (fairseq's argparse.Namespace, omegaconf's containers), not because the file is damaged."""
    return isinstance(error, pickle.UnpicklingError) and "Unsupported global" in str(error)


def read_checkpoint_of_any_origin(path: str | Path, flag: str | None = None):
    """A checkpoint of this project (or any file of tensors and plain containers, as NVIDIA's hold) read with
    weights_only=True through common.checkpoint.load_checkpoint; a file that weights_only refuses for the objects it
    names (fairseq's configuration) through read_restricted. Damage is reported as read_restricted reports it."""
    try:
        return load_checkpoint(path, flag=flag)
    except UserError as refused:
        # Raised with no cause: the file was read (or is missing), and the message says what is wrong with it.
        if refused.__cause__ is None or (weights_only_is_forced() and not names_objects(refused.__cause__)):
            raise
    return read_restricted(path, flag)


def read_restricted(path: str | Path, flag: str | None = None):
    """torch.load of `path` through the restricted unpickler: tensors, plain containers, and configuration objects
    as plain dicts (see to_plain). A file naming anything else is refused with a UserError naming the class."""
    check_torch_version()
    path, source = existing_checkpoint_file(path, flag)
    if weights_only_is_forced():
        raise UserError(
            f"cannot read {source}: TORCH_FORCE_WEIGHTS_ONLY_LOAD is set, which allows only torch.load("
            "weights_only=True), and this file holds objects that it refuses (fairseq's or NVIDIA's configuration, "
            "which this project otherwise reads with a restricted unpickler of its own); convert it once where that "
            f"variable is not set (python -m wav2vec2.convert --checkpoint {path} --output converted.pt) and give "
            "the converted file, which loads with weights_only=True")
    try:
        content = torch.load(path, map_location="cpu", pickle_module=RESTRICTED_PICKLE, weights_only=False)
    except RefusedGlobal as error:
        raise UserError(
            f"cannot read {source}: its pickle names {error.qualified_name}, and this loader reads only tensors, "
            "plain containers and the configuration objects of fairseq and NVIDIA (argparse.Namespace, omegaconf); "
            "unpickling other objects can run code, so the file is refused without running it") from None
    except PermissionError as error:
        raise UserError(f"cannot read checkpoint {source}: {error.strerror}") from error
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, IndexError, TypeError,
            AttributeError, UnicodeDecodeError, OSError) as error:  # what a damaged pickle or zip can raise
        reason = "the file is empty" if path.stat().st_size == 0 else (
            f"the file is damaged, truncated, or not a PyTorch checkpoint ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:200] if str(error) else ''})")
        raise UserError(f"cannot read checkpoint {source}: {reason}") from error
    try:
        return to_plain(content)
    except ValueError as error:
        raise UserError(f"cannot read checkpoint {source}: {error}") from None


def to_plain(value, _done: dict | None = None, _open: set | None = None):
    """Stand-ins to plain Python: a Namespace to a dict, an omegaconf DictConfig/ListConfig to a dict/list of its
    values, a value node to its value, another stand-in (a config dataclass) to a dict of its fields. A value the
    pickle shares is converted once (a crafted file cannot make it explode); a cycle is refused."""
    if isinstance(value, (torch.Tensor, str, bytes, int, float, bool, type(None))):
        return value
    done, open_ = ({}, set()) if _done is None else (_done, _open)
    key = id(value)
    if key in done:
        return done[key]
    if key in open_:
        raise ValueError("its data refers to itself (a cycle), which no checkpoint does")
    open_.add(key)

    def plain(item):
        return to_plain(item, done, open_)

    if isinstance(value, dict):  # also _Namespace and OrderedDict (a state dict keeps its type)
        converted = {name: plain(item) for name, item in value.items()}
        result = collections.OrderedDict(converted) if isinstance(value, collections.OrderedDict) else converted
    elif isinstance(value, (list, tuple)):
        result = type(value)(plain(item) for item in value)
    elif isinstance(value, _TypeReference):
        result = value.name
    elif isinstance(value, _Foreign):
        state = value.state
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):  # (dict state, slots)
            state = {**(state[0] or {}), **state[1]}
        if isinstance(state, dict) and "_content" in state:  # omegaconf container (None, "???" or "${...}" kept)
            result = plain(state["_content"])
        elif isinstance(state, dict) and "_val" in state:  # omegaconf value node
            result = plain(state["_val"])
        elif isinstance(state, dict):  # a dataclass: its fields (omegaconf's _metadata and _parent left out)
            result = {name: plain(item) for name, item in state.items() if not name.startswith("_")}
        else:
            result = plain(value.args[0]) if len(value.args) == 1 else None
    else:
        result = value
    open_.discard(key)
    done[key] = result
    return result
