"""The shared trainer on toy recipes (tests/common/toy_recipes.py): gradient accumulation weighted by items,
skipping non-finite steps, a GAN-shaped recipe with two parts and optimizers (in one process and on two), schedules
as multipliers, clipping off, training by updates with exact resume, max-tokens batching and corpus-level metrics
reduced across ranks."""
import inspect
import math

import pytest
import torch
from torch import nn

from common.checkpoint import load_checkpoint
from common.logger import read_dllogger_file
from common.schedules import WarmupPolynomialSchedule
from common.recipe import StepOutput, TrainerView
from common.trainer import Trainer
from tests.common.toy_recipes import (Points, gan_recipe, max_tokens_recipe, metric_recipe, regression_loss,
                                      sgd, toy_args, toy_recipe, train_on_ranks)


def final_weights(recipe, args):
    trainer = Trainer.from_args(recipe, args)
    trainer.train()
    return trainer.model.weight.detach().clone(), trainer


def test_gradient_accumulation_equals_the_larger_batch(tmp_path):
    accumulated, trainer = final_weights(toy_recipe(), toy_args(tmp_path / "a", "--grad-accumulation", "2"))
    assert trainer.iteration == 3  # 6 batches of 2, accumulated in pairs
    whole, trainer = final_weights(toy_recipe(), toy_args(tmp_path / "b", "-bs", "4"))
    assert trainer.iteration == 3
    torch.testing.assert_close(accumulated, whole)


def test_non_finite_losses_are_skipped_counted_and_training_goes_on(tmp_path):
    def poisoned(model, batch, args):
        output = regression_loss(model, batch, args)
        if 0 in batch[2].tolist():  # the batch holding item 0 blows up
            output.loss = output.loss * float("nan")
        return output

    weights, trainer = final_weights(toy_recipe(compute_loss=poisoned), toy_args(tmp_path, "--epochs", "2"))
    assert trainer.skipped_steps == 2 and trainer.iteration == 10  # one bad batch in each of 2 epochs of 6
    assert torch.isfinite(weights).all()
    epochs = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json") if r["step"] in ([1], [2])
              and "train_loss" in r["data"]]
    assert all(math.isfinite(record["train_loss"]) for record in epochs)
    assert epochs[-1]["skipped_steps"] == 2


def test_a_recipe_with_two_optimizers_steps_both_and_resumes_exactly(tmp_path):
    recipe = gan_recipe()
    straight = Trainer.from_args(recipe, toy_args(tmp_path / "straight", "--epochs", "3"))
    before = {name: p.detach().clone() for name, p in straight.model.named_parameters()}
    straight.train()
    assert all(not torch.equal(before[name], p) for name, p in straight.model.named_parameters())
    checkpoint = load_checkpoint(tmp_path / "straight" / "checkpoint_Toy_last.pt", expected_model="Toy")
    assert sorted(checkpoint["optimizers"]) == ["critic", "generator"]

    Trainer.from_args(recipe, toy_args(tmp_path / "stopped", "--epochs", "1")).train()
    Trainer.from_args(recipe, toy_args(tmp_path / "stopped", "--epochs", "3", "--resume-from-last")).train()

    def curve(folder):
        return [(r["step"], r["data"]["train_loss"], r["data"]["train_critic_loss"])
                for r in read_dllogger_file(folder / "nvlog.json") if isinstance(r["step"], list)
                and len(r["step"]) == 2]
    assert curve(tmp_path / "stopped") == curve(tmp_path / "straight")


def test_a_recipe_can_bring_a_step_based_schedule(tmp_path):
    schedule = lambda args: WarmupPolynomialSchedule(warmup_steps=2, total_steps=6)  # noqa: E731
    Trainer.from_args(toy_recipe(lr_schedule=schedule), toy_args(tmp_path)).train()
    rates = [r["data"]["lr"] for r in read_dllogger_file(tmp_path / "nvlog.json") if isinstance(r["step"], list)
             and len(r["step"]) == 2]
    assert rates == pytest.approx([0.05 * schedule(None).multiplier(0, step) for step in range(6)])


