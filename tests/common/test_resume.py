"""Resuming where a run's folder is not as the run left it, and with another setup (docs/long_runs.md, "Requeue and
resume"). --resume-from-last, the requeue path of every launch script, follows the `last` link; where the link
dangles, is missing (a copy made without links) or leads to a file that does not load, the run goes on from the
newest checkpoint that loads, by the step it records. No run writes over checkpoints it does not continue. A resume
with other batching leaves out the items already taken in the epoch; one with another text front-end is refused."""
import os
import shutil
import time

import pytest
import torch

import train
from common.checkpoint import load_checkpoint
from common.errors import UserError
from common.sampler import EpochBatchSampler, MaxTokensBatchSampler, ResumedEpoch, batch_items
from common.text import TextProcessor
from common.trainer import Trainer
from common.training_state import check_text_front_end
from tests.common.toy_recipes import (metric_recipe, recording_recipe, run_ranks_as_processes, toy_args,
                                      toy_recipe)
from tests.families import run_args
from wav2vec2.data_function import ConcatBatches


def trained(folder, *flags, recipe=None) -> Trainer:
    trainer = Trainer.from_args(recipe or toy_recipe(), toy_args(folder, *flags))
    trainer.train()
    return trainer


def final_weights(trainer: Trainer) -> dict:
    return {name: value.clone() for name, value in trainer.model.state_dict().items()}


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def contents(folder) -> dict:
    """Every file of `folder` (links as their target's name), to show that nothing in it changed."""
    return {path.name: (f"-> {os.readlink(path)}" if path.is_symlink() else path.read_bytes())
            for path in sorted(folder.iterdir())}


# A run of 3 epochs of 6 steps, with a checkpoint at each epoch's end and every 4 steps: its files by step are
# 1_4 (4), 1 (6), 2_2 (8), 2 (12), 3_4 (16), 3 (18). Name order puts 2_2 after 2, so the newest name is not the
# newest step.
CHECKPOINTED = ("--epochs", "3", "--epochs-per-checkpoint", "1", "--save-interval-updates", "4")


@pytest.fixture(scope="module")
def straight_weights(tmp_path_factory) -> dict:
    """The weights after 4 epochs straight: what every exact resume below must reach."""
    return final_weights(trained(tmp_path_factory.mktemp("straight"), "--epochs", "4"))


def test_a_dangling_last_link_resumes_from_the_newest_checkpoint_by_its_step_not_its_name_or_file_time(
        tmp_path, capsys, straight_weights):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    trained(run, *CHECKPOINTED)
    for name in ("checkpoint_Toy_3.pt", "checkpoint_Toy_3_4.pt"):
        (run / name).unlink()  # `last` now dangles; the newest left is checkpoint_Toy_2.pt (step 12)
    now = time.time()
    for name, age in (("checkpoint_Toy_2.pt", 300), ("checkpoint_Toy_1.pt", 200), ("checkpoint_Toy_1_4.pt", 100),
                      ("checkpoint_Toy_2_2.pt", 0)):  # the file times say 2_2 (step 8) is the newest
        os.utime(run / name, (now - age, now - age))
    older = {name: (run / name).read_bytes() for name in ("checkpoint_Toy_1.pt", "checkpoint_Toy_1_4.pt")}
    capsys.readouterr()

    resumed = Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "4", "--epochs-per-checkpoint", "1",
                                             "--resume-from-last"))
    assert (resumed.epoch, resumed.iteration, resumed.batches_done_in_epoch) == (2, 12, 0)
    assert (f"--resume-from-last: checkpoint_Toy_last.pt points at checkpoint_Toy_3.pt, which is gone; resuming from "
            f"{run / 'checkpoint_Toy_2.pt'}, the newest checkpoint there that loads (step 12, 2 epochs done)"
            in capsys.readouterr().out)
    resumed.train()
    assert_same_weights(final_weights(resumed), straight_weights)
    assert {name: (run / name).read_bytes() for name in older} == older  # the earlier run's files are untouched
    assert os.readlink(run / "checkpoint_Toy_last.pt") == "checkpoint_Toy_4.pt"


