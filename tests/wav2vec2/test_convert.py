"""Hugging Face transformers' wav2vec 2.0 (the PyPI package, test-only) and this project's, converted both ways by
`python -m wav2vec2.convert`: random-initialised HF models of a tiny size and of Base size give, after conversion,
the same encoder output (Wav2Vec2Model), CTC logits (Wav2Vec2ForCTC), projected context and quantized states,
codevector perplexity and contrastive logits on the same masks and negatives (Wav2Vec2ForPreTraining) as ours,
within 1e-4, in eval mode, without padding (HF's group-norm models let pads into their GroupNorm), for the group-norm
post-LN (Base) and layer-norm pre-LN ("stable layer norm", Large) variants."""
import argparse
import json
import warnings

import numpy as np
import pytest
import torch

from common.checkpoint import load_checkpoint, save_checkpoint
from common.errors import UserError
from wav2vec2.checkpoints import FINETUNING_KEYS, project_checkpoint
from wav2vec2.convert import (config_from_hf, config_to_hf, conv_layers_string, main, state_from_hf, state_to_hf,
                              symbols_from_hf_vocab)
from wav2vec2.masking import compute_mask_indices, sample_negative_indices
from wav2vec2.model import Wav2Vec2CTC, Wav2Vec2Model, model_config_from

transformers = pytest.importorskip("transformers")
transformers.utils.logging.set_verbosity_error()
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC, Wav2Vec2ForPreTraining  # noqa: E402
from transformers import Wav2Vec2Model as HFWav2Vec2Model  # noqa: E402

TOLERANCE = dict(rtol=0, atol=1e-4)
SYMBOLS = ["<s>", "<pad>", "</s>", "<unk>", "|", "E", "T", "A", "O", "N"]
# HF's defaults differ from a comparison's needs: dropouts off (eval mode ignores them, but set anyway), masking on
# (masked_spec_embed exists only then), GELU and eps 1e-5 spelled out.
EXACT = dict(hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
             feat_quantizer_dropout=0.0, final_dropout=0.0, layerdrop=0.0, hidden_act="gelu", layer_norm_eps=1e-5,
             feat_extract_activation="gelu", mask_time_prob=0.05, apply_spec_augment=True)
TINY_HF = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
               conv_dim=[24, 24, 24, 24], conv_kernel=[10, 3, 3, 2], conv_stride=[5, 2, 2, 2],
               num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4, num_codevectors_per_group=8,
               num_codevector_groups=2, codevector_dim=16, proj_codevector_dim=16, num_negatives=5,
               vocab_size=len(SYMBOLS), **EXACT)
VARIANTS = {"group-norm": dict(feat_extract_norm="group", do_stable_layer_norm=False, conv_bias=False),
            "stable-layer-norm": dict(feat_extract_norm="layer", do_stable_layer_norm=True, conv_bias=True)}


def hf_config(variant: str, **more) -> Wav2Vec2Config:
    return Wav2Vec2Config(**dict(TINY_HF, **VARIANTS[variant], **more))