def test_resuming_a_finished_run_says_there_is_nothing_to_train(tmp_path, capsys):
    recipe = toy_recipe()
    Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "2")).train()
    weights = load_checkpoint(tmp_path / "checkpoint_Toy_last.pt")["state_dict"]
    trainer = Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "1", "--resume-from-last"))
    trainer.train()
    assert ("nothing to train: the resumed run has done 2 epochs and 12 updates (--epochs 1, --max-updates None)"
            in capsys.readouterr().err)
    assert all(torch.equal(value, trainer.model.state_dict()[key]) for key, value in weights.items())


def step_curve(folder, *names):
    """(step, values...) of every logged optimizer step."""
    return [(r["step"], *(r["data"][name] for name in names)) for r in read_dllogger_file(folder / "nvlog.json")
            if isinstance(r["step"], list) and len(r["step"]) == 2 and "train_loss" in r["data"]]


@pytest.mark.slow
def test_gan_parts_on_two_ranks_stay_identical_and_equal_one_process_on_the_global_batch(tmp_path):
    """Each part is its own DDP: both optimizers' gradients are averaged over ranks, so 2 ranks of batch 2 take the
    same steps as 1 process of batch 4 (rank r holds every second batch of 2 of the same permutation)."""
    ranks = train_on_ranks("gan", tmp_path / "ddp", "--epochs", "2", "-bs", "2")
    single = Trainer.from_args(gan_recipe(), toy_args(tmp_path / "single", "--epochs", "2", "-bs", "4"))
    single.train()
    for name, value in single.model.state_dict().items():
        assert torch.equal(ranks[0][name], ranks[1][name]), name
        torch.testing.assert_close(ranks[0][name], value, rtol=1e-5, atol=1e-6)
    names = ("train_loss", "train_critic_loss", "grad_norm_critic", "grad_norm_generator")
    ddp, one = step_curve(tmp_path / "ddp", *names), step_curve(tmp_path / "single", *names)
    assert len(ddp) == len(one) == 6  # 12 items, a global batch of 4, 2 epochs
    for (_, *ddp_values), (_, *one_values) in zip(ddp, one):
        assert ddp_values == pytest.approx(one_values, rel=1e-5, abs=1e-6)


def test_a_part_not_named_by_the_recipe_is_an_error(tmp_path):
    recipe = gan_recipe()
    recipe.parts = ("generator",)
    with pytest.raises(ValueError, match=r"parameters outside the recipe's parts \['generator'\].*critic"):
        Trainer.from_args(recipe, toy_args(tmp_path))


def test_the_schedule_multiplies_each_parameter_groups_own_learning_rate(tmp_path):
    def two_groups(model, args):  # a fine-tuning factor: the bias learns at a tenth of the weight's rate
        return {"model": torch.optim.SGD([{"params": [model.weight]},
                                          {"params": [model.bias], "lr": args.learning_rate * 0.1}],
                                         lr=args.learning_rate)}

    trainer = Trainer.from_args(toy_recipe(build_optimizers=two_groups),
                      toy_args(tmp_path, "--epochs", "3", "--anneal-steps", "1", "2", "-lr", "0.5"))
    rates = []
    original = trainer.step
    trainer.step = lambda name: (rates.append([g["lr"] for g in trainer.optimizers[name].param_groups]),
                                 original(name))[1]
    trainer.train()
    assert rates[0] == pytest.approx([0.5, 0.05]) and rates[6] == pytest.approx([0.05, 0.005])
    assert rates[12] == pytest.approx([0.005, 0.0005])


