"""Tiny wav2vec 2.0 models and stand-ins of fairseq's and NVIDIA's files, for the tests that read those files
(tests/wav2vec2/test_checkpoints.py) and export them (tests/scripts/test_export_weights.py): model configs in fairseq's
names (a base-style, a large-style and an hourglass one), the models with their norms and biases off their
initialisation, an input waveform and the pre-training outputs to compare, and what fairseq's and NVIDIA's train.py
save beside the weights (fairseq's argparse Namespace and bookkeeping; NVIDIA's flat args and its `module.`-prefixed
state with a fused qkv)."""
import argparse

import numpy as np
import torch

from wav2vec2.masking import compute_mask_indices, sample_negative_indices
from wav2vec2.model import Wav2Vec2CTC, Wav2Vec2Model

TINY = dict(conv_feature_layers="[(32, 10, 5)] + [(32, 3, 2)] * 2 + [(32, 2, 2)]", encoder_layers=2,
            encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2, final_dim=16, latent_vars=8,
            latent_groups=2, num_negatives=5, conv_pos=8, conv_pos_groups=4, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0, dropout_input=0.0, dropout_features=0.0, encoder_layerdrop=0.0,
            feature_grad_mult=0.1, quantize_targets=True)
LARGE_STYLE = dict(TINY, extractor_mode="layer_norm", layer_norm_first=True, conv_bias=True,
                   conv_feature_layers="[(24, 10, 5)] + [(24, 3, 2)] * 2 + [(24, 2, 2)]")  # with a projection
HOURGLASS = dict(TINY, encoder_layers=4, hourglass_transformer="[1,(2,2),1]", hourglass_resample="linear")
# What fairseq's argparse Namespace also holds besides the model's settings (a few of its ~200 entries).
FAIRSEQ_EXTRA_ARGS = dict(arch="wav2vec2", task="audio_pretraining", criterion="wav2vec", lr=[0.0005],
                          max_update=400000, data="/data/librispeech", sample_rate=16000, normalize=False,
                          latent_temp="(2,0.5,0.999995)", infonce=True, layer_type="transformer", pos_conv_depth=1,
                          quantize_input=False, target_glu=False, quantizer_depth=1, mask_selection="static")


def randomised(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Norm weights and biases off their 1 / 0 initialisation, so that a weight loaded in the wrong place shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name or name.endswith("bias") or "weight_g" in name:
                parameter.add_(0.1 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def pretraining_model(config: dict, seed: int = 0) -> Wav2Vec2Model:
    torch.manual_seed(seed)
    return randomised(Wav2Vec2Model(config), seed)


def ctc_model(config: dict, vocab_size: int = 10, seed: int = 0) -> Wav2Vec2CTC:
    torch.manual_seed(seed)
    return randomised(Wav2Vec2CTC(config, vocab_size), seed)


def waveform(batch: int = 2, samples: int = 4000, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, samples, generator=torch.Generator().manual_seed(seed))


def pretraining_outputs(model: Wav2Vec2Model, source: torch.Tensor) -> dict:
    frames = model.extract_features(source)["x"].shape[1]
    rng = np.random.default_rng(0)
    mask = compute_mask_indices([frames] * source.shape[0], frames, 0.65, 2, rng, min_masks=2)
    negatives = sample_negative_indices(mask, 5, rng)
    with torch.no_grad():
        out = model(source, mask_indices=torch.from_numpy(mask), negative_indices=negatives)
        out["x"] = model.extract_features(source)["x"]
    return out


def fairseq_namespace(config: dict, **more) -> argparse.Namespace:
    values = dict(FAIRSEQ_EXTRA_ARGS, **{key: value for key, value in config.items() if key != "latent_temp"})
    return argparse.Namespace(**dict(values, **more))


def fairseq_extra_state() -> dict:
    """fairseq's bookkeeping beside the weights: numpy floats, nested dicts, optimizer tensors."""
    return {"optimizer_history": [{"criterion_name": "Wav2vecCriterion", "optimizer_name": "FairseqAdam",
                                   "lr_scheduler_state": {"best": np.float64(2.5)}, "num_updates": 400000}],
            "extra_state": {"epoch": 300, "best": np.float64(2.5), "train_iterator": {"epoch": 300}},
            "last_optimizer_state": {"state": {0: {"exp_avg": torch.zeros(3)}}, "loss_scale": 128.0}}


def nvidia_args(config: dict, mode: str, **more) -> dict:
    """NVIDIA's train.py saves args.__dict__: every flag, flat, with the mode."""
    return {"mode": mode, "output_dir": "results/", "lr": [0.0005], "update_freq": [1], "mha": "pyt",
            "fp32_pos_conv": True, "rotary_embeddings": False, "use_spectrogram_features": False,
            **config, **more}


def nvidia_state(model: torch.nn.Module) -> dict:
    """DDP's module. prefix, and the q, k, v projections of the first layer fused into one qkv (order q, k, v)."""
    state = {}
    for key, value in model.state_dict().items():
        if ".layers.0.self_attn.k_proj." in key or ".layers.0.self_attn.v_proj." in key:
            continue
        if ".layers.0.self_attn.q_proj." in key:
            parts = [model.state_dict()[key.replace("q_proj", name)] for name in ("q_proj", "k_proj", "v_proj")]
            key, value = key.replace("q_proj", "qkv"), torch.cat(parts)
        state["module." + key] = value
    return state