def randomised(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Norms and biases off their 1 / 0 initialisation, so that a weight in the wrong place shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name or name.endswith("bias") or "original0" in name or "weight_g" in name:
                parameter.add_(0.1 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def hf_model(cls, config: Wav2Vec2Config, seed: int = 0):
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return randomised(cls(config), seed)


def waveform(samples: int = 4000, batch: int = 2, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, samples, generator=torch.Generator().manual_seed(seed))


def masks_and_negatives(batch: int, frames: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    mask = compute_mask_indices([frames] * batch, frames, 0.5, 3, rng, min_masks=2)
    return torch.from_numpy(mask), sample_negative_indices(mask, 5, rng)


def hf_negatives(mask: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
    """Our negatives (indices into the masked frames, row-major) as HF's: (B, T, K) indices into B * T frames."""
    flat_position = mask.flatten().nonzero().squeeze(1)
    out = torch.zeros(*mask.shape, negatives.shape[1], dtype=torch.long)
    out[mask] = flat_position[negatives]
    return out


def ours_from_file(path):
    checkpoint = load_checkpoint(path)
    config = checkpoint["model_config"]
    if "vocab_size" in config:
        architecture = {key: value for key, value in config.items() if key not in FINETUNING_KEYS}
        model = Wav2Vec2CTC(architecture, config["vocab_size"], config["final_dropout"])
    else:
        model = Wav2Vec2Model(config)
    model.load_state_dict(checkpoint["state_dict"])
    return model.eval(), checkpoint


def compare_pretraining(hf, ours, source):
    """Context projections, quantized targets, perplexity and contrastive logits at the masked frames."""
    frames = ours.extract_features(source)["x"].shape[1]
    mask, negatives = masks_and_negatives(source.shape[0], frames)
    with torch.no_grad():
        theirs = hf(source, mask_time_indices=mask, sampled_negative_indices=hf_negatives(mask, negatives))
        mine = ours(source, mask_indices=mask, negative_indices=negatives)
        features = ours.extract_features(source, mask_indices=mask)
        context = ours.final_proj(features["x"])
        quantized = ours.project_q(ours.quantizer(features["unmasked_features"][mask])["x"])
    torch.testing.assert_close(context, theirs.projected_states, **TOLERANCE)
    torch.testing.assert_close(quantized, theirs.projected_quantized_states[mask], **TOLERANCE)
    torch.testing.assert_close(mine["code_perplexity"], theirs.codevector_perplexity, **TOLERANCE)
    # HF's forward computes logits (1 + K, B, T) but returns only the loss: recompute them as it does, from its
    # outputs, with its own function; its loss is the cross-entropy of exactly these logits at the masked frames.
    their_quantized = theirs.projected_quantized_states
    candidates = their_quantized.flatten(0, 1)[hf_negatives(mask, negatives).flatten()].view(
        *mask.shape, -1, their_quantized.shape[-1]).permute(2, 0, 1, 3)
    logits = hf.compute_contrastive_logits(their_quantized[None], candidates, theirs.projected_states,
                                           hf.config.contrastive_logits_temperature)
    identical = (their_quantized == candidates).all(-1)
    logits[1:][identical] = float("-inf")
    their_logits = logits.permute(1, 2, 0)[mask]
    assert torch.isinf(mine["logits"]).any(), "the tiny codebook should make some negatives equal their target"
    torch.testing.assert_close(mine["logits"], their_logits, **TOLERANCE)
    their_loss = torch.nn.functional.cross_entropy(their_logits, torch.zeros(len(their_logits), dtype=torch.long),
                                                   reduction="sum")
    torch.testing.assert_close(their_loss, theirs.contrastive_loss, **TOLERANCE)


# ---- Hugging Face -> ours --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_from_hf_tiny_models(tmp_path, variant):
    """Each class through its save_pretrained folder and `python -m wav2vec2.convert --from-hf DIR --output CKPT`."""
    source = waveform()
    for cls in (HFWav2Vec2Model, Wav2Vec2ForCTC, Wav2Vec2ForPreTraining):
        hf = hf_model(cls, hf_config(variant))
        folder, output = tmp_path / f"{variant}-{cls.__name__}", tmp_path / f"{cls.__name__}.pt"
        hf.save_pretrained(folder)
        if cls is Wav2Vec2ForCTC:
            (folder / "vocab.json").write_text(json.dumps(
                {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{s: i for i, s in enumerate(SYMBOLS) if i > 3}}))
        main(["--from-hf", str(folder), "--output", str(output)])
        ours, checkpoint = ours_from_file(output)
        assert checkpoint["model_name"] == "wav2vec2" and checkpoint["converted_from"]["class"] == cls.__name__
        with torch.no_grad():
            if cls is Wav2Vec2ForCTC:
                assert checkpoint["text"]["symbols"] == SYMBOLS
                torch.testing.assert_close(ours(source)["logits"], hf(source).logits, **TOLERANCE)
            elif cls is HFWav2Vec2Model:
                assert "quantizer.vars" in checkpoint["converted_from"]["initialised"]
                torch.testing.assert_close(ours.extract_features(source)["x"], hf(source).last_hidden_state,
                                           **TOLERANCE)
            else:
                assert checkpoint["converted_from"]["initialised"] == []
                torch.testing.assert_close(ours.extract_features(source)["x"],
                                           hf.wav2vec2(source).last_hidden_state, **TOLERANCE)
                compare_pretraining(hf, ours, source)


@pytest.mark.slow
def test_from_hf_base_size():
    """HF's Base configuration (group norm, post-LN, 95M parameters) on a short input."""
    hf = hf_model(Wav2Vec2ForPreTraining, Wav2Vec2Config(**EXACT))
    config, _ = config_from_hf(hf.config.to_dict(), "Base")
    assert config["conv_feature_layers"] == "[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2"
    ours = Wav2Vec2Model(config).eval()
    ours.load_state_dict(state_from_hf(hf.state_dict(), config))
    assert sum(parameter.numel() for parameter in ours.parameters()) == 95_044_608
    source = waveform(samples=8000, batch=1)
    with torch.no_grad():
        torch.testing.assert_close(ours.extract_features(source)["x"], hf.wav2vec2(source).last_hidden_state,
                                   **TOLERANCE)


# ---- ours -> Hugging Face --------------------------------------------------------------------------------------------

def our_tiny_config(variant: str) -> dict:
    config, _ = config_from_hf(hf_config(variant).to_dict(), variant)
    return config


@pytest.mark.parametrize("variant", VARIANTS)
def test_to_hf_tiny_models(tmp_path, variant):
    """`--checkpoint CKPT --to-hf DIR`: transformers' from_pretrained loads the folder without missing or unexpected
    weights and computes what ours computes; a CTC model's tokenizer decodes with our dictionary."""
    source, config = waveform(), our_tiny_config(variant)
    torch.manual_seed(0)
    for kind in ("pretraining", "ctc"):
        if kind == "ctc":
            ours = randomised(Wav2Vec2CTC(config, len(SYMBOLS)))
            model_config = dict(config, vocab_size=len(SYMBOLS), final_dropout=0.0, freeze_finetune_updates=0)
            checkpoint = project_checkpoint(model_config, ours.state_dict(), SYMBOLS)
        else:
            ours = randomised(Wav2Vec2Model(config))
            checkpoint = project_checkpoint(config, ours.state_dict())
        path, folder = tmp_path / f"{kind}.pt", tmp_path / f"{variant}-{kind}"
        save_checkpoint(checkpoint, path)
        main(["--checkpoint", str(path), "--to-hf", str(folder)])
        cls = Wav2Vec2ForCTC if kind == "ctc" else Wav2Vec2ForPreTraining
        hf, loading = cls.from_pretrained(folder, output_loading_info=True)
        assert not any(loading[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys")), loading
        hf.eval()
        with torch.no_grad():
            if kind == "ctc":
                torch.testing.assert_close(hf(source).logits, ours(source)["logits"], **TOLERANCE)
            else:
                torch.testing.assert_close(hf.wav2vec2(source).last_hidden_state,
                                           ours.extract_features(source)["x"], **TOLERANCE)
                compare_pretraining(hf, ours, source)
    processor = transformers.Wav2Vec2Processor.from_pretrained(folder)
    # our blank <s> (index 0) is HF's pad token, which its CTC decoding drops; | separates words
    assert processor.tokenizer.pad_token_id == 0
    assert processor.tokenizer.decode([0, 5, 5, 0, 6, 4, 7, 0]) == "ET A"
    assert processor.feature_extractor.return_attention_mask == (variant == "stable-layer-norm")


@pytest.mark.slow
def test_to_hf_base_size():
    torch.manual_seed(0)
    ours = Wav2Vec2CTC(model_config_from({"dropout": 0.0, "attention_dropout": 0.0, "dropout_input": 0.0,
                                          "dropout_features": 0.0, "encoder_layerdrop": 0.0}), 32).eval()
    state, hf_class = state_to_hf(ours.state_dict(), ours.config)
    assert hf_class == "Wav2Vec2ForCTC"
    hf = Wav2Vec2ForCTC(Wav2Vec2Config(**config_to_hf(ours.config, hf_class, vocab_size=32))).eval()
    hf.load_state_dict(state, strict=True)
    source = waveform(samples=8000, batch=1)
    with torch.no_grad():
        torch.testing.assert_close(hf(source).logits, ours(source)["logits"], **TOLERANCE)


def test_equal_widths_need_no_projection(tmp_path):
    """fairseq's (and our) model has no post_extract_proj when the conv and encoder widths match; HF always has
    one: it is written as the identity, and read back only if it is one."""
    config = dict(our_tiny_config("group-norm"),
                  conv_feature_layers="[(32, 10, 5)] + [(32, 3, 2)] * 2 + [(32, 2, 2)]")
    torch.manual_seed(0)
    ours = randomised(Wav2Vec2Model(config))
    state, hf_class = state_to_hf(ours.state_dict(), ours.config)
    hf = hf_model(Wav2Vec2ForPreTraining, Wav2Vec2Config(**config_to_hf(ours.config, hf_class)))
    hf.load_state_dict(state, strict=True)
    source = waveform()
    with torch.no_grad():
        torch.testing.assert_close(hf.wav2vec2(source).last_hidden_state, ours.extract_features(source)["x"],
                                   **TOLERANCE)
    back = state_from_hf(hf.state_dict(), ours.config)
    assert back.keys() == ours.state_dict().keys()
    with torch.no_grad():
        hf.wav2vec2.feature_projection.projection.weight.mul_(2)
    with pytest.raises(UserError, match="learned matrix"):
        state_from_hf(hf.state_dict(), ours.config)


# ---- what cannot cross, and the pieces ---------------------------------------------------------------------------------

def test_what_cannot_be_converted(tmp_path):
    hourglass = model_config_from({"hourglass_transformer": "[2,(8,4),2]"})
    with pytest.raises(UserError, match="hourglass"):
        config_to_hf(hourglass, "Wav2Vec2ForPreTraining")
    with pytest.raises(UserError, match="layer_norm_eps"):
        config_from_hf(dict(hf_config("group-norm").to_dict(), layer_norm_eps=1e-6), "DIR")
    with pytest.raises(UserError, match="adapter"):
        config_from_hf(dict(hf_config("group-norm").to_dict(), add_adapter=True), "DIR")
    with pytest.raises(UserError, match="hubert"):
        config_from_hf(dict(hf_config("group-norm").to_dict(), model_type="hubert"), "DIR")
    folder = tmp_path / "ctc"
    hf_model(Wav2Vec2ForCTC, hf_config("group-norm", pad_token_id=5)).save_pretrained(folder)
    with pytest.raises(UserError, match="pad_token_id"):
        main(["--from-hf", str(folder), "--output", str(tmp_path / "out.pt")])
    with pytest.raises(UserError, match="config.json"):
        main(["--from-hf", str(tmp_path), "--output", str(tmp_path / "out.pt")])


def test_config_round_trip_and_conv_strings():
    for variant in VARIANTS:
        config = our_tiny_config(variant)
        assert config_from_hf(config_to_hf(config, "Wav2Vec2ForPreTraining"), variant)[0] == config
    assert conv_layers_string([512] * 7, [10, 3, 3, 3, 3, 2, 2], [5, 2, 2, 2, 2, 2, 2]) == \
        "[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2"


def test_vocabularies_laid_out_otherwise_are_not_carried(capsys):
    fairseq_layout = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, "E": 5}
    assert symbols_from_hf_vocab(fairseq_layout, 6, "DIR") == ["<s>", "<pad>", "</s>", "<unk>", "|", "E"]
    assert symbols_from_hf_vocab({"[PAD]": 0, "[UNK]": 1, "a": 2, "|": 3}, 4, "DIR") is None
    assert "not fairseq's" in capsys.readouterr().out
    assert symbols_from_hf_vocab(fairseq_layout, 8, "DIR") is None


def test_fairseq_finetuned_file_to_hf_and_to_ours(tmp_path):
    """--checkpoint takes fairseq's files too; their dictionary comes from --labels-path (fairseq keeps it beside
    the data, not in the file)."""

    config = our_tiny_config("group-norm")
    torch.manual_seed(0)
    ours = randomised(Wav2Vec2CTC(config, len(SYMBOLS)))
    pretraining_args = argparse.Namespace(arch="wav2vec2", **{key: value for key, value in config.items()
                                                              if key != "latent_temp"})
    path = tmp_path / "wav2vec_small_960h.pt"
    torch.save({"args": argparse.Namespace(arch="wav2vec_ctc", w2v_path="wav2vec_small.pt", final_dropout=0.0,
                                           w2v_args=pretraining_args), "model": ours.state_dict()}, path)
    dictionary = tmp_path / "dict.ltr.txt"
    dictionary.write_text("".join(f"{symbol} {100 - index}\n" for index, symbol in enumerate(SYMBOLS[4:])))

    main(["--checkpoint", str(path), "--to-hf", str(tmp_path / "hf"), "--labels-path", str(dictionary)])
    hf = Wav2Vec2ForCTC.from_pretrained(tmp_path / "hf").eval()
    assert json.loads((tmp_path / "hf" / "vocab.json").read_text())["|"] == 4
    main(["--checkpoint", str(path), "--output", str(tmp_path / "ours.pt"), "--labels-path", str(dictionary)])
    converted, checkpoint = ours_from_file(tmp_path / "ours.pt")
    assert checkpoint["text"]["symbols"] == SYMBOLS
    source = waveform()
    with torch.no_grad():
        expected = ours(source)["logits"]
        torch.testing.assert_close(hf(source).logits, expected, **TOLERANCE)
        torch.testing.assert_close(converted(source)["logits"], expected, rtol=0, atol=0)
