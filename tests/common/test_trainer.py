"""The shared trainer on toy recipes: gradient accumulation, skipping non-finite steps, a recipe with two
optimizers (the shape of a GAN step) and a step-based learning-rate schedule."""
import argparse
import math

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from common.arguments import add_training_args
from common.checkpoint import load_checkpoint
from common.logger import read_dllogger_file
from common.recipe import DataSplits, Recipe, StepOutput
from common.schedules import WarmupPolynomialSchedule
from common.trainer import Trainer


class Points(Dataset):
    def __init__(self, count: int):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(count, 4, generator=generator)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index], torch.tensor(index)


def collate(items):
    x, y, index = zip(*items)
    return torch.stack(x), torch.stack(y), torch.stack(index)


def regression_loss(model, batch, args):
    x, y, _ = batch
    return StepOutput(nn.functional.mse_loss(model(x), y), len(x))


def toy_recipe(**overrides) -> Recipe:
    fields = dict(name="Toy", items_unit="samples", add_args=lambda parser: None, model_config=lambda args: {},
                  build_model=lambda config: nn.Linear(4, 1),
                  build_data=lambda args, audio: DataSplits(Points(12), Points(4), collate),
                  batch_to_device=lambda batch, device: batch, compute_loss=regression_loss)
    fields.update(overrides)
    return Recipe(**fields)


def toy_args(output, *extra):
    parser = argparse.ArgumentParser()
    add_training_args(parser)
    return parser.parse_args(["-o", str(output), "--epochs", "1", "-lr", "0.05", "-bs", "2", "--num-workers", "0",
                              "--quiet", "--cpu", "--weight-decay", "0", *extra])


def final_weights(recipe, args):
    trainer = Trainer(recipe, args)
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


class TwoPlayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(4, 1)
        self.critic = nn.Linear(1, 1)

    def forward(self, x):  # what validation (compute_loss) scores
        return self.generator(x)


def two_optimizers(model, args):
    return {"critic": torch.optim.SGD(model.critic.parameters(), lr=args.learning_rate),
            "generator": torch.optim.SGD(model.generator.parameters(), lr=args.learning_rate)}


def adversarial_step(model, batch, args, trainer):
    """The shape of HiFi-GAN's step: update the critic on detached outputs, then the generator through it."""
    x, y, _ = batch
    with trainer.autocast():
        fake = model.generator(x)
        critic_loss = (model.critic(fake.detach()) - 0.0).pow(2).mean() + (model.critic(y) - 1.0).pow(2).mean()
    trainer.backward_and_step(critic_loss, "critic")
    with trainer.autocast():
        generator_loss = (model.critic(model.generator(x)) - 1.0).pow(2).mean() + nn.functional.mse_loss(fake, y)
    trainer.backward_and_step(generator_loss, "generator")
    return StepOutput(generator_loss.detach(), len(x), {"critic_loss": critic_loss.detach()})


def test_a_recipe_with_two_optimizers_steps_both_and_resumes_exactly(tmp_path):
    recipe = toy_recipe(build_model=lambda config: TwoPlayers(), build_optimizers=two_optimizers,
                        train_step=adversarial_step)
    straight = Trainer(recipe, toy_args(tmp_path / "straight", "--epochs", "3"))
    before = {name: p.detach().clone() for name, p in straight.model.named_parameters()}
    straight.train()
    assert all(not torch.equal(before[name], p) for name, p in straight.model.named_parameters())
    checkpoint = load_checkpoint(tmp_path / "straight" / "checkpoint_Toy_last.pt", expected_model="Toy")
    assert sorted(checkpoint["optimizers"]) == ["critic", "generator"]

    Trainer(recipe, toy_args(tmp_path / "stopped", "--epochs", "1")).train()
    Trainer(recipe, toy_args(tmp_path / "stopped", "--epochs", "3", "--resume-from-last")).train()

    def curve(folder):
        return [(r["step"], r["data"]["train_loss"], r["data"]["train_critic_loss"])
                for r in read_dllogger_file(folder / "nvlog.json") if isinstance(r["step"], list)
                and len(r["step"]) == 2]
    assert curve(tmp_path / "stopped") == curve(tmp_path / "straight")
    with pytest.raises(ValueError, match="--grad-accumulation is not supported"):
        Trainer(recipe, toy_args(tmp_path / "x", "--grad-accumulation", "2"))


def test_a_recipe_can_bring_a_step_based_schedule(tmp_path):
    schedule = lambda args: WarmupPolynomialSchedule(base_lr=0.1, warmup_steps=2, total_steps=6)  # noqa: E731
    Trainer(toy_recipe(lr_schedule=schedule), toy_args(tmp_path)).train()
    rates = [r["data"]["lr"] for r in read_dllogger_file(tmp_path / "nvlog.json") if isinstance(r["step"], list)
             and len(r["step"]) == 2]
    assert rates == pytest.approx([schedule(None).lr_at(0, step) for step in range(6)])


def test_resuming_a_finished_run_says_there_is_nothing_to_train(tmp_path, capsys):
    recipe = toy_recipe()
    Trainer(recipe, toy_args(tmp_path, "--epochs", "2")).train()
    weights = load_checkpoint(tmp_path / "checkpoint_Toy_last.pt")["state_dict"]
    trainer = Trainer(recipe, toy_args(tmp_path, "--epochs", "1", "--resume-from-last"))
    trainer.train()
    assert "nothing to train: the resumed run has done 2 epochs and --epochs is 1" in capsys.readouterr().err
    assert all(torch.equal(value, trainer.model.state_dict()[key]) for key, value in weights.items())