def test_grad_clip_thresh_zero_means_no_clipping(tmp_path):
    recipe = toy_recipe(build_optimizers=sgd)
    torch.manual_seed(0)
    unclipped = Trainer.from_args(recipe, toy_args(tmp_path / "a", "--max-updates", "1", "--grad-clip-thresh", "0",
                                         "-lr", "0.01"))
    start = {name: p.detach().clone() for name, p in unclipped.model.named_parameters()}
    unclipped.train()
    norm = [r["data"]["grad_norm"] for r in read_dllogger_file(tmp_path / "a" / "nvlog.json")
            if "grad_norm" in r["data"]][0]
    assert norm > 1.0  # so the default threshold of 1 would clip
    moved = torch.cat([(start[name] - p.detach()).flatten() for name, p in unclipped.model.named_parameters()])
    assert moved.norm().item() == pytest.approx(0.01 * norm, rel=1e-5)  # the whole gradient, unscaled
    clipped = Trainer.from_args(recipe, toy_args(tmp_path / "b", "--max-updates", "1", "-lr", "0.01"))
    clipped.train()
    moved = torch.cat([(start[name] - p.detach()).flatten() for name, p in clipped.model.named_parameters()])
    assert moved.norm().item() == pytest.approx(0.01 * 1.0, rel=1e-4)


def test_training_by_updates_validates_and_saves_on_intervals_and_resumes_exactly_mid_interval(tmp_path):
    """6 batches an epoch; --max-updates 10 ends inside epoch 2. Stopping at 4 (between a validation at 3 and a
    checkpoint at 5) and resuming to 10 gives the uninterrupted curve."""
    flags = ("--epochs", "100", "--val-interval-updates", "3", "--save-interval-updates", "5")
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "straight", *flags, "--max-updates", "10")).train()
    records = read_dllogger_file(tmp_path / "straight" / "nvlog.json")
    assert [r["step"] for r in records if "val_loss" in r["data"]] == [[1, 3], [1, 6], [2, 3], [2, 4]]
    saved = sorted(path.name for path in (tmp_path / "straight").glob("checkpoint_Toy_*.pt"))
    assert saved == ["checkpoint_Toy_1_5.pt", "checkpoint_Toy_2_4.pt", "checkpoint_Toy_last.pt"]  # updates 5 and 10
    assert load_checkpoint(tmp_path / "straight" / "checkpoint_Toy_last.pt")["iteration"] == 10

    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "stopped", *flags, "--max-updates", "4")).train()
    Trainer.from_args(toy_recipe(),
                      toy_args(tmp_path / "stopped", *flags, "--max-updates", "10", "--resume-from-last")).train()
    assert step_curve(tmp_path / "stopped", "train_loss") == step_curve(tmp_path / "straight", "train_loss")


def test_epochs_or_updates_must_be_given(tmp_path):
    with pytest.raises(ValueError, match="--epochs N, --max-updates N, or both"):
        Trainer.from_args(toy_recipe(), toy_args(tmp_path, "--epochs", "0"))