def test_a_copy_made_without_the_link_resumes_from_its_newest_checkpoint(tmp_path, capsys, straight_weights):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    trained(tmp_path / "run", *CHECKPOINTED)
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "run", copy, ignore=shutil.ignore_patterns("checkpoint_Toy_last.pt"))
    capsys.readouterr()
    resumed = Trainer.from_args(toy_recipe(), toy_args(copy, "--epochs", "4", "--resume-from-last"))
    assert (resumed.epoch, resumed.iteration) == (3, 18)
    assert (f"--resume-from-last: there is no checkpoint_Toy_last.pt; resuming from {copy / 'checkpoint_Toy_3.pt'}"
            in capsys.readouterr().out)
    resumed.train()
    assert_same_weights(final_weights(resumed), straight_weights)


def test_a_last_checkpoint_that_does_not_load_is_skipped_with_a_warning_and_the_one_before_resumes(
        tmp_path, capsys, straight_weights):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    trained(run, *CHECKPOINTED)
    newest = run / "checkpoint_Toy_3.pt"
    newest.write_bytes(newest.read_bytes()[:1000])  # as a copy cut short by a full disk
    capsys.readouterr()
    resumed = Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "4", "--epochs-per-checkpoint", "1",
                                             "--resume-from-last"))
    assert (resumed.epoch, resumed.iteration, resumed.batches_done_in_epoch) == (2, 16, 4)  # checkpoint_Toy_3_4.pt
    printed = capsys.readouterr()
    assert f"warning: --resume-from-last: skipping {newest}: the file is damaged or truncated" in printed.err
    assert ("checkpoint_Toy_last.pt leads to checkpoint_Toy_3.pt, which does not load; resuming from "
            f"{run / 'checkpoint_Toy_3_4.pt'}, the newest checkpoint there that loads (step 16, epoch 3, batch 4)"
            in printed.out)
    resumed.train()
    assert_same_weights(final_weights(resumed), straight_weights)
    assert load_checkpoint(newest)["iteration"] == 18  # the damaged file was written again, whole


def test_checkpoints_none_of_which_loads_are_refused_and_left_as_they_are(tmp_path):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    trained(run, "--epochs", "2", "--epochs-per-checkpoint", "1")
    for path in run.glob("checkpoint_Toy_*.pt"):
        if not path.is_symlink():
            path.write_bytes(b"not a checkpoint")
    (run / "checkpoint_Toy_last.pt").unlink()
    before = contents(run)
    with pytest.raises(UserError) as refused:
        Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "3", "--resume-from-last"))
    assert str(refused.value) == (
        f"--resume-from-last: none of the checkpoints of Toy in {run} loads (checkpoint_Toy_1.pt: the file is "
        "damaged, truncated, or not a PyTorch checkpoint; checkpoint_Toy_2.pt: the file is damaged, truncated, or "
        "not a PyTorch checkpoint); nothing was written over them: resume from a good copy with --checkpoint-path, "
        "or start a new run in another -o/--output")
    assert contents(run) == before


def test_a_run_that_would_write_over_another_runs_checkpoints_is_refused(tmp_path, capsys):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    trained(run, "--epochs", "1")
    before = contents(run)
    with pytest.raises(UserError) as refused:
        Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "2"))
    assert str(refused.value) == (
        f"-o/--output {run} already holds checkpoints of Toy (checkpoint_Toy_1.pt, checkpoint_Toy_last.pt), and a "
        "new run would write over them: give --resume-from-last to continue the run they belong to, or another "
        "-o/--output")
    trained(tmp_path / "elsewhere", "--epochs", "1")
    with pytest.raises(UserError, match=r"already holds checkpoints of Toy .*, and --checkpoint-path .* \(a run from "
                                        r"elsewhere\) would write over them"):
        Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "2", "--checkpoint-path",
                                       str(tmp_path / "elsewhere" / "checkpoint_Toy_1.pt")))
    assert contents(run) == before
    trained(run, "--epochs", "1", "--no-save")  # a run that writes no checkpoint (a benchmark) may share the folder
    # A checkpoint of the folder's own run continues that run (rolling back to an earlier step, as the
    # --max-skipped-steps advice does).
    assert Trainer.from_args(toy_recipe(), toy_args(run, "--epochs", "2", "--checkpoint-path",
                                          str(run / "checkpoint_Toy_1.pt"))).epoch == 1

    # Without a checkpoint of the model (a dangling link is none), --resume-from-last starts afresh.
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "checkpoint_Toy_last.pt").symlink_to("checkpoint_Toy_7.pt")
    capsys.readouterr()
    assert Trainer.from_args(toy_recipe(), toy_args(empty, "--resume-from-last")).iteration == 0
    assert f"--resume-from-last: no checkpoint of Toy in {empty} yet, starting from scratch" in capsys.readouterr().out


