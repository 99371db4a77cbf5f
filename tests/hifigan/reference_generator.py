"""NVIDIA's HiFi-GAN generator as weights under the reference's names and as the reference's computation written out
in plain equations (F.conv1d, F.conv_transpose1d, leaky_relu, tanh) over legacy weight norm (weight = g * v / ||v||):
tests/hifigan/test_checkpoints.py and experiments/hifigan_reference_speed/ use them."""
import torch
import torch.nn.functional as F

N_MEL = 80  # the reference hard-codes it


# ---- weights under the reference's names --------------------------------------------------------------------

def nvidia_generator_weights(config: dict, seed: int = 0) -> dict:
    """Random weights with NVIDIA's generator keys (nested resblocks, weight_g/weight_v) and shapes."""
    rng = torch.Generator().manual_seed(seed)
    sd = {}

    def weight_normed(name, shape_v, bias_size, g_size):
        sd[f"{name}.weight_g"] = 0.5 + torch.rand(g_size, 1, 1, generator=rng)
        sd[f"{name}.weight_v"] = torch.randn(*shape_v, generator=rng)
        sd[f"{name}.bias"] = 0.1 * torch.randn(bias_size, generator=rng)

    channels = config["upsample_initial_channel"]
    weight_normed("conv_pre", (channels, N_MEL, 7), channels, channels)
    for i, (rate, kernel) in enumerate(zip(config["upsample_rates"], config["upsample_kernel_sizes"])):
        weight_normed(f"ups.{i}", (channels, channels // 2, kernel), channels // 2, channels)  # (in, out, k)
        channels //= 2
        for j, (kernel_size, dilations) in enumerate(zip(config["resblock_kernel_sizes"],
                                                         config["resblock_dilation_sizes"])):
            names = ["convs1", "convs2"] if config["resblock"] == "1" else ["convs"]
            for name in names:
                for m in range(len(dilations)):
                    weight_normed(f"resblocks.{i}.{j}.{name}.{m}", (channels, channels, kernel_size), channels,
                                  channels)
    weight_normed("conv_post", (1, channels, 7), 1, 1)
    return sd


def flat_resblocks(sd: dict, num_kernels: int) -> dict:
    """NVIDIA's nested keys -> jik876's flat resblocks.<i * num_kernels + j>."""
    out = {}
    for key, value in sd.items():
        parts = key.split(".")
        if parts[0] == "resblocks":
            key = ".".join(["resblocks", str(int(parts[1]) * num_kernels + int(parts[2]))] + parts[3:])
        out[key] = value
    return out


def normed(sd, name):
    """Legacy weight norm over every dimension but the first."""
    v, g = sd[f"{name}.weight_v"], sd[f"{name}.weight_g"]
    return g * v / v.flatten(1).norm(dim=1).view(-1, *[1] * (v.dim() - 1))


def reference_generator(sd: dict, config: dict, mel: torch.Tensor) -> torch.Tensor:
    x = F.conv1d(mel, normed(sd, "conv_pre"), sd["conv_pre.bias"], padding=3)
    num_kernels = len(config["resblock_kernel_sizes"])
    for i, (rate, kernel) in enumerate(zip(config["upsample_rates"], config["upsample_kernel_sizes"])):
        x = F.leaky_relu(x, 0.1)
        x = F.conv_transpose1d(x, normed(sd, f"ups.{i}"), sd[f"ups.{i}.bias"], stride=rate,
                               padding=(kernel - rate) // 2)
        xs = None
        for j, (kernel_size, dilations) in enumerate(zip(config["resblock_kernel_sizes"],
                                                         config["resblock_dilation_sizes"])):
            h = x
            for m, dilation in enumerate(dilations):
                p = f"resblocks.{i}.{j}"
                if config["resblock"] == "1":
                    t = F.leaky_relu(h, 0.1)
                    t = F.conv1d(t, normed(sd, f"{p}.convs1.{m}"), sd[f"{p}.convs1.{m}.bias"], dilation=dilation,
                                 padding=(kernel_size * dilation - dilation) // 2)
                    t = F.leaky_relu(t, 0.1)
                    t = F.conv1d(t, normed(sd, f"{p}.convs2.{m}"), sd[f"{p}.convs2.{m}.bias"],
                                 padding=(kernel_size - 1) // 2)
                else:
                    t = F.leaky_relu(h, 0.1)
                    t = F.conv1d(t, normed(sd, f"{p}.convs.{m}"), sd[f"{p}.convs.{m}.bias"], dilation=dilation,
                                 padding=(kernel_size * dilation - dilation) // 2)
                h = t + h
            xs = h if xs is None else xs + h
        x = xs / num_kernels
    x = F.leaky_relu(x)  # slope 0.01
    return torch.tanh(F.conv1d(x, normed(sd, "conv_post"), sd["conv_post.bias"], padding=3))
