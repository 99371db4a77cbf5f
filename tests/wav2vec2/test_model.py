"""wav2vec 2.0's networks: the paper's parameter counts, fairseq's state-dict names, padding-awareness, the gradient
multiplier, the quantizer's temperature and perplexities, the contrastive logits recomputed by hand, LayerDrop, the
CTC head, and the configuration strings. Numerics against Hugging Face transformers are in test_convert.py."""
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from wav2vec2.masking import compute_mask_indices, sample_negative_indices
from wav2vec2.model import (ACTIVATIONS, BASE_CONFIG, Wav2Vec2CTC, Wav2Vec2Model, attention,
                            model_config_from, parse_conv_feature_layers, parse_hourglass)

TINY = dict(conv_feature_layers="[(32, 10, 5)] + [(32, 3, 2)] * 2 + [(32, 2, 2)]", encoder_layers=2,
            encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2, final_dim=16, latent_vars=8,
            latent_groups=2, num_negatives=5, conv_pos=8, conv_pos_groups=4, dropout=0.0, attention_dropout=0.0,
            dropout_input=0.0, dropout_features=0.0, encoder_layerdrop=0.0)
STRIDE = 80


def tiny(seed=0, **overrides):
    torch.manual_seed(seed)
    return Wav2Vec2Model(dict(TINY, **overrides)).eval()


def count(module):
    return sum(parameter.numel() for parameter in module.parameters())


def masks_and_negatives(num_frames, batch=2, num_negatives=5, seed=0):
    rng = np.random.default_rng(seed)
    mask = compute_mask_indices([num_frames] * batch, num_frames, 0.65, 3, rng, min_masks=2)
    return torch.from_numpy(mask), sample_negative_indices(mask, num_negatives, rng)


def fairseq_keys(num_conv, num_layers, mode="default", conv_bias=False, projection=True, layers="encoder.layers"):
    """The key names of the reference's state dict (../shared/reference/wav2vec2.md, section 3)."""
    keys = {"mask_emb", "layer_norm.weight", "layer_norm.bias", "quantizer.vars", "quantizer.weight_proj.weight",
            "quantizer.weight_proj.bias", "project_q.weight", "project_q.bias", "final_proj.weight", "final_proj.bias",
            "encoder.pos_conv.0.bias", "encoder.pos_conv.0.weight_g", "encoder.pos_conv.0.weight_v",
            "encoder.layer_norm.weight", "encoder.layer_norm.bias"}
    if projection:
        keys |= {"post_extract_proj.weight", "post_extract_proj.bias"}
    for i in range(num_conv):
        keys.add(f"feature_extractor.conv_layers.{i}.0.weight")
        if conv_bias:
            keys.add(f"feature_extractor.conv_layers.{i}.0.bias")
        if mode == "layer_norm":
            keys |= {f"feature_extractor.conv_layers.{i}.2.1.weight", f"feature_extractor.conv_layers.{i}.2.1.bias"}
    if mode == "default":
        keys |= {"feature_extractor.conv_layers.0.2.weight", "feature_extractor.conv_layers.0.2.bias"}
    keys |= layer_keys(layers, num_layers)
    return keys


def layer_keys(prefix, num_layers):
    names = [f"self_attn.{p}_proj" for p in "kvq"] + ["self_attn.out_proj", "self_attn_layer_norm", "fc1", "fc2",
                                                      "final_layer_norm"]
    return {f"{prefix}.{i}.{name}.{kind}" for i in range(num_layers) for name in names for kind in ("weight", "bias")}


