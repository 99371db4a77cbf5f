"""Run logging: DLLogger-format JSON lines, readable stdout lines and TensorBoard, written by rank 0 only.

Each JSON line looks like NVIDIA's DLLogger output, so existing parsers keep working:
    DLLL {"timestamp": ..., "datetime": ..., "elapsedtime": ..., "type": "LOG", "step": [1, 20], "data": {...}}
`step` is "PARAMETER" for the run's settings, a list such as [epoch] or [epoch, iteration] for measurements,
and [] for the run summary.
"""
from __future__ import annotations

import json
import math
import os
import time
from datetime import datetime
from pathlib import Path

import torch

from common.checkpoint import refused_write_advice
from common.errors import UserError

NON_FINITE_TEXTS = frozenset(str(value) for value in (math.nan, math.inf, -math.inf))


def is_non_finite_text(value) -> bool:
    return isinstance(value, str) and value in NON_FINITE_TEXTS


def _jsonable(value):
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf literals
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return str(value)


def read_dllogger_file(path: str | Path) -> list[dict]:
    """Parse a DLLogger JSON-lines file back into records (for tests and analysis scripts)."""
    records = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("DLLL "):
            record = json.loads(line[len("DLLL "):])
            if isinstance(record.get("data"), dict):  # the non-finite numbers _jsonable wrote as text: numbers again
                record["data"] = {key: float(value) if is_non_finite_text(value) else value
                                  for key, value in record["data"].items()}
            records.append(record)
    return records


def is_update_record(record: dict) -> bool:
    """A training update's record, read back by read_dllogger_file: logged at [epoch, batch] with its loss (an
    epoch's summary is logged at [epoch])."""
    return isinstance(record["step"], list) and len(record["step"]) == 2 and "train_loss" in record["data"]


