"""HiFi-GAN generator speed, ours against the reference's computation, side by side in one run on the same weights.

    python -m experiments.hifigan_reference_speed.compare_hifigan_reference_speed [--presets v1 v2] [--frames 100 400]
        [--repeats 7]

The reference's computation is tests/hifigan/test_checkpoints.py's `reference_generator`: NVIDIA's generator written
out as functional equations over a state dict with their key names (it is what the equality tests check our model
against), here with weight norm folded in once, as NVIDIA's inference does before it synthesises. Runs alternate
between the two so that both see the same machine state; each reports the median of its timed runs (the first of
each is a warm-up). Needs the test requirements (it imports the tests' reference).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from hifigan.checkpoints import generator_state_from_reference
from hifigan.model import PRESETS, Generator
from tests.hifigan.reference_generator import N_MEL, normed, nvidia_generator_weights, reference_generator

SAMPLING_RATE = 22050


def folded(state_dict: dict) -> dict:
    """The state dict with each weight-normed weight computed once, under the key the equations read it from."""
    weights = {}
    for key in state_dict:
        if key.endswith(".weight_g"):
            name = key[: -len(".weight_g")]
            weights[name] = normed(state_dict, name)
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["v1", "v2"], choices=sorted(PRESETS))
    parser.add_argument("--frames", nargs="+", type=int, default=[100, 400])
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()

    print(f"{'preset':6} {'frames':>6} {'ours s':>8} {'reference s':>11} {'ours xRT':>9} {'reference xRT':>13} "
          f"{'max |difference|':>16}")
    for preset in options.presets:
        config = dict(PRESETS[preset])
        state_dict = nvidia_generator_weights(config)
        ours = Generator(**config).eval()
        ours.load_state_dict(generator_state_from_reference(state_dict, len(config["resblock_kernel_sizes"]),
                                                            "the benchmark's weights"))
        ours.remove_weight_norm()
        weights = folded(state_dict)

        def reference(mel: torch.Tensor) -> torch.Tensor:
            # The equations read weight-normed weights through `normed`; hand them the folded ones.
            import tests.hifigan.reference_generator as equations

            original = equations.normed
            equations.normed = lambda _, name: weights[name]
            try:
                return reference_generator(state_dict, config, mel)
            finally:
                equations.normed = original

        for frames in options.frames:
            mel = torch.randn(1, N_MEL, frames, generator=torch.Generator().manual_seed(frames))
            times = {"ours": [], "reference": []}
            with torch.inference_mode():
                difference = (ours(mel) - reference(mel)).abs().max().item()
                for _ in range(options.repeats + 1):
                    for name, run in (("ours", ours), ("reference", reference)):
                        start = time.perf_counter()
                        run(mel)
                        times[name].append(time.perf_counter() - start)
            seconds_of_audio = frames * ours.hop_length / SAMPLING_RATE
            ours_s, reference_s = (statistics.median(times[name][1:]) for name in ("ours", "reference"))
            print(f"{preset:6} {frames:6} {ours_s:8.3f} {reference_s:11.3f} {seconds_of_audio / ours_s:9.2f} "
                  f"{seconds_of_audio / reference_s:13.2f} {difference:16.1e}")
    print(f"torch threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
