"""Toy recipes for testing the shared trainer: a linear regression, and a two-player game with the shape of a GAN
step. They live in a module of their own so that spawned ranks of a 2-process run can import them by name.

Run as a module (`python -m tests.common.toy_recipes RECIPE OUTPUT [train.py flags]`) it is one rank of a toy run
as train.py runs it (exit status and user errors included); run_ranks_as_processes starts one such process per
rank, as srun does, so a test sees each rank exit (or hang) on its own."""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import Dataset

from common.training_settings import add_training_args
from common.errors import UserError
from common.distributed import ModelParts, run_entry_point
from common.recipe import DataSplits, Recipe, StepOutput, TrainerView
from common.sampler import MaxTokensBatchSampler
from common.trainer import Trainer


class Points(Dataset):
    """x ~ N(0, 1) in 4 dimensions, y a fixed linear function of x; `length` varies per item, for max-tokens."""

    def __init__(self, count: int, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(count, 4, generator=generator)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
        self.lengths = [1 + (7 * index) % 5 for index in range(count)]

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
                  build_data=lambda args, audio: DataSplits(Points(12), Points(4, seed=1), collate),
                  batch_to_device=lambda batch, device: batch, compute_loss=regression_loss,
                  task="text-to-speech", description="A linear regression for the trainer's tests.")
    fields.update(overrides)
    return Recipe(**fields)


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


def step_alone(trainer: TrainerView, loss: torch.Tensor, name: str) -> None:
    """Optimizer `name`'s step on this loss alone: gradients another loss left on its parameters (the generator's
    loss runs through the critic) are cleared first."""
    trainer.optimizers[name].zero_grad(set_to_none=True)
    trainer.backward(loss, name)
    trainer.step(name)


def adversarial_step(parts: ModelParts, batches: list, args: argparse.Namespace,
                     trainer: TrainerView) -> StepOutput:
    """The shape of HiFi-GAN's step: update the critic on detached outputs, then the generator through it (one
    micro-batch; hifigan/recipe.py shows the step with accumulation)."""
    assert len(batches) == 1, "the toy GAN step does not accumulate"
    x, y, _ = batches[0]
    with trainer.autocast():
        fake = parts.generator(x)
        critic_loss = parts.critic(fake.detach()).pow(2).mean() + (parts.critic(y) - 1.0).pow(2).mean()
    step_alone(trainer, critic_loss, "critic")
    with trainer.autocast():
        generator_loss = (parts.critic(fake) - 1.0).pow(2).mean() + nn.functional.mse_loss(fake, y)
    step_alone(trainer, generator_loss, "generator")
    return StepOutput(generator_loss.detach(), len(x), {"critic_loss": critic_loss.detach()})


def gan_recipe() -> Recipe:
    return toy_recipe(build_model=lambda config: TwoPlayers(), parts=("generator", "critic"),
                      build_optimizers=two_optimizers, train_step=adversarial_step)


def max_tokens_recipe() -> Recipe:
    """Batches by a budget of (items x longest length); the loss is a mean over items, so items weigh steps."""
    def sampler(args, dataset, context):
        return MaxTokensBatchSampler(dataset.lengths, max_tokens=8, shuffle=context.training,
                                     drop_uneven=context.training, seed=context.seed, rank=context.rank,
                                     world_size=context.world_size)
    return toy_recipe(batch_sampler=sampler, loss_items=lambda batch, args: len(batch[0]), build_optimizers=sgd,
                      build_data=lambda args, audio: DataSplits(Points(24), Points(6, seed=1), collate))


def sgd(model, args):
    """Plain SGD: a step is the gradient times the rate, so a gradient of the wrong scale shows (Adam hides it)."""
    return {"model": torch.optim.SGD(model.parameters(), lr=args.learning_rate)}


def regression_loss_and_error_sums(model, batch, args):
    """The regression's loss and, in validation, a corpus-level metric: squared errors and items summed, so the
    ratio is the mean over the whole set."""
    output = regression_loss(model, batch, args)
    if not model.training:
        x, y, _ = batch
        output.sums = {"squared_error": float((model(x) - y).pow(2).sum()), "items": len(x)}
    return output


def metric_recipe() -> Recipe:
    return toy_recipe(compute_loss=regression_loss_and_error_sums,
                      validation_metrics=lambda sums: {"val_mse": sums["squared_error"] / sums["items"],
                                                       "val_items_seen": sums["items"]},
                      build_data=lambda args, audio: DataSplits(Points(12), Points(5, seed=1), collate))


