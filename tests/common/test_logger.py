"""common/logger.py: DLLogger lines written and read back."""
from __future__ import annotations

import math

from common.logger import RunLogger, is_update_record, read_dllogger_file


def test_non_finite_numbers_read_back_as_numbers(tmp_path):
    logger = RunLogger(tmp_path / "nvlog.json")
    logger.log([1, 1], {"train_loss": math.nan, "grad_norm": math.inf, "low": -math.inf, "note": "nan or not",
                        "shape": [2, 3]}, echo=False)
    logger.log([1], {"train_loss": 0.5}, echo=False)
    logger.close()
    assert '"train_loss": "nan"' in (tmp_path / "nvlog.json").read_text()  # JSON has no NaN literal

    records = [record for record in read_dllogger_file(tmp_path / "nvlog.json") if record["type"] == "LOG"]
    data = records[-2]["data"]
    assert math.isnan(data["train_loss"]) and data["grad_norm"] == math.inf and data["low"] == -math.inf
    assert data["note"] == "nan or not" and data["shape"] == [2, 3]
    assert [is_update_record(record) for record in records[-2:]] == [True, False]
