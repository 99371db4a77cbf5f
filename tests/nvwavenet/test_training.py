"""WaveNet through train.py on the synthetic corpus: the loss falls to pinned values and stop-and-resume reproduces
the uninterrupted loss curve exactly."""
from tests.nvwavenet.test_vocoder import TINY_WAVENET
from tests.training_runs import check_pinned_losses_and_exact_resume

PINNED_WAVENET_EPOCH_LOSSES = [5.454670047760009, 5.382598781585694, 5.102499198913574]  # ln 256 = 5.545 at chance


def wavenet_args(corpus, output, *extra):
    return ["-m", "WaveNet", "-o", str(output), "-d", str(corpus.dataset_dir), "--training-files",
            str(corpus.train_filelist), "--validation-files", str(corpus.val_filelist), "-bs", "4", "--num-workers",
            "0", "--quiet", "--cpu", "-lr", "3e-3", "--seed", "2", *TINY_WAVENET, *extra]


def test_wavenet_loss_falls_to_pinned_values_and_resume_is_exact(synthetic_corpus, tmp_path):
    check_pinned_losses_and_exact_resume(lambda output, *extra: wavenet_args(synthetic_corpus, output, *extra),
                                         PINNED_WAVENET_EPOCH_LOSSES, tmp_path)