def test_the_best_checkpoint_is_resumed_only_when_no_periodic_one_loads(tmp_path, capsys):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    recipe = metric_recipe()
    recipe.best_checkpoint_metric = "val_mse"
    run = tmp_path / "run"
    trained(run, "--epochs", "3", "--epochs-per-checkpoint", "1", recipe=recipe)
    best = load_checkpoint(run / "checkpoint_Toy_best.pt")
    resumed = Trainer.from_args(recipe, toy_args(run, "--epochs", "4", "--resume-from-last"))
    assert resumed.iteration == 18  # `last`, not best
    (run / "checkpoint_Toy_last.pt").unlink()
    for name in ("checkpoint_Toy_1.pt", "checkpoint_Toy_2.pt", "checkpoint_Toy_3.pt"):
        (run / name).write_bytes(b"")
    capsys.readouterr()
    resumed = Trainer.from_args(recipe, toy_args(run, "--epochs", "4", "--resume-from-last"))
    assert (resumed.epoch, resumed.iteration) == (best["epoch"], best["iteration"])
    printed = capsys.readouterr()
    best_file = run / "checkpoint_Toy_best.pt"
    assert f"resuming from {best_file}, the best checkpoint, as no periodic one loads" in printed.out
    assert f"skipping {run / 'checkpoint_Toy_2.pt'}: the file is empty" in printed.err


def items_taken(folder, rank: int = 0) -> list[int]:
    """The item indices of every training batch rank `rank` took in `folder`, in order (recording_recipe)."""
    path = folder / f"items_rank{rank}.txt"
    return [int(index) for line in path.read_text().splitlines() for index in line.split()] if path.exists() else []


def test_a_mid_epoch_resume_with_another_batch_size_takes_each_item_of_the_epoch_once(tmp_path, capsys):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    """6 batches of 2 make an epoch: 2 taken, then 3 batches of 1 (a second stop in the same epoch), then a batch of
    5, larger than the epoch's first (the crash of `__len__() should return >= 0` before)."""
    run = tmp_path / "run"
    trained(run, "-bs", "2", "--max-updates", "2", recipe=recording_recipe())
    assert len(items_taken(run)) == 4
    capsys.readouterr()
    second = Trainer.from_args(recording_recipe(),
                               toy_args(run, "-bs", "1", "--max-updates", "5", "--resume-from-last"))
    assert (f"resuming 2 batches into epoch 1 with other batching than {run / 'checkpoint_Toy_1_2.pt'} (-bs 2 -> 1): "
            "the 4 items its run had taken this epoch are left out and the others batched anew (batches left on this "
            "rank: 8); the loss curve will not match an uninterrupted run" in capsys.readouterr().out)
    second.train()
    assert len(items_taken(run)) == 7
    assert load_checkpoint(run / "checkpoint_Toy_1_5.pt")["resumed_epoch"]["batches_before"] == 2
    third = Trainer.from_args(recording_recipe(), toy_args(run, "-bs", "5", "--resume-from-last"))
    assert "(-bs 1 -> 5): the 7 items its run had taken this epoch are left out" in capsys.readouterr().out
    third.train()
    assert sorted(items_taken(run)) == list(range(12))  # each item of the epoch once
    assert third.iteration == 6 and third.epoch == 1
    assert load_checkpoint(run / "checkpoint_Toy_last.pt")["resumed_epoch"] is None  # the epoch is over


def test_a_batch_size_changed_between_epochs_is_said_in_one_line(tmp_path, capsys):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    trained(run, "-bs", "2", recipe=recording_recipe())
    capsys.readouterr()
    trained(run, "-bs", "3", "--epochs", "2", "--resume-from-last", recipe=recording_recipe())
    assert (f"resuming at the start of epoch 2 with other batching than {run / 'checkpoint_Toy_1.pt'} (-bs 2 -> 3): "
            "no item of the epoch is skipped or taken twice, but the loss curve will not match an uninterrupted run"
            in capsys.readouterr().out)
    taken = items_taken(run)
    assert sorted(taken[:12]) == sorted(taken[12:]) == list(range(12))


