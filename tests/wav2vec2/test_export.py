"""wav2vec2/export.py through scripts/export_onnx.py: the CTC model as one file (audio and padding mask in, logits and
the frames' padding mask out) with dynamic batch and samples, matching PyTorch on padded batches, and greedy
decoding of its output in numpy giving Recognizer's transcripts."""
import numpy as np
import pytest
import torch

from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.errors import UserError
from common.onnx_export import newest_converted_opset
from scripts import export_onnx
from tests.onnx_files import opset_of, shapes_of
from wav2vec2 import export
from wav2vec2.api import load_ctc_model
from wav2vec2.decoding import collapse_ctc_labels, transcripts
from wav2vec2.dictionary import Dictionary
from wav2vec2.model import Wav2Vec2CTC

onnxruntime = pytest.importorskip("onnxruntime")

ARCHITECTURE = dict(conv_feature_layers="[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", encoder_layers=2,
                    encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2, conv_pos=8,
                    conv_pos_groups=4)
DICTIONARY = Dictionary(["|", "E", "T", "A", "O"])


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wav2vec2_onnx")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Wav2Vec2CTC(ARCHITECTURE, len(DICTIONARY))
    with torch.no_grad():  # a CTC head that says more than blank
        model.w2v_encoder.proj.weight.mul_(10.0)
    save_checkpoint({"model_name": "wav2vec2", "state_dict": model.state_dict(),
                     "model_config": {**ARCHITECTURE, "vocab_size": len(DICTIONARY), "final_dropout": 0.0,
                                      "freeze_finetune_updates": 0},
                     "audio_params": AudioParams(sampling_rate=16000).to_dict(),
                     "text": {"symbols": DICTIONARY.symbols_with_specials}}, folder / "r.pt")
    differences = export_onnx.main(["-m", "wav2vec2", "--checkpoint", str(folder / "r.pt"), "-o", str(folder)])
    model, dictionary = load_ctc_model(folder / "r.pt", torch.device("cpu"))
    return folder, differences, model, dictionary


def test_one_file_with_dynamic_batch_and_samples(exported):
    folder, differences, _, _ = exported
    assert list(differences) == [export.WAV2VEC2_FILE] and differences[export.WAV2VEC2_FILE] < 1e-4
    assert opset_of(folder / export.WAV2VEC2_FILE) == newest_converted_opset() >= 17
    shapes = shapes_of(folder / export.WAV2VEC2_FILE)
    assert shapes["source"] == shapes["padding_mask"] == ["batch", "samples"]
    assert shapes["logits"][0] == "batch" and "samples" in shapes["logits"][1] and shapes["logits"][2] == 9


def test_a_padded_batch_gives_pytorchs_logits_and_transcripts(exported):
    folder, _, model, dictionary = exported
    generator = torch.Generator().manual_seed(5)
    batch = export.padded_batch([5000, 2345, 900], generator)
    session = onnxruntime.InferenceSession(str(folder / export.WAV2VEC2_FILE), providers=["CPUExecutionProvider"])
    logits, frame_padding_mask = session.run(export.OUTPUTS, {name: tensor.numpy() for name, tensor in batch.items()})
    with torch.no_grad():
        expected = model(batch["source"], batch["padding_mask"])
    assert logits.shape == tuple(expected["logits"].shape) and logits.shape[1] == 124  # 5000 samples, stride 40
    assert frame_padding_mask.tolist() == expected["padding_mask"].tolist()
    valid = ~frame_padding_mask
    np.testing.assert_allclose(logits[valid], expected["logits"].numpy()[valid], atol=1e-4, rtol=1e-5)
    texts = export.greedy_transcripts(logits, frame_padding_mask, dictionary)
    assert texts == transcripts(expected["logits"], expected["padding_mask"], dictionary)
    assert any(texts)


def test_collapsing_ctc_labels_merges_repeats_and_drops_blanks():
    assert collapse_ctc_labels(np.array([0, 5, 5, 0, 5, 6, 6, 6, 0, 0, 7])) == [5, 5, 6, 7]
    assert collapse_ctc_labels(np.array([0, 0])) == [] and collapse_ctc_labels(np.array([], dtype=int)) == []


def test_a_pretrained_model_without_a_ctc_head_is_a_user_error(tmp_path):
    from wav2vec2.model import Wav2Vec2Model

    save_checkpoint({"model_name": "wav2vec2", "model_config": ARCHITECTURE,
                     "state_dict": Wav2Vec2Model(ARCHITECTURE).state_dict()}, tmp_path / "p.pt")
    with pytest.raises(UserError, match="without a CTC head"):
        export_onnx.main(["-m", "wav2vec2", "--checkpoint", str(tmp_path / "p.pt"), "-o", str(tmp_path)])
