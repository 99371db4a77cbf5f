"""--intermediate-ctc-weight: the fine-tuning loss mixes the final CTC with a CTC of a middle layer's output read by
the same head. Checked against a model cut after that layer, which computes the middle layer's CTC on its own."""
import argparse

import pytest
import torch

import train
from common.errors import UserError
from tests.families import run_args
from tests.wav2vec2.tiny_finetuning import finetune_args
from wav2vec2.data_function import AudioBatch
from wav2vec2.loss_function import ctc_loss
from wav2vec2.model import Wav2Vec2CTC, model_config_from
from wav2vec2 import recipe
from wav2vec2.recipe import compute_loss

VOCAB = 8


def tiny_model(layers: int, layer_norm_first: bool) -> Wav2Vec2CTC:
    config = model_config_from({"conv_feature_layers": "[(16, 10, 5)] + [(16, 3, 2)]", "encoder_layers": layers,
                                "encoder_embed_dim": 16, "encoder_ffn_embed_dim": 32, "encoder_attention_heads": 2,
                                "conv_pos": 4, "conv_pos_groups": 2, "layer_norm_first": layer_norm_first,
                                "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0,
                                "encoder_layerdrop": 0.0, "dropout_input": 0.0, "dropout_features": 0.0})
    return Wav2Vec2CTC(config, VOCAB)


def batch() -> AudioBatch:
    generator = torch.Generator().manual_seed(0)
    source = torch.randn(2, 1600, generator=generator)
    padding_mask = torch.zeros(2, 1600, dtype=torch.bool)
    padding_mask[1, 1200:] = True  # unequal lengths: the padded frames must say blank in both CTCs
    return AudioBatch(source=source, padding_mask=padding_mask, mask_indices=None, negative_indices=None,
                      channel_mask=None, targets=torch.tensor([[4, 5, 6], [7, 4, 1]]),
                      target_lengths=torch.tensor([3, 2]), ids=[0, 1], num_samples=2800)


def loss_of(model, weight: float, layer: int | None = None) -> float:
    args = argparse.Namespace(mode="finetune", intermediate_ctc_weight=weight, intermediate_ctc_layer=layer)
    return compute_loss(model, batch(), args).loss.item()


@pytest.mark.parametrize("layer_norm_first", [False, True])
def test_the_loss_mixes_the_final_ctc_with_the_ctc_of_the_middle_layer(layer_norm_first, monkeypatch):
    monkeypatch.setattr(recipe, "decoding_errors", lambda *args: {})  # validation's WER needs a dictionary
    torch.manual_seed(1)
    model = tiny_model(3, layer_norm_first).train()
    with torch.no_grad():  # confident logits and layers that change their input: the two CTCs differ clearly
        model.w2v_encoder.proj.weight.mul_(30)
        for parameter in model.w2v_encoder.w2v_model.encoder.layers.parameters():
            parameter.normal_(0.0, 0.5)
    # The same weights cut after layer 1: its own final CTC is the full model's CTC at layer 1 (a pre-LN encoder's
    # final LayerNorm included).
    cut = tiny_model(1, layer_norm_first).train()
    cut.load_state_dict({key: value for key, value in model.state_dict().items()
                         if ".layers." not in key or ".layers.0." in key})
    with torch.no_grad():
        final = loss_of(model, 0.0)
        middle = loss_of(cut, 0.0)
        mixed = loss_of(model, 0.3, layer=1)
    assert final != pytest.approx(middle, rel=0.05)  # the two CTCs differ, so the mix is a real test
    assert mixed == pytest.approx(0.7 * final + 0.3 * middle, rel=1e-5)
    # The default layer is the middle one (3 // 2 = 1); validation (eval mode) scores the final CTC alone.
    with torch.no_grad():
        assert loss_of(model, 0.3) == pytest.approx(mixed, rel=1e-6)
        assert loss_of(model.eval(), 0.3) == pytest.approx(loss_of(model, 0.0), rel=1e-6)
    assert not model.w2v_encoder.w2v_model.encoder.layers[0]._forward_hooks  # the hook leaves with the step


def test_the_middle_layers_ctc_trains_the_layers_below_it_and_only_those():
    def gradients(weight: float) -> dict:
        torch.manual_seed(2)
        model = tiny_model(2, False).train()
        args = argparse.Namespace(mode="finetune", intermediate_ctc_weight=weight, intermediate_ctc_layer=1)
        compute_loss(model, batch(), args).loss.backward()
        return {name: parameter.grad for name, parameter in model.named_parameters()}
    alone, mixed = gradients(0.0), gradients(0.4)
    # The top layer only hears the final CTC, now weighed 0.6; the layer below hears the middle one's too.
    top, below = "w2v_encoder.w2v_model.encoder.layers.1.fc1.weight", "w2v_encoder.w2v_model.encoder.layers.0.fc1.weight"
    torch.testing.assert_close(mixed[top], 0.6 * alone[top], rtol=1e-4, atol=1e-6)
    assert not torch.allclose(mixed[below], 0.6 * alone[below], rtol=1e-2, atol=1e-6)


def test_a_layer_the_model_lacks_and_pre_training_are_clear_errors(synthetic_asr_corpus, tmp_path):
    # The tiny fine-tuning model has 2 layers: the second is the final CTC's own.
    with pytest.raises(UserError, match=r"--intermediate-ctc-layer 2: .* layers 1 to 1 of this model"):
        train.main(finetune_args(synthetic_asr_corpus, tmp_path, "--epochs", "1", "--intermediate-ctc-weight",
                                 "0.3", "--intermediate-ctc-layer", "2"))
    with pytest.raises(UserError, match="--intermediate-ctc-weight is a fine-tuning loss"):
        train.main(run_args("wav2vec2", synthetic_asr_corpus, tmp_path / "pretrain", "--epochs", "1",
                            "--intermediate-ctc-weight", "0.3"))