@pytest.mark.parametrize("name", ["gelu", "gelu_accurate"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_gelu_is_fairseqs_float32_gelu_bit_for_bit(name, dtype):
    """ACTIVATIONS skips fairseq's cast to float32 and back for bf16 only where the CPU's kernel gives the same bits:
    the same bits forward and backward on any CPU."""
    approximate = "tanh" if name == "gelu_accurate" else "none"
    torch.manual_seed(0)
    x = (torch.randn(64, 1024) * 4).to(dtype)
    grad = torch.randn(64, 1024).to(dtype)
    results = []
    for activation in (ACTIVATIONS[name], lambda y: F.gelu(y.float(), approximate=approximate).type_as(y)):
        leaf = x.clone().requires_grad_()
        out = activation(leaf)
        out.backward(grad)
        assert out.dtype == dtype and leaf.grad.dtype == dtype
        results.append((out, leaf.grad))
    (ours, our_grad), (fairseqs, fairseq_grad) = results
    assert torch.equal(ours, fairseqs)
    assert torch.equal(our_grad, fairseq_grad)


@pytest.mark.parametrize("autocast", [False, True])
def test_bf16_attention_on_the_cpu_is_float32_attention_rounded_once(autocast):
    """Under CPU autocast too (which would otherwise run the kernel in bf16): the output and the gradients."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 17, 8, generator=generator).bfloat16() for _ in range(3))
    attend = (torch.arange(17) < torch.tensor([17, 9, 4])[:, None])[:, None, None, :]
    gradient = torch.randn(3, 2, 17, 8, generator=generator).bfloat16()
    results = []
    for ours in (True, False):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        if ours:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                out = attention(*leaves, attend, 0.0)
        else:
            out = F.scaled_dot_product_attention(*(t.float() for t in leaves), attn_mask=attend).bfloat16()
        out.backward(gradient)
        assert out.dtype == torch.bfloat16 and all(leaf.grad.dtype == torch.bfloat16 for leaf in leaves)
        results.append([out] + [leaf.grad for leaf in leaves])
    for our_tensor, float32_tensor in zip(*results):
        assert torch.equal(our_tensor, float32_tensor)


@pytest.fixture(scope="module")
def base():
    torch.manual_seed(0)
    return Wav2Vec2Model({})


@pytest.mark.slow
def test_base_parameter_counts_match_the_reference(base):
    assert count(base) == 95_044_608
    assert count(Wav2Vec2CTC({}, 32)) == 94_396_320


def test_base_state_dict_has_fairseqs_names_and_shapes(base):
    state = base.state_dict()
    assert set(state) == fairseq_keys(7, 12)
    shapes = {"mask_emb": [768], "feature_extractor.conv_layers.0.0.weight": [512, 1, 10],
              "feature_extractor.conv_layers.6.0.weight": [512, 512, 2], "post_extract_proj.weight": [768, 512],
              "quantizer.vars": [1, 640, 128], "quantizer.weight_proj.weight": [640, 512],
              "project_q.weight": [256, 256], "final_proj.weight": [256, 768],
              "encoder.pos_conv.0.weight_g": [1, 1, 128], "encoder.pos_conv.0.weight_v": [768, 48, 128],
              "encoder.layers.11.fc1.weight": [3072, 768]}
    assert {key: list(state[key].shape) for key in shapes} == shapes


def test_base_initialisation_follows_fairseq(base):
    assert 0 <= base.mask_emb.min() and base.mask_emb.max() < 1 and base.mask_emb.std() > 0.2  # uniform [0, 1)
    fc1 = base.encoder.layers[3].fc1
    assert abs(fc1.weight.std().item() - 0.02) < 0.001 and (fc1.bias == 0).all()  # BERT
    assert abs(base.encoder.layers[0].self_attn.q_proj.weight.std().item() - 0.02) < 0.001
    pos_conv = base.encoder.pos_conv[0]
    assert abs(pos_conv.weight_v.std().item() / (4 / (128 * 768)) ** 0.5 - 1) < 0.01
    assert torch.allclose(pos_conv.weight_g, pos_conv.weight_v.norm(dim=(0, 1), keepdim=True))
    assert 0 <= base.quantizer.vars.min() and base.quantizer.vars.max() < 1
    assert abs(base.quantizer.weight_proj.weight.std().item() - 1) < 0.01


def test_layer_norm_extractor_and_hourglass_names():
    large = tiny(extractor_mode="layer_norm", conv_bias=True, layer_norm_first=True, encoder_embed_dim=48)
    assert set(large.state_dict()) == fairseq_keys(4, 2, mode="layer_norm", conv_bias=True)

    hourglass = tiny(hourglass_transformer="[2,(3,4),1]", hourglass_resample="linear")
    expected = (fairseq_keys(4, 2, projection=False) | layer_keys("encoder.hourglass_layers", 3)
                | layer_keys("encoder.post_layers", 1)
                | {f"encoder.{side}_layer.linear.{kind}" for side in ("downsample", "upsample")
                   for kind in ("weight", "bias")})
    state = hourglass.state_dict()
    assert set(state) == expected
    assert state["encoder.downsample_layer.linear.weight"].shape == (32, 128)
    assert state["encoder.upsample_layer.linear.weight"].shape == (128, 32)
    naive = tiny(hourglass_transformer="[1,(2,2),1]")
    assert not any("sample_layer" in key for key in naive.state_dict())


def test_ctc_state_dict_is_the_encoder_under_w2v_encoder_plus_proj():
    ctc = Wav2Vec2CTC(TINY, vocab_size=10)
    heads = ("quantizer.", "project_q.", "final_proj.")
    expected = {f"w2v_encoder.w2v_model.{key}" for key in fairseq_keys(4, 2, projection=False)
                if not key.startswith(heads)} | {"w2v_encoder.proj.weight", "w2v_encoder.proj.bias"}
    assert set(ctc.state_dict()) == expected
    assert ctc.w2v_encoder.proj.weight.shape == (10, 32) and (ctc.w2v_encoder.proj.bias == 0).all()


def test_output_shapes():
    model = tiny()
    source = torch.randn(2, 40 * STRIDE)
    frames = model.extract_features(source)["x"].shape[1]
    mask, negatives = masks_and_negatives(frames)
    with torch.no_grad():
        out = model(source, mask_indices=mask, negative_indices=negatives)
        features = model.extract_features(source, torch.zeros_like(source, dtype=torch.bool))
    assert out["logits"].shape == (mask.sum(), 6) and out["logits"].dtype == torch.float32
    assert out["num_vars"] == 16 and out["features_pen"].shape == ()
    assert features["x"].shape == (2, frames, 32) and features["padding_mask"].shape == (2, frames)
    assert features["unmasked_features"].shape == (2, frames, 32)
    ctc = Wav2Vec2CTC(TINY, vocab_size=7).eval()
    assert ctc(source)["logits"].shape == (2, frames, 7)


PADDING_CASES = {
    "plain": {}, "layer_norm": dict(extractor_mode="layer_norm", layer_norm_first=True, conv_bias=True),
    "hourglass_naive": dict(hourglass_transformer="[1,(2,3),1]"),
    "hourglass_linear": dict(hourglass_transformer="[1,(2,3),1]", hourglass_resample="linear"),
}


@pytest.mark.parametrize("case", PADDING_CASES)
def test_a_padded_batch_gives_each_utterance_what_it_gets_alone(case):
    model = tiny(**PADDING_CASES[case])
    lengths = [4000, 3010, 1870]  # 99, 74 and 46 frames: partial hourglass windows of 3
    torch.manual_seed(1)
    utterances = [torch.randn(length) for length in lengths]
    batch = torch.zeros(3, max(lengths))
    padding_mask = torch.ones(3, max(lengths), dtype=torch.bool)
    for row, utterance in enumerate(utterances):
        batch[row, :len(utterance)] = utterance
        padding_mask[row, :len(utterance)] = False
    with torch.no_grad():
        together = model.extract_features(batch, padding_mask)
        for row, utterance in enumerate(utterances):
            alone = model.extract_features(utterance[None])
            frames = alone["x"].shape[1]
            assert (~together["padding_mask"][row]).sum() == frames
            assert torch.allclose(together["x"][row, :frames], alone["x"][0], atol=1e-5)
            assert torch.allclose(together["unmasked_features"][row, :frames], alone["unmasked_features"][0],
                                  atol=1e-5)


@pytest.mark.parametrize("mult", [1.0, 0.1])
def test_feature_gradient_is_scaled_by_feature_grad_mult(mult):
    source = torch.randn(2, 30 * STRIDE)
    gradients = {}
    for factor in (1.0, mult):
        model = tiny(feature_grad_mult=factor)
        model.extract_features(source)["x"].pow(2).sum().backward()
        gradients[factor] = (model.feature_extractor.conv_layers[0][0].weight.grad,
                             model.encoder.layers[0].fc1.weight.grad)
    assert torch.allclose(gradients[mult][0], mult * gradients[1.0][0], rtol=1e-4, atol=1e-8)
    assert torch.allclose(gradients[mult][1], gradients[1.0][1])


def test_a_zero_feature_grad_mult_freezes_the_extractor():
    model = tiny(feature_grad_mult=0.0).train()
    model.extract_features(torch.randn(2, 30 * STRIDE))["x"].sum().backward()
    assert all(parameter.grad is None for parameter in model.feature_extractor.parameters())
    assert model.layer_norm.weight.grad is not None


def test_quantizer_temperature_schedule():
    model = tiny()
    for updates, expected in [(0, 2.0), (1000, 2.0 * 0.999995 ** 1000), (300_000, 0.5)]:
        model.set_num_updates(updates)
        assert model.quantizer.curr_temp == pytest.approx(expected)
    source = torch.randn(2, 30 * STRIDE)
    assert model(source)["temperature"] == pytest.approx(0.5)


def hand_computed(model, source, mask, negatives):
    """The contrastive logits and perplexities from the model's intermediate tensors and parameters (eval mode)."""
    features = model.extract_features(source, mask_indices=mask)
    context = features["x"][mask] @ model.final_proj.weight.T + model.final_proj.bias
    quantizer = model.quantizer
    scores = (features["unmasked_features"][mask] @ quantizer.weight_proj.weight.T + quantizer.weight_proj.bias)
    scores = scores.view(len(context), 2, 8)
    codes = scores.argmax(-1)
    codebook = quantizer.vars.view(2, 8, -1)
    quantized = torch.cat([codebook[0, codes[:, 0]], codebook[1, codes[:, 1]]], dim=1)
    targets = quantized @ model.project_q.weight.T + model.project_q.bias
    candidates = torch.cat([targets[:, None], targets[negatives]], dim=1)
    cosine = (context[:, None] * candidates).sum(-1) / (context.norm(dim=-1)[:, None] * candidates.norm(dim=-1))
    logits = cosine / 0.1
    identical = torch.zeros_like(logits, dtype=torch.bool)
    identical[:, 1:] = (targets[negatives] == targets[:, None]).all(-1)
    logits[identical] = float("-inf")

    def perplexity(probs):
        mean = probs.mean(0)
        return sum(torch.exp(-(mean[g] * torch.log(mean[g] + 1e-7)).sum()) for g in range(2))
    return (logits, perplexity(torch.softmax(scores, -1)), perplexity(F.one_hot(codes, 8).float()), identical)


def test_logits_and_perplexities_recomputed_by_hand():
    model = tiny()
    source = torch.randn(2, 40 * STRIDE)
    mask, negatives = masks_and_negatives(model.extract_features(source)["x"].shape[1])
    with torch.no_grad():
        out = model(source, mask_indices=mask, negative_indices=negatives)
        logits, prob_perplexity, code_perplexity, identical = hand_computed(model, source, mask, negatives)
    assert identical.any() and not identical.all()  # 64 codes: some negatives quantize like their target
    assert torch.equal(torch.isinf(out["logits"]), identical)
    assert torch.allclose(out["logits"][~identical], logits[~identical], atol=1e-5)
    assert out["prob_perplexity"].item() == pytest.approx(prob_perplexity.item(), rel=1e-5)
    assert out["code_perplexity"].item() == pytest.approx(code_perplexity.item(), rel=1e-5)

    # In training the Gumbel noise picks the codes, but the perplexities still come from the undisturbed scores.
    model.train()
    trained = model(source, mask_indices=mask, negative_indices=negatives)
    assert trained["prob_perplexity"].item() == pytest.approx(prob_perplexity.item(), rel=1e-5)
    assert trained["code_perplexity"].item() == pytest.approx(code_perplexity.item(), rel=1e-5)


def test_forward_draws_masks_and_negatives_when_none_are_given():
    model = tiny()
    source = torch.randn(2, 40 * STRIDE)
    torch.manual_seed(3)
    first = model(source)["logits"]
    torch.manual_seed(3)
    assert torch.equal(model(source)["logits"], first)  # a function of torch's seed
    assert first.shape[1] == 6 and first.shape[0] % 2 == 0  # same masked count in both rows


def test_time_and_channel_masks_replace_the_encoder_input():
    model = tiny()
    source = torch.randn(2, 30 * STRIDE)
    with torch.no_grad():
        frames = model.extract_features(source)["x"].shape[1]
        all_masked = model.extract_features(source, mask_indices=torch.ones(2, frames, dtype=torch.bool))["x"]
        assert torch.allclose(all_masked, model.encoder(model.mask_emb.expand(2, frames, 32)), atol=1e-6)
        all_channels = model.extract_features(source, channel_mask=torch.ones(2, 32, dtype=torch.bool))["x"]
        assert torch.allclose(all_channels, model.encoder(torch.zeros(2, frames, 32)), atol=1e-6)


@pytest.mark.slow
def test_layerdrop_skips_layers_only_in_training():
    model = tiny(encoder_layerdrop=0.5, encoder_layers=4)
    calls = []
    for layer in model.encoder.layers:
        layer.register_forward_hook(lambda *args: calls.append(1))
    source = torch.randn(1, 20 * STRIDE)
    with torch.no_grad():
        for _ in range(5):
            model.extract_features(source)
        assert len(calls) == 20
        calls.clear()
        model.train()
        torch.manual_seed(0)
        for _ in range(100):
            model.extract_features(source)
    assert 150 < len(calls) < 250


def test_ctc_pad_frames_say_blank():
    ctc = Wav2Vec2CTC(TINY, vocab_size=6).eval()
    source = torch.randn(2, 40 * STRIDE)
    padding_mask = torch.zeros_like(source, dtype=torch.bool)
    padding_mask[1, 20 * STRIDE:] = True
    out = ctc(source, padding_mask)
    pads = out["padding_mask"]
    assert pads[1].sum() > 0 and not pads[0].any()
    pad_logits = out["logits"][pads]
    assert (pad_logits[:, 0] == 0).all() and torch.isinf(pad_logits[:, 1:]).all()
    assert torch.isfinite(out["logits"][~pads]).all()


def test_freeze_finetune_updates_leaves_the_encoder_without_gradients():
    ctc = Wav2Vec2CTC(dict(TINY, feature_grad_mult=0.0), vocab_size=6, freeze_finetune_updates=3).train()
    encoder = ctc.w2v_encoder.w2v_model
    source = torch.randn(2, 30 * STRIDE)
    ctc(source)["logits"].sum().backward()
    assert ctc.w2v_encoder.proj.weight.grad is not None
    assert all(parameter.grad is None for parameter in encoder.parameters())
    ctc.set_num_updates(3)
    ctc(source)["logits"].sum().backward()
    assert encoder.encoder.layers[0].fc1.weight.grad is not None and encoder.mask_emb.grad is None
    assert all(parameter.grad is None for parameter in encoder.feature_extractor.parameters())  # mult 0


def test_load_pretrained_copies_the_encoder_and_refuses_other_models():
    pretrained = tiny(seed=5)
    ctc = Wav2Vec2CTC(TINY, vocab_size=6).eval()
    ctc.load_pretrained(pretrained.state_dict())
    source = torch.randn(1, 30 * STRIDE)
    with torch.no_grad():
        assert torch.equal(ctc.w2v_encoder.w2v_model.extract_features(source)["x"],
                           pretrained.extract_features(source)["x"])
    with pytest.raises(ValueError, match="missing .*encoder.layers.1"):
        ctc.load_pretrained({key: value for key, value in pretrained.state_dict().items()
                             if not key.startswith("encoder.layers.1")})


@pytest.mark.parametrize("text,expected", [
    ("[2,(8,4),2]", (2, 8, 4, 2)), (" [0, (12, 2), 0] ", (0, 12, 2, 0)), ("[1,[4,3],3]", (1, 4, 3, 3)),
    (None, None), ("", None), ("None", None)])
def test_hourglass_strings_are_parsed(text, expected):
    assert parse_hourglass(text) == expected


@pytest.mark.parametrize("text", ["[2,8,2]", "[2,(8,0),2]", "[2,(8,4)]", "[2,(8,4),2] + 1", "__import__('os')",
                                  "[2,(8,4),-1]", "[2,(8.5,4),2]", "[2,(8,4),2"])
def test_bad_hourglass_strings_are_refused_naming_the_key(text):
    with pytest.raises(ValueError, match="hourglass_transformer"):
        model_config_from({"hourglass_transformer": text})


def test_conv_feature_layer_strings_are_evaluated_safely():
    assert parse_conv_feature_layers(BASE_CONFIG["conv_feature_layers"]) == (
        [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2)
    for bad in ["[(512, 10)]", "[]", "open('x')", "[(512, 10, 5)] * 'a'", "[(512, 10, 0)]"]:
        with pytest.raises(ValueError, match="conv_feature_layers"):
            model_config_from({"conv_feature_layers": bad})


def test_unknown_and_bad_configuration_values_are_refused():
    with pytest.raises(ValueError, match="quantize_input"):
        model_config_from({"quantize_input": True})
    with pytest.raises(ValueError, match="extractor_mode"):
        model_config_from({"extractor_mode": "group"})
    assert model_config_from({"latent_temp": "(2, 0.1, 0.999995)"})["latent_temp"] == [2.0, 0.1, 0.999995]
    for bad in ["(2, 0.1)", "two", [2.0, "x", 1.0]]:
        with pytest.raises(ValueError, match="latent_temp"):
            model_config_from({"latent_temp": bad})
