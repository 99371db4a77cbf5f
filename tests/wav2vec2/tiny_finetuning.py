"""wav2vec 2.0 CTC fine-tuning of the conformance test's tiny model through train.py (tests/wav2vec2/test_training.py,
test_inference.py)."""
from tests.families import FAMILIES, run_args

TINY_ARCHITECTURE = [flag for flag in FAMILIES["wav2vec2"].flags if flag != "pretrain"][:-4]  # no schedule flags
FINETUNING = ["finetune", *TINY_ARCHITECTURE, "--mask-prob", "0.2", "--mask-channel-prob", "0.1",
              "--mask-channel-length", "4", "--encoder-layerdrop", "0.0", "--max-updates", "1000"]


def finetune_args(corpus, output, *extra):
    arguments = run_args("wav2vec2", corpus, output, *FINETUNING, *extra)
    arguments.remove("pretrain")
    return arguments