class RunLogger:
    """A file the log cannot be written to is a UserError naming it: at start-up (`--log-file` naming a folder, a
    folder that cannot be made, `--tensorboard-dir` naming a file) and mid-run (a full disk, a file-size limit)."""

    def __init__(self, log_file: str | Path | None, tensorboard_dir: str | Path | None = None,
                 enabled: bool = True):
        self.enabled = enabled
        self.start_time = time.time()
        self.log_file = Path(log_file) if log_file is not None else None
        self.handle = None
        self.logged_bytes = 0  # the size of the log file after the last whole record
        self.tensorboard = None
        if not enabled:
            return
        if self.log_file is not None:
            if self.log_file.is_dir():
                raise UserError(f"--log-file {self.log_file} is a folder; give the name of the log file to write "
                                "(nvlog.json unless given)")
            in_the_way = _file_in_place_of_a_folder(self.log_file.parent)
            if in_the_way is not None:
                raise UserError(f"--log-file {self.log_file}: {in_the_way} is a file, not a folder; give a path "
                                "in a folder")
            try:
                self.log_file.parent.mkdir(parents=True, exist_ok=True)
                self.handle = open(self.log_file, "a", buffering=1)
            except OSError as error:
                raise UserError(f"--log-file {self.log_file}: cannot create it or append to it: "
                                f"{error.strerror or error}; {refused_write_advice(error)}") from error
            self.logged_bytes = self.handle.tell()
        if tensorboard_dir is not None:
            in_the_way = _file_in_place_of_a_folder(Path(tensorboard_dir))
            if in_the_way is not None:
                raise UserError(f"--tensorboard-dir {tensorboard_dir}: {in_the_way} is a file, not a folder; give "
                                "a folder for the TensorBoard events")
            from torch.utils.tensorboard import SummaryWriter  # imported late: tensorboard is slow to import

            try:
                self.tensorboard = SummaryWriter(str(tensorboard_dir))
            except OSError as error:
                raise UserError(f"--tensorboard-dir {tensorboard_dir}: cannot create the folder or write in it: "
                                f"{error.strerror or error}; {refused_write_advice(error)}") from error

    def _write(self, record_type: str, step, data: dict) -> None:
        now = time.time()
        record = {
            "timestamp": now,
            "datetime": datetime.now().isoformat(),
            "elapsedtime": now - self.start_time,
            "type": record_type,
            "step": step,
            "data": _jsonable(data),
        }
        if self.handle is not None:
            line = "DLLL " + json.dumps(record) + "\n"
            try:
                self.handle.write(line)
            except OSError as error:
                self._stop_after_a_refused_write()
                raise UserError(f"cannot write the log {self.log_file}: {error.strerror or error} (the records "
                                f"before are intact); {refused_write_advice(error)}") from error
            self.logged_bytes += len(line.encode())

    def _stop_after_a_refused_write(self) -> None:
        """After a write the system refused (a full disk): close the log without the failing record, whose start
        may have reached the file, so that the log ends with a whole record and a resumed run appends after it."""
        handle, self.handle = self.handle, None
        try:
            handle.close()  # flushes what is left of the record, which fails again: the file is closed all the same
        except OSError:
            pass
        try:
            os.truncate(self.log_file, self.logged_bytes)
        except OSError:
            pass  # then the log ends in part of a record

    def metadata(self, metric: str, unit: str, **extra) -> None:
        if self.enabled:
            self._write("METADATA", "PARAMETER", {"metric": metric, "unit": unit, **extra})

    def parameters(self, values: dict) -> None:
        if self.enabled:
            self._write("LOG", "PARAMETER", values)

    def log(self, step, data: dict, echo: bool = True) -> None:
        """step: a list like [epoch, iteration]; data: metric name -> number."""
        if not self.enabled:
            return
        self._write("LOG", list(step) if isinstance(step, (list, tuple)) else step, data)
        if echo:
            values = " ".join(f"{name}: {_format(value)}" for name, value in data.items())
            print(f"DLL {datetime.now():%Y-%m-%d %H:%M:%S} - {step} {values}", flush=True)

    def scalars(self, global_step: int, values: dict) -> None:
        if self.tensorboard is not None:
            for name, value in values.items():
                self.tensorboard.add_scalar(name, float(value), global_step)

    def image(self, name: str, image_hwc, global_step: int) -> None:
        if self.tensorboard is not None:
            self.tensorboard.add_image(name, image_hwc, global_step, dataformats="HWC")

    def audio(self, name: str, audio: torch.Tensor, global_step: int, sampling_rate: int) -> None:
        if self.tensorboard is not None:
            self.tensorboard.add_audio(name, audio.float().cpu().clamp(-1, 1), global_step, sampling_rate)

    def close(self) -> None:
        if self.handle is not None:
            handle, self.handle = self.handle, None
            try:
                handle.close()
            except OSError as error:
                raise UserError(f"cannot write the log {self.log_file}: {error.strerror or error}; "
                                f"{refused_write_advice(error)}") from error
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None


def _file_in_place_of_a_folder(folder: Path) -> Path | None:
    """The file, if any, that stands at `folder` or at one of the folders above it, so that it cannot be made (the
    system's own message for that, "File exists", does not say which)."""
    for path in (folder, *folder.parents):
        if path.exists():
            return None if path.is_dir() else path
    return None


def _format(value) -> str:
    if isinstance(value, torch.Tensor):
        value = value.item()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def plot_to_image(matrix, title: str = "", xlabel: str = "", ylabel: str = ""):
    """Render a 2-d array (an alignment or a mel) as an RGB numpy image (H, W, 3) with matplotlib's Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axis = plt.subplots(figsize=(6, 4))
    shown = axis.imshow(np.asarray(matrix), aspect="auto", origin="lower", interpolation="none")
    figure.colorbar(shown, ax=axis)
    axis.set_title(title)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    figure.tight_layout()
    figure.canvas.draw()
    image = np.asarray(figure.canvas.buffer_rgba())[..., :3].copy()
    plt.close(figure)
    return image
