import pytest

from common.sampler import EpochBatchSampler
from common.schedules import EpochAnnealSchedule, WarmupPolynomialSchedule


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
    schedule = EpochAnnealSchedule(1e-3, [2, 4, 6], 0.1)
    assert [round(schedule.lr_at(epoch, 0), 10) for epoch in range(7)] == [1e-3, 1e-3, 1e-4, 1e-4, 1e-5, 1e-5, 1e-6]
    schedule = EpochAnnealSchedule(1.0, [1, 2, 3, 4], 0.3)
    assert [round(schedule.lr_at(epoch, 0), 6) for epoch in range(5)] == [1.0, 0.3, 0.1, 0.03, 0.01]
    with pytest.raises(ValueError, match="0.1 or 0.3"):
        EpochAnnealSchedule(1.0, [], 0.5)


def test_warmup_polynomial_schedule():
    schedule = WarmupPolynomialSchedule(base_lr=1.0, warmup_steps=4, total_steps=14, power=2.0, final_lr=0.0)
    assert schedule.lr_at(0, 0) == 0.25 and schedule.lr_at(0, 3) == 1.0
    assert schedule.lr_at(0, 9) == pytest.approx(0.25)
    assert schedule.lr_at(0, 14) == 0.0 and schedule.lr_at(0, 100) == 0.0