def signalling_recipe() -> Recipe:
    """The regression, whose rank RANK_TO_SIGNAL (an environment variable, default 0) sends itself SIGNAL_TO_SEND
    (default SIGTERM) in the middle of the training step that holds item 5, once per output folder (a file there
    remembers it): what a batch system does to a running job."""
    def loss_then_signal(model, batch, args):
        output = regression_loss(model, batch, args)
        already = Path(args.output) / "signal_sent"
        if (model.training and 5 in batch[2].tolist() and not already.exists()
                and os.environ.get("RANK", "0") == os.environ.get("RANK_TO_SIGNAL", "0")):
            already.touch()
            os.kill(os.getpid(), signal.Signals[os.environ.get("SIGNAL_TO_SEND", "SIGTERM")])
        return output
    return toy_recipe(compute_loss=loss_then_signal)


class PointsWithABrokenItem(Points):
    """Item 5 cannot be read, as a broken audio file in a corpus (raised in whichever process loads it)."""

    def __getitem__(self, index):
        if index == 5:
            raise UserError("train.txt:6: cannot read audio file wavs/5.wav: Format not recognised")
        return super().__getitem__(index)


def broken_item_recipe() -> Recipe:
    return toy_recipe(build_data=lambda args, audio: DataSplits(PointsWithABrokenItem(12), Points(4, seed=1),
                                                                collate))


def recording_recipe() -> Recipe:
    """The regression, each rank appending the item indices of every training batch to <output>/items_rank<RANK>.txt
    (one line a batch): which items a run, and the runs resuming it, trained on."""
    def loss_and_record(model, batch, args):
        if model.training:
            with open(Path(args.output) / f"items_rank{os.environ.get('RANK', '0')}.txt", "a") as record:
                record.write(" ".join(str(index) for index in batch[2].tolist()) + "\n")
        return regression_loss(model, batch, args)
    return toy_recipe(compute_loss=loss_and_record)


RECIPES = {"regression": toy_recipe, "gan": gan_recipe, "max_tokens": max_tokens_recipe, "metric": metric_recipe,
           "signalling": signalling_recipe, "broken_item": broken_item_recipe, "recording": recording_recipe}


def toy_args(output, *extra) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_training_args(parser)
    return parser.parse_args(["-o", str(output), "--epochs", "1", "-lr", "0.05", "-bs", "2", "--num-workers", "0",
                              "--quiet", "--cpu", "--weight-decay", "0", *extra])


def _rank_main(rank: int, world_size: int, port: int, recipe_name: str, output: str, extra: list[str]) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world_size), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)

    def train_and_save() -> None:
        trainer = Trainer.from_args(RECIPES[recipe_name](), toy_args(output, "--dist-backend", "gloo", *extra))
        trainer.train()
        torch.save(trainer.model.state_dict(), Path(output) / f"final_rank{rank}.pt")

    # As train.py leaves: a spawned rank that returned normally would tear the interpreter down under gloo's worker
    # threads, and abort now and then (common.distributed.run_entry_point says why).
    run_entry_point(train_and_save)


def train_on_ranks(recipe_name: str, output: Path, *extra: str, world_size: int = 2) -> list[dict]:
    """Train a toy recipe on `world_size` gloo processes; returns each rank's final state dict."""
    mp.start_processes(_rank_main, args=(world_size, free_port(), recipe_name, str(output), list(extra)),
                       nprocs=world_size, start_method="spawn")
    return [torch.load(Path(output) / f"final_rank{rank}.pt", weights_only=True) for rank in range(world_size)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_ranks_as_processes(recipe_name: str, output: Path, *extra: str, world_size: int = 2, timeout: float = 120,
                           environment: dict | None = None) -> list[subprocess.CompletedProcess]:
    """One `python -m tests.common.toy_recipes` process per gloo rank, started and awaited independently (as srun
    starts tasks, with no launcher to kill the others when one fails); each must end within `timeout` seconds."""
    root = Path(__file__).resolve().parents[2]
    shared = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
              "WORLD_SIZE": str(world_size), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root), **(environment or {})}
    processes = [subprocess.Popen([sys.executable, "-m", "tests.common.toy_recipes", recipe_name, str(output),
                                   "--dist-backend", "gloo", *extra],
                                  env={**shared, "RANK": str(rank), "LOCAL_RANK": str(rank)}, cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for rank in range(world_size)]
    completed = []
    try:
        for process in processes:
            stdout, stderr = process.communicate(timeout=timeout)
            completed.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()  # a rank that hangs: the test fails on the timeout, and leaves no process behind
    return completed


if __name__ == "__main__":
    def main():
        recipe_name, output, *extra = sys.argv[1:]
        torch.set_num_threads(1)
        trainer = Trainer.from_args(RECIPES[recipe_name](), toy_args(output, *extra))
        trainer.train()
        sys.exit(trainer.exit_status)

    run_entry_point(main)
