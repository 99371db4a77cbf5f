"""A tiny HiFi-GAN generator, a checkpoint of it in the layout train.py -m HiFiGAN writes, and random log mels: for the
HiFi-GAN inference and export tests and the scripts that vocode with HiFi-GAN. Also the short crops with which the
HiFi-GAN training and compile tests train."""
import json
from pathlib import Path

import torch

from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from hifigan.checkpoints import generator_state_to_reference
from hifigan.model import Generator

# hop 8 * 8 * 4 = 256 as the audio parameters say; both fusion blocks dilated, so the receptive field is not trivial
TINY_GENERATOR = {"resblock": "1", "upsample_rates": [8, 8, 4], "upsample_kernel_sizes": [16, 16, 8],
                  "upsample_initial_channel": 16, "resblock_kernel_sizes": [3, 5],
                  "resblock_dilation_sizes": [[1, 2], [1, 3]]}

# train.py flags: 3 frames and discriminators at an eighth of their width: enough for what the training tests check,
# and much faster.
SHORT_CROPS = ("--segment-size", "768", "--discriminator-width-divisor", "8")


def tiny_generator(seed=0, config=TINY_GENERATOR):
    torch.manual_seed(seed)
    return Generator(**config).eval()


def save_our_checkpoint(path, ema=False, audio_params=AudioParams(), seed=0):
    """A checkpoint in the layout train.py -m HiFiGAN writes (the discriminators' weights, which inference skips,
    stood for by one tensor). Returns the generator and the EMA generator whose weights it holds."""
    generator = tiny_generator(seed)
    state_dict = {f"generator.{key}": value for key, value in generator.state_dict().items()}
    average = None
    if ema:
        average = tiny_generator(seed + 1)  # other weights than the generator's, so a mix-up shows
        state_dict.update({f"generator_ema.{key}": value for key, value in average.state_dict().items()})
    state_dict["mpd.discriminators.0.conv_post.bias"] = torch.zeros(1)
    save_checkpoint({"format_version": 1, "model_name": "HiFiGAN", "audio_params": audio_params.to_dict(),
                     "model_config": {"generator": TINY_GENERATOR, "mpd_periods": [2, 3, 5, 7, 11], "ema": ema},
                     "state_dict": state_dict}, path)
    return generator, average


def log_mel(frames, batch=1, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(batch, 80, frames, generator=generator) * 10.0 - 9.0


NVIDIA_TRAIN_SETUP = {"segment_size": 8192, "filter_length": 1024, "num_mels": 80, "hop_length": 256,
                      "win_length": 1024, "sampling_rate": 22050, "mel_fmin": 0.0, "mel_fmax": 8000.0,
                      "mel_fmax_loss": None, "max_wav_value": 32768.0, "seed": 1234, "base_lr": 3e-4,
                      "lr_decay": 0.9998, "epochs_all": 6500}


def save_nvidia_file(path, generator, fine_tuned=False):
    """hifigan_gen_checkpoint_*.pt as NVIDIA's train.py writes it: nested resblocks, weight_g/weight_v, no EMA."""
    train_state = {"epoch": 20, "iters_all": 2000, **({"fine_tune_epoch_start": 11} if fine_tuned else {})}
    torch.save({"generator": generator_state_to_reference(generator.state_dict(), "nested", num_kernels=2),
                "gen_ema": None, "config": TINY_GENERATOR, "train_setup": NVIDIA_TRAIN_SETUP,
                "train_state": train_state}, path)


def save_reference_files(folder, generator) -> Path:
    """The generator as NVIDIA's base and fine-tuned files (hifigan_gen_checkpoint_20.pt, ..._20_ft.pt) and as
    jik876's g_00002000 with its JSON, which is returned (config_tiny.json)."""
    save_nvidia_file(folder / "hifigan_gen_checkpoint_20.pt", generator)
    save_nvidia_file(folder / "hifigan_gen_checkpoint_20_ft.pt", generator, fine_tuned=True)
    torch.save({"generator": generator_state_to_reference(generator.state_dict(), "flat", num_kernels=2)},
               folder / "g_00002000")
    config = folder / "config_tiny.json"
    config.write_text(json.dumps({**TINY_GENERATOR, "num_mels": 80, "sampling_rate": 22050, "hop_size": 256}))
    return config
