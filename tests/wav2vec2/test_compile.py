"""--compile for wav2vec 2.0: at inference the whole model (wav2vec2/api.py: Recognizer compile=True, inference.py
--compile) and in pre-training the feature extractor and each transformer layer (wav2vec2/recipe.py: compile_model)
compute what the eager model computes. Slow: inductor compiles on the CPU."""
import pytest
import torch

import train
from common.registry import get_recipe
from common.trainer import Trainer
from scripts.wav2vec2.benchmark_wav2vec2 import save_random_ctc_checkpoint, write_batch_inputs
from tests.families import run_args
from wav2vec2.api import Recognizer
from wav2vec2.model import TransformerLayer

pytestmark = pytest.mark.slow

NO_DROPOUT = ["--dropout", "0", "--attention-dropout", "0", "--dropout-input", "0", "--dropout-features", "0",
              "--encoder-layerdrop", "0"]  # inductor draws its own dropout masks: equal steps need none


def test_recognizer_compile_gives_the_eager_logits(tmp_path):
    save_random_ctc_checkpoint(tmp_path / "ctc.pt", "tiny", "[1,(1,2),1]")
    wav = write_batch_inputs(tmp_path / "inputs", 1, 1.5, 1.5)
    logits = {}
    for compile in (False, True):
        recognizer = Recognizer.from_checkpoint(tmp_path / "ctc.pt", "cpu", "fp32", compile=compile)
        logits[compile] = recognizer.logits(recognizer.utterances(wav))[0]
    torch.testing.assert_close(logits[True], logits[False], rtol=1e-4, atol=1e-4)


def test_pretraining_compile_takes_the_eager_steps(synthetic_asr_corpus, tmp_path):
    torch.set_num_threads(1)
    losses, batch = {}, None
    for name, flags in (("eager", []), ("compiled", ["--compile"])):
        args = train.parse_run_args(run_args("wav2vec2", synthetic_asr_corpus, tmp_path / name, *NO_DROPOUT,
                                              *flags))
        trainer = Trainer.from_args(get_recipe("wav2vec2"), args)
        trainer.train_sampler.set_epoch(0)
        batch = batch if batch is not None else next(iter(trainer.train_loader))
        torch.manual_seed(0)  # the masks and negatives each step draws
        losses[name] = [trainer.train_step([batch])["train_loss"] for _ in range(2)]
        layers = [module for module in trainer.model.modules() if isinstance(module, TransformerLayer)]
        assert layers and all((module._compiled_call_impl is not None) == (name == "compiled") for module in layers)
    assert losses["compiled"] == pytest.approx(losses["eager"], rel=1e-4)