@pytest.mark.slow
def test_max_tokens_steps_are_the_mean_over_items_on_two_ranks_as_with_accumulation_in_one(tmp_path):
    """Batches of different sizes: 2 ranks with one batch each take the step that 1 process takes by accumulating
    the same two batches, because gradients are weighted by items over micro-batches and ranks."""
    recipe = max_tokens_recipe()
    single = Trainer.from_args(recipe,
                               toy_args(tmp_path / "single", "--grad-accumulation", "2", "--grad-clip-thresh", "0"))
    sizes = [len(batch) for batch in single.train_sampler]
    assert len(set(sizes)) > 1  # the test needs micro-batches of different sizes
    single.train()
    ddp = train_on_ranks("max_tokens", tmp_path / "ddp", "--grad-clip-thresh", "0")
    steps = step_curve(tmp_path / "ddp", "train_loss", "grad_norm")
    single_steps = step_curve(tmp_path / "single", "train_loss", "grad_norm")[:len(steps)]
    assert len(steps) >= 3 and [s[0] for s in single_steps] == [[1, 2 * (k + 1)] for k in range(len(steps))]
    assert [v for s in single_steps for v in s[1:]] == pytest.approx([v for s in steps for v in s[1:]], rel=1e-5)
    if len(sizes) % 2 == 0:  # the same batches went into both runs: same weights at the end
        for name, value in single.model.state_dict().items():
            torch.testing.assert_close(ddp[0][name], value, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_validation_metrics_cover_the_whole_set_on_every_rank_and_sum_across_ranks(tmp_path):
    ranks = train_on_ranks("metric", tmp_path / "ddp")
    single = Trainer.from_args(metric_recipe(), toy_args(tmp_path / "single", "-bs", "4"))
    single.train()
    validation = [r["data"] for r in read_dllogger_file(tmp_path / "ddp" / "nvlog.json") if "val_mse" in r["data"]]
    assert validation[0]["val_items_seen"] == 5  # 5 items: batches [0, 1], [4] on rank 0 and [2, 3] on rank 1
    model = torch.nn.Linear(4, 1)
    model.load_state_dict(ranks[0])
    points = Points(5, seed=1)
    expected = (model(points.x) - points.y).pow(2).mean().item()
    assert validation[0]["val_mse"] == pytest.approx(expected, rel=1e-5)
    assert validation[0]["val_loss"] == pytest.approx(expected, rel=1e-5)


def test_micro_batches_of_different_sizes_step_on_the_mean_over_all_their_items(tmp_path):
    trainer = Trainer.from_args(max_tokens_recipe(), toy_args(tmp_path, "--grad-accumulation", "2",
                                                              "--grad-clip-thresh", "0", "--max-updates", "1"))
    trainer.train_sampler.set_epoch(0)
    first, second = list(trainer.train_sampler)[:2]
    assert len(first) != len(second)
    start = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    reference = torch.nn.Linear(4, 1)
    with torch.no_grad():
        for p, value in zip(reference.parameters(), start):
            p.copy_(value)
    points = trainer.data.train
    items = torch.tensor(first + second)
    nn.functional.mse_loss(reference(points.x[items]), points.y[items]).backward()
    for p, reference_p, value in zip(trainer.model.parameters(), reference.parameters(), start):
        torch.testing.assert_close(p.detach(), value - 0.05 * reference_p.grad, rtol=1e-5, atol=1e-6)


def test_the_best_checkpoint_follows_the_recipes_metric_and_survives_a_resume(tmp_path):
    """best_checkpoint_metric: checkpoint_<name>_best.pt is rewritten whenever the metric improves (here val_mse,
    lower is better), is never the `last` pointer's target, and a resumed run remembers the best value so far."""
    recipe = metric_recipe()
    recipe.best_checkpoint_metric = "val_mse"
    Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "3")).train()
    records = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json") if "val_mse" in r["data"]]
    best = load_checkpoint(tmp_path / "checkpoint_Toy_best.pt")
    assert best["best_metric_value"] == pytest.approx(min(r["val_mse"] for r in records))
    # Saved by the validation at the end of the best epoch, before that epoch is counted as done.
    assert best["epoch"] == min(range(3), key=lambda i: records[i]["val_mse"])
    last = load_checkpoint(tmp_path / "checkpoint_Toy_last.pt")
    assert last["epoch"] == 3 and last["best_metric_value"] == best["best_metric_value"]

    resumed = Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "4", "--resume-from-last"))
    assert resumed.best_metric_value == best["best_metric_value"]


def test_set_num_updates_sees_every_step_count_before_its_step_and_after_a_resume(tmp_path):
    seen = []
    recipe = toy_recipe(set_num_updates=lambda model, updates: seen.append(updates))
    Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "2")).train()
    assert seen == list(range(12))  # 6 batches of 2 per epoch
    seen.clear()
    Trainer.from_args(recipe, toy_args(tmp_path, "--epochs", "3", "--resume-from-last")).train()
    assert seen == list(range(12, 18))


