"""experiments/onednn_fp32_linear on a tiny recognizer: every linear layer swapped, the logits the same to rounding."""
from experiments.onednn_fp32_linear.measure import main


def test_the_swapped_recognizer_gives_the_same_logits_and_both_are_timed():
    report = main(["--quick"])
    assert report["linear_layers"] > 0 and report["logits_max_abs_difference"] < 1e-4
    assert min(report["product_gflops"].values()) > 0 and min(report["recognizer_seconds"].values()) > 0
