"""wav2vec 2.0 fine-tuning through train.py (pre-training's house tests are in tests/test_families.py): the CTC loss
falls to pinned values and resumes exactly, validation reports WER and CER over the whole set and keeps the best
checkpoint, a pre-trained checkpoint of ours starts it, the encoder stays frozen for --freeze-finetune-updates,
--random-phase-prob changes what training hears."""
import math

import pytest
import torch

import train
from common.checkpoint import load_checkpoint
from common.errors import UserError
from common.logger import is_update_record, read_dllogger_file
from tests.families import WAV2VEC2_FINETUNING_PINNED, run_args
from tests.training_runs import check_pinned_losses_and_exact_resume
from tests.wav2vec2.tiny_finetuning import finetune_args


@pytest.mark.slow
def test_fine_tuning_loss_falls_to_pinned_values_and_resume_is_exact(synthetic_asr_corpus, tmp_path):
    check_pinned_losses_and_exact_resume(lambda output, *extra: finetune_args(synthetic_asr_corpus, output, *extra),
                                         WAV2VEC2_FINETUNING_PINNED, tmp_path)


@pytest.mark.slow
def test_validation_reports_wer_and_cer_and_keeps_the_best_checkpoint(synthetic_asr_corpus, tmp_path):
    train.main(finetune_args(synthetic_asr_corpus, tmp_path, "--epochs", "2"))
    validations = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json") if "val_wer" in r["data"]]
    assert len(validations) == 2 and all(0 <= v["val_wer"] and 0 <= v["val_cer"] for v in validations)
    best = load_checkpoint(tmp_path / "checkpoint_wav2vec2_best.pt")
    assert best["best_metric_value"] == min(v["val_wer"] for v in validations)
    assert best["text"]["symbols"][:4] == ["<s>", "<pad>", "</s>", "<unk>"]  # the dictionary travels with the model
    assert best["model_config"]["vocab_size"] == len(best["text"]["symbols"])


@pytest.mark.slow
def test_fine_tuning_starts_from_a_pretrained_checkpoint_of_ours(synthetic_asr_corpus, tmp_path):
    train.main(run_args("wav2vec2", synthetic_asr_corpus, tmp_path / "pretrain", "--epochs", "1"))
    pretrained_path = tmp_path / "pretrain" / "checkpoint_wav2vec2_last.pt"
    pretrained = load_checkpoint(pretrained_path)
    # No architecture flags: the model is the pre-trained file's. Frozen for all its updates.
    train.main(["-m", "wav2vec2", "finetune", "--w2v-path", str(pretrained_path), "--data",
                str(synthetic_asr_corpus.directory), "-o", str(tmp_path / "finetune"), "--max-tokens", "100000",
                "-lr", "1e-3", "--epochs", "1", "--max-updates", "100", "--freeze-finetune-updates", "100",
                "--num-workers", "0", "--quiet", "--cpu"])
    finetuned = load_checkpoint(tmp_path / "finetune" / "checkpoint_wav2vec2_last.pt")
    assert finetuned["model_config"]["encoder_embed_dim"] == pretrained["model_config"]["encoder_embed_dim"] == 32
    assert finetuned["model_config"]["feature_grad_mult"] == 0.0 and finetuned["model_config"]["mask_prob"] == 0.5
    for key, value in pretrained["state_dict"].items():  # the encoder is the pre-trained one
        if not key.startswith(("quantizer.", "project_q.", "final_proj.")):
            assert torch.equal(finetuned["state_dict"]["w2v_encoder.w2v_model." + key], value), key
    assert finetuned["state_dict"]["w2v_encoder.proj.weight"].shape == (32, 32)  # the CTC head: 32 letters
    assert finetuned["iteration"] > 0


@pytest.mark.slow
def test_random_phase_changes_what_fine_tuning_hears_and_a_share_outside_0_1_is_one_clear_error(
        synthetic_asr_corpus, tmp_path):
    def losses(name, *extra):
        train.main(finetune_args(synthetic_asr_corpus, tmp_path / name, "--epochs", "1", *extra))
        return [r["data"]["train_loss"] for r in read_dllogger_file(tmp_path / name / "nvlog.json")
                if is_update_record(r)]

    plain, phase = losses("plain"), losses("phase", "--random-phase-prob", "1.0")
    assert len(plain) == len(phase) > 1 and all(math.isfinite(loss) for loss in phase)
    assert phase[0] != plain[0]  # the same batches and masks, another waveform
    with pytest.raises(UserError, match=r"--random-phase-prob must be in \[0, 1\], got 1.5"):
        train.main(finetune_args(synthetic_asr_corpus, tmp_path / "bad", "--epochs", "1", "--random-phase-prob",
                                 "1.5"))


def test_a_pretrained_file_that_does_not_fit_is_one_clear_error(synthetic_asr_corpus, tmp_path):
    with pytest.raises(UserError, match="--w2v-path .*missing.txt"):
        train.main(finetune_args(synthetic_asr_corpus, tmp_path, "--epochs", "1", "--w2v-path",
                                 str(tmp_path / "missing.txt")))