@pytest.mark.slow
def test_a_run_stopped_on_two_ranks_resumes_on_one_with_the_items_not_yet_taken(tmp_path, capsys):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    ranks = run_ranks_as_processes("recording", run, "-bs", "2", "--max-updates", "2", timeout=300)
    assert [rank.returncode for rank in ranks] == [0, 0], ranks[0].stderr[-2000:] + ranks[1].stderr[-2000:]
    before = items_taken(run, 0) + items_taken(run, 1)
    assert len(before) == len(set(before)) == 8  # 2 steps of 2 ranks x 2 items
    capsys.readouterr()
    resumed = trained(run, "-bs", "2", "--resume-from-last", recipe=recording_recipe())
    printed = capsys.readouterr().out
    assert "(2 -> 1 ranks): the 8 items its run had taken this epoch are left out" in printed
    assert resumed.iteration == 4 and resumed.epoch == 1
    assert sorted(before + items_taken(run, 0)[len(items_taken(run, 0)) - 4:]) == list(range(12))


def test_samplers_leave_out_the_items_of_a_resumed_epoch_and_count_on_from_the_batches_before():
    lengths = [1 + (7 * index) % 5 for index in range(24)]
    seen = torch.tensor([0, 3, 5, 8, 13])
    for sampler in (EpochBatchSampler(24, 2, seed=3, lengths=lengths),
                    MaxTokensBatchSampler(lengths, max_tokens=8, seed=3),
                    ConcatBatches(MaxTokensBatchSampler(lengths, max_tokens=8, seed=3), 2)):
        sampler.resume_epoch_without(ResumedEpoch(epoch=1, seen_items=seen, batches_before=3))
        sampler.set_epoch(1, skip_batches=3)
        left = [batch_items(batch) for batch in sampler]
        assert len(left) == len(sampler) > 0
        items = [index for batch in left for index in batch]
        assert len(items) == len(set(items)) and not set(items) & set(seen.tolist())
        sampler.set_epoch(1, skip_batches=4)  # one batch further into the resumed epoch
        assert [batch_items(batch) for batch in sampler] == left[1:]
        sampler.set_epoch(2)  # the next epoch takes every item again
        assert {index for batch in sampler for index in batch_items(batch)} & set(seen.tolist())


@pytest.mark.slow
def test_a_resume_with_another_text_front_end_is_refused_naming_the_flag(synthetic_corpus, tmp_path):
    tmp_path = tmp_path.resolve()  # messages name resolved paths
    run = tmp_path / "run"
    train.main(run_args("Tacotron2", synthetic_corpus, run, "--epochs", "1", "--max-updates", "1"))
    before = contents(run)
    checkpoint = run / "checkpoint_Tacotron2_1_1.pt"
    # The same number of symbols: before, this resumed and trained the embedding's rows on other symbols.
    with pytest.raises(UserError) as refused:
        train.main(run_args("Tacotron2", synthetic_corpus, run, "--epochs", "1", "--resume-from-last",
                            "--text-cleaners", "basic_cleaners"))
    assert str(refused.value) == (
        f"cannot resume from {checkpoint}: it was trained with --text-cleaners english_cleaners, this run gives "
        "--text-cleaners basic_cleaners; give its --text-cleaners, or train that front-end from these weights in "
        f"another -o/--output with --warm-start {checkpoint}")
    with pytest.raises(UserError, match=r"its symbol table differs from this run's \(id \d+: .* there, .* here\); give "
                                        r"the table it was trained with \(--symbols-file or --symbols-from-filelist"):
        train.main(run_args("Tacotron2", synthetic_corpus, run, "--epochs", "1", "--resume-from-last",
                            "--symbols-from-filelist"))
    assert contents(run) == before


def test_a_resume_in_another_language_or_with_another_table_is_refused():
    table = ["_", " ", "a", "b", "c"]
    english = TextProcessor(["basic_cleaners"], table).to_dict()
    check_text_front_end(english, TextProcessor(["basic_cleaners"], table), "c.pt")  # the same: resumes
    with pytest.raises(UserError, match=r"^cannot resume from c.pt: its symbol table differs from this run's "
                                        r"\(id 4: 'c' there, 'd' here\); give the table it was trained with "
                                        r"\(--symbols-file"):
        check_text_front_end(english, TextProcessor(["basic_cleaners"], table[:4] + ["d"]), "c.pt")
    with pytest.raises(UserError, match=r"\(5 symbols there, 6 here\)"):
        check_text_front_end(english, TextProcessor(["basic_cleaners"], table + ["d"]), "c.pt")
    german = {"cleaners": ["espeak_ipa"], "symbols": table, "language": "de"}
    french = TextProcessor(["espeak_ipa"], table, language="fr")
    with pytest.raises(UserError, match=r"^cannot resume from c.pt: it was trained with --language de, this run gives "
                                        r"--language fr; give its --language"):
        check_text_front_end(german, french, "c.pt")
