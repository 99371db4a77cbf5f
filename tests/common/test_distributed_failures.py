"""A rank that fails with anything but an error every rank meets together (a bug, a RuntimeError in a save, a user
error met by one rank alone) stops every rank within a minute, not after the process-group timeout: two real gloo
ranks started independently, as srun starts them, with the fault injected by tests/common/failing_ranks.py. Also
--distributed-timeout and the first-failure board (common.distributed.FailureBoard) on its own."""
import argparse
from datetime import timedelta

import pytest
import torch.distributed as dist

from common.training_settings import add_training_args
from common.distributed import FailureBoard, RankFailure
from common.errors import ArgumentParser, UserError
from tests.common.failing_ranks import SAVE_FAULT, STEP_FAULT, run_failing_ranks
from tests.common.toy_recipes import free_port

ONE_MINUTE = 60.0  # every rank has ended this long after the fault at the latest
FLAGS = ("--epochs", "2", "--save-interval-updates", "2", "--distributed-timeout", "30")


def stderr_lines(rank) -> list[str]:
    return rank.stderr.strip().splitlines()


@pytest.mark.slow
def test_rank_0_failing_in_a_save_stops_rank_1_with_its_message(tmp_path):
    failing, waiting = run_failing_ranks("save_on_rank_0", tmp_path, *FLAGS)
    assert failing.returncode == 1 and waiting.returncode == 1
    assert stderr_lines(failing)[0] == "Traceback (most recent call last):"  # a bug: its traceback
    assert stderr_lines(failing)[-1] == f"RuntimeError: {SAVE_FAULT}"
    assert stderr_lines(waiting) == [f"error: rank 0 stopped the run: RuntimeError: {SAVE_FAULT}"]
    assert failing.seconds_after_the_fault < ONE_MINUTE and waiting.seconds_after_the_fault < ONE_MINUTE


@pytest.mark.slow
def test_rank_1_failing_in_a_step_stops_rank_0_with_its_message(tmp_path):
    waiting, failing = run_failing_ranks("step_on_rank_1", tmp_path, *FLAGS)
    assert failing.returncode == 1 and waiting.returncode == 1
    assert stderr_lines(failing)[-1] == f"RuntimeError: {STEP_FAULT}"
    assert stderr_lines(waiting) == [f"error: rank 1 stopped the run: RuntimeError: {STEP_FAULT}"]
    assert failing.seconds_after_the_fault < ONE_MINUTE and waiting.seconds_after_the_fault < ONE_MINUTE


@pytest.mark.slow
def test_a_user_error_met_by_one_rank_alone_ends_both_with_status_2(tmp_path):
    waiting, failing = run_failing_ranks("user_error_on_rank_1", tmp_path, *FLAGS)
    assert (failing.returncode, waiting.returncode) == (2, 2)
    assert stderr_lines(failing) == [f"error: {STEP_FAULT}"]
    assert stderr_lines(waiting) == [f"error: rank 1 stopped the run: {STEP_FAULT}"]
    assert waiting.seconds_after_the_fault < ONE_MINUTE


@pytest.mark.slow
def test_a_rank_stuck_outside_any_collective_is_ended_by_its_watcher_within_a_minute(tmp_path):
    """Rank 0 sleeps in the step in which rank 1 fails: no collective of rank 0's fails, so its watcher thread, which
    reads the failure from the store, ends it (as it ends a rank waiting in an NCCL collective, which does not fail
    when a rank leaves)."""
    stuck, failing = run_failing_ranks("rank_0_stuck", tmp_path, *FLAGS)
    assert failing.returncode == 1 and stuck.returncode == 1
    assert stderr_lines(stuck) == [f"error: rank 1 stopped the run: RuntimeError: {STEP_FAULT}"]
    assert stuck.seconds_after_the_fault < ONE_MINUTE


def parse_training_flags(*flags: str) -> argparse.Namespace:
    parser = ArgumentParser()
    add_training_args(parser)
    return parser.parse_args(["-o", "out", "-lr", "1e-3", *flags])


def test_distributed_timeout_is_thirty_minutes_unless_given_and_must_be_positive(capsys):
    assert parse_training_flags().distributed_timeout == 30
    assert parse_training_flags("--distributed-timeout", "2.5").distributed_timeout == 2.5
    with pytest.raises(SystemExit) as exit_request:
        parse_training_flags("--distributed-timeout", "0")
    assert exit_request.value.code == 2
    assert capsys.readouterr().err == ("error: argument --distributed-timeout: must be > 0, got 0.0 "
                                       "(--help lists the flags)\n")


def test_the_first_failure_written_to_the_board_is_the_one_every_rank_reads():
    store = dist.TCPStore("127.0.0.1", free_port(), 1, True, timedelta(seconds=10))
    boards = [FailureBoard(store, rank, world_size=2) for rank in range(2)]
    try:
        assert boards[0].recorded() is None
        first = boards[1].record(UserError("train.txt:3: cannot read wavs/3.wav"))
        assert first == RankFailure(1, 2, "train.txt:3: cannot read wavs/3.wav")
        # Rank 0's own error (its collective with rank 1 failing) comes second: it reads rank 1's.
        assert boards[0].record(RuntimeError("Connection closed by peer")) == first
        assert first.stopped_the_run() == "error: rank 1 stopped the run: train.txt:3: cannot read wavs/3.wav"
        assert RankFailure.of(RuntimeError("line one\nline two"), 0) == RankFailure(0, 1, "RuntimeError: line one "
                                                                                           "line two")
    finally:
        for board in boards:
            board.leave()  # stops its watcher
