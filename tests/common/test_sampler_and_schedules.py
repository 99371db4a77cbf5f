import argparse

import pytest

from common.training_settings import TrainingSettings, add_training_args
from common.sampler import EpochBatchSampler, MaxTokensBatchSampler
from common.arguments import config_from_args
from common.schedules import EpochAnnealSchedule, TriStageSchedule, WarmupPolynomialSchedule, schedule_of


def test_epoch_order_depends_only_on_seed_and_epoch():
    a = EpochBatchSampler(20, 4, seed=1)
    b = EpochBatchSampler(20, 4, seed=1)
    a.set_epoch(3)
    b.set_epoch(3)
    assert list(a) == list(b)
    b.set_epoch(4)
    assert list(a) != list(b)
    assert sorted(i for batch in a for i in batch) == list(range(20))


def test_ranks_partition_the_epoch_and_resume_skips_batches():
    ranks = [EpochBatchSampler(22, 2, seed=5, rank=r, world_size=2) for r in range(2)]
    for sampler in ranks:
        sampler.set_epoch(0)
    seen = [i for sampler in ranks for batch in sampler for i in batch]
    assert len(seen) == len(set(seen)) == 20  # 11 batches -> 10 usable, split 5 + 5
    full = list(ranks[0])
    ranks[0].set_epoch(0, skip_batches=2)
    assert list(ranks[0]) == full[2:] and len(ranks[0]) == len(full) - 2


def test_length_bucketing_groups_similar_lengths():
    lengths = [1, 100, 2, 99, 3, 98, 4, 97]
    sampler = EpochBatchSampler(8, 2, seed=0, lengths=lengths, bucket_size=4)
    sampler.set_epoch(0)
    for batch in sampler:
        values = [lengths[i] for i in batch]
        assert max(values) - min(values) < 10


def test_too_little_data_is_a_clear_error():
    with pytest.raises(ValueError, match="3 items cannot fill one batch of 4"):
        EpochBatchSampler(3, 4)


def test_epoch_anneal_schedule_matches_reference_rule():
    schedule = EpochAnnealSchedule([2, 4, 6], 0.1)
    assert [round(schedule.multiplier(epoch, 0), 10) for epoch in range(7)] == [1, 1, 0.1, 0.1, 0.01, 0.01, 0.001]
    schedule = EpochAnnealSchedule([1, 2, 3, 4], 0.3)
    assert [round(schedule.multiplier(epoch, 0), 6) for epoch in range(5)] == [1.0, 0.3, 0.1, 0.03, 0.01]
    with pytest.raises(ValueError, match="0.1 or 0.3"):
        EpochAnnealSchedule([], 0.5)


def test_warmup_polynomial_schedule():
    schedule = WarmupPolynomialSchedule(warmup_steps=4, total_steps=14, power=2.0, final_scale=0.0)
    assert schedule.multiplier(0, 0) == 0.25 and schedule.multiplier(0, 3) == 1.0
    assert schedule.multiplier(0, 9) == pytest.approx(0.25)
    assert schedule.multiplier(0, 14) == 0.0 and schedule.multiplier(0, 100) == 0.0


def test_tri_stage_schedule_warms_up_holds_and_decays_exponentially():
    schedule = TriStageSchedule(warmup_steps=10, hold_steps=5, decay_steps=20, init_scale=0.01, final_scale=0.05)
    assert schedule.multiplier(0, 0) == pytest.approx(0.01)
    assert schedule.multiplier(0, 5) == pytest.approx(0.01 + 0.99 * 0.5)
    assert [schedule.multiplier(0, step) for step in (10, 12, 14)] == [1.0, 1.0, 1.0]
    assert schedule.multiplier(0, 25) == pytest.approx(0.05 ** 0.5)  # halfway through the decay, in log space
    assert schedule.multiplier(0, 35) == pytest.approx(0.05) and schedule.multiplier(0, 1000) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="final-lr-scale"):
        TriStageSchedule(1, 1, 10, final_scale=0.0)


def test_schedules_come_from_the_flags():
    parser = argparse.ArgumentParser()
    add_training_args(parser)

    def schedule_of_flags(args: argparse.Namespace):
        return schedule_of(config_from_args(TrainingSettings, args))

    base = ["-o", "x", "-lr", "1", "--max-updates", "30"]
    tri = schedule_of_flags(parser.parse_args(base + ["--lr-schedule", "tri-stage", "--warmup-updates", "3",
                                                       "--hold-updates", "4", "--decay-updates", "5",
                                                       "--final-lr-scale", "0.1"]))
    assert tri == TriStageSchedule(3, 4, 5, 0.01, 0.1)
    poly = schedule_of_flags(parser.parse_args(base + ["--lr-schedule", "warmup-polynomial", "--warmup-updates", "2"]))
    assert poly == WarmupPolynomialSchedule(2, 30, 1.0, 0.0)
    with pytest.raises(ValueError, match="set --max-updates"):
        schedule_of_flags(parser.parse_args(["-o", "x", "-lr", "1", "--lr-schedule", "warmup-polynomial"]))


LENGTHS = [5, 40, 7, 33, 12, 18, 25, 9, 30, 3, 16, 21, 38, 11, 27, 6]


def padded_size(batch):
    return len(batch) * max(LENGTHS[i] for i in batch)


def test_max_tokens_batches_stay_within_the_budget_and_cover_the_epoch():
    sampler = MaxTokensBatchSampler(LENGTHS, max_tokens=60, drop_uneven=False, seed=3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert all(padded_size(batch) <= 60 for batch in batches)
        assert sorted(i for batch in batches for i in batch) == list(range(len(LENGTHS)))
    # Similar lengths batch together: padding is a small part of each batch.
    padding = sum(padded_size(b) - sum(LENGTHS[i] for i in b) for b in batches)
    assert padding < 0.25 * sum(LENGTHS)


def test_max_tokens_order_is_a_function_of_seed_and_epoch_sharded_after_batching_and_resumable():
    def batches(seed, epoch, rank=0, world_size=1, skip=0):
        sampler = MaxTokensBatchSampler(LENGTHS, max_tokens=60, seed=seed, rank=rank, world_size=world_size)
        sampler.set_epoch(epoch, skip_batches=skip)
        return list(sampler)

    assert batches(1, 0) == batches(1, 0) and batches(1, 0) != batches(1, 1)
    whole = batches(1, 2)
    ranks = [batches(1, 2, rank, 2) for rank in range(2)]
    assert len(ranks[0]) == len(ranks[1])
    even = len(whole) - len(whole) % 2
    assert [b for pair in zip(*ranks) for b in pair] == whole[:even]  # the same global batches, dealt out
    assert batches(1, 2, 1, 2, skip=2) == ranks[1][2:]
    sampler = MaxTokensBatchSampler(LENGTHS, max_tokens=60, seed=1, rank=1, world_size=2)
    sampler.set_epoch(2, skip_batches=2)
    assert len(sampler) == len(ranks[1]) - 2


def test_max_tokens_names_the_item_too_long_for_the_budget():
    with pytest.raises(ValueError, match=r"1 item\(s\) are longer than --max-tokens 35 \(item 1: 40\)"):
        MaxTokensBatchSampler([5, 40, 7], max_tokens=35)