def test_validation_logs_the_losss_metrics_as_means_over_items(tmp_path):
    def loss_with_a_part(model, batch, args):
        x, y, _ = batch
        error = (model(x) - y).pow(2)
        return StepOutput(error.mean(), len(x), {"first_item_error": error[0, 0].detach()})

    trainer = Trainer.from_args(toy_recipe(compute_loss=loss_with_a_part), toy_args(tmp_path, "-bs", "3"))
    trainer.train()
    validation = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json") if "val_loss" in r["data"]][0]
    points = Points(4, seed=1)  # validation batches [0, 1, 2] and [3], weighted by their 3 and 1 items
    error = (trainer.model(points.x) - points.y).pow(2).detach()[:, 0]
    assert validation["val_first_item_error"] == pytest.approx((3 * error[0] + error[3]).item() / 4, rel=1e-5)


def test_the_trainer_has_everything_a_recipes_train_step_may_use(tmp_path):
    """TrainerView (common/recipe.py) is what train_step is typed with: every attribute of it is on a Trainer, and
    every method takes the same parameters."""
    trainer = Trainer.from_args(gan_recipe(), toy_args(tmp_path))
    assert isinstance(trainer, TrainerView)
    assert {"device", "iteration", "model", "optimizers"} <= set(TrainerView.__annotations__)
    for name in TrainerView.__annotations__:
        assert hasattr(trainer, name), name
    methods = [name for name, member in vars(TrainerView).items() if callable(member) and not name.startswith("_")]
    assert sorted(methods) == ["autocast", "backward", "gradient_sync", "step"]
    for name in methods:
        assert (list(inspect.signature(getattr(Trainer, name)).parameters)
                == list(inspect.signature(getattr(TrainerView, name)).parameters)), name


@pytest.mark.parametrize("precision", ["--bf16", "--fp32"])
def test_bf16_on_a_cpu_that_emulates_it_is_warned_about(tmp_path, capsys, precision):
    """On an AVX2-only CPU bf16 matrix products are emulated, about 20 times slower than fp32 (common/cpu.py): a
    training run there says so once; a CPU with native bf16, and an fp32 run, say nothing."""
    from common.cpu import NO_NATIVE_BF16, native_bf16

    Trainer.from_args(toy_recipe(), toy_args(tmp_path, precision))
    warned = f"warning: --bf16: {NO_NATIVE_BF16}; --fp32 trains faster here\n" in capsys.readouterr().err
    assert warned == (precision == "--bf16" and not native_bf16())


def test_adam_is_fused_by_default_and_its_update_equals_the_loop_over_tensors_to_rounding(tmp_path):
    fused, fused_trainer = final_weights(toy_recipe(), toy_args(tmp_path / "fused", "--epochs", "2"))
    looped, looped_trainer = final_weights(toy_recipe(), toy_args(tmp_path / "loop", "--epochs", "2",
                                                                  "--no-fused-optimizer"))
    assert fused_trainer.optimizers["model"].defaults["fused"] is True
    assert not looped_trainer.optimizers["model"].defaults["fused"]
    assert fused_trainer.iteration == looped_trainer.iteration == 12
    torch.testing.assert_close(fused, looped, rtol=1e-6, atol=1e-7)  # 12 Adam steps at lr 0.05
    assert not torch.equal(fused, nn.Linear(4, 1).weight)  # trained


def test_a_resume_steps_the_way_this_runs_flag_says_not_the_checkpoints(tmp_path):
    Trainer.from_args(toy_recipe(), toy_args(tmp_path, "--no-fused-optimizer")).train()
    resumed = Trainer.from_args(toy_recipe(), toy_args(tmp_path, "--epochs", "2", "--resume-from-last"))
    assert resumed.iteration == 6 and resumed.optimizers["model"].param_groups[0]["fused"] is True
    resumed.train()
    assert resumed.iteration == 12
