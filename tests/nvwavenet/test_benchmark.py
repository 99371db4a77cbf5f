"""The real-time batch search of nvwavenet/benchmark.py (no GPU needed: rates are given as functions)."""
from nvwavenet.benchmark import largest_real_time_batch


def counting(rate_of):
    calls = []

    def rate_at(batch):
        calls.append(batch)
        return rate_of(batch)
    return rate_at, calls


def test_finds_the_largest_batch_at_or_above_the_rate_in_logarithmically_many_timings():
    rate_at, calls = counting(lambda batch: 40000 / (1 + batch / 100))  # 16 kHz down to batch 150
    assert largest_real_time_batch(rate_at, 16000, 512) == 150
    assert len(set(calls)) <= 2 * 10  # doubling to 256, then bisecting 128..256


def test_a_batch_that_cannot_launch_ends_the_search_like_a_slow_one():
    # benchmark_gpu times a batch the kernel refuses (co-residency, memory) as rate 0
    rate_at, _ = counting(lambda batch: 30000.0 if batch <= 96 else 0.0)
    assert largest_real_time_batch(rate_at, 16000, 512) == 96


def test_too_slow_at_batch_one_and_fast_up_to_the_cap():
    assert largest_real_time_batch(lambda batch: 1000.0, 16000, 512) == 0
    assert largest_real_time_batch(lambda batch: 1e6, 16000, 300) == 300
