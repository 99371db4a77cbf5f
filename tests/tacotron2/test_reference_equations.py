"""Tacotron 2 inference against the reference's computation written out as plain equations over a state dict with
NVIDIA's key names (../shared/reference/tacotron2_waveglow.md §3.1): the same weights and the same prenet keep-masks
must give the same mels, gate-free lengths aside. A loaded published checkpoint goes through exactly this code."""
import torch
import torch.nn.functional as F

from tacotron2.model import build_model

SMALL = dict(symbols_embedding_dim=8, encoder_embedding_dim=8, encoder_n_convolutions=2, attention_rnn_dim=12,
             decoder_rnn_dim=12, prenet_dim=6, attention_dim=5, attention_location_n_filters=3,
             attention_location_kernel_size=3, postnet_embedding_dim=7, postnet_n_convolutions=3, n_mel_channels=4,
             decoder_no_early_stopping=True)


LSTM_CELL_KEYS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def conv_batchnorm(x, sd, prefix):
    x = F.conv1d(x, sd[f"{prefix}.0.conv.weight"], sd[f"{prefix}.0.conv.bias"],
                 padding=sd[f"{prefix}.0.conv.weight"].shape[-1] // 2)
    return F.batch_norm(x, sd[f"{prefix}.1.running_mean"], sd[f"{prefix}.1.running_var"], sd[f"{prefix}.1.weight"],
                        sd[f"{prefix}.1.bias"], training=False, eps=1e-5)


def reference_infer(sd, text, keep_masks, n_steps):
    """One utterance (text (T_in,)), eval mode: every dropout off except the prenet's, driven by keep_masks."""
    x = sd["embedding.weight"][text].T.unsqueeze(0)  # (1, emb, T_in)
    n_convs = len({key.split(".")[2] for key in sd if key.startswith("encoder.convolutions.")})
    for i in range(n_convs):
        x = F.relu(conv_batchnorm(x, sd, f"encoder.convolutions.{i}"))
    x = x[0].T  # (T_in, emb)
    half = sd["encoder.lstm.weight_hh_l0"].shape[1]
    outputs = []
    for suffix, order in (("", range(len(x))), ("_reverse", reversed(range(len(x))))):
        h = c = x.new_zeros(half)
        states = {}
        for t in order:
            h, c = lstm_cell(x[t], h, c, *(sd[f"encoder.lstm.{n}_l0{suffix}"] for n in LSTM_CELL_KEYS))
            states[t] = h
        outputs.append(torch.stack([states[t] for t in range(len(x))]))
    memory = torch.cat(outputs, dim=1)  # (T_in, enc)

    d = "decoder."
    processed_memory = memory @ sd[d + "attention_layer.memory_layer.linear_layer.weight"].T
    att_dim = sd[d + "attention_rnn.weight_hh"].shape[1]
    dec_dim = sd[d + "decoder_rnn.weight_hh"].shape[1]
    h_att = c_att = memory.new_zeros(att_dim)
    h_dec = c_dec = memory.new_zeros(dec_dim)
    weights = cumulative = memory.new_zeros(len(text))
    context = memory.new_zeros(memory.shape[1])
    frame = memory.new_zeros(sd[d + "linear_projection.linear_layer.bias"].shape[0])
    frames = []
    location_kernel = sd[d + "attention_layer.location_layer.location_conv.conv.weight"]
    for step in range(n_steps):
        p = frame
        for layer in range(2):
            p = F.relu(p @ sd[f"{d}prenet.layers.{layer}.linear_layer.weight"].T) * keep_masks[step, layer] * 2.0
        h_att, c_att = lstm_cell(torch.cat([p, context]), h_att, c_att,
                                 *(sd[f"{d}attention_rnn.{n}"] for n in LSTM_CELL_KEYS))
        location = F.conv1d(torch.stack([weights, cumulative]).unsqueeze(0), location_kernel,
                            padding=location_kernel.shape[-1] // 2)[0].T  # (T_in, filters)
        energies = torch.tanh(h_att @ sd[d + "attention_layer.query_layer.linear_layer.weight"].T
                              + location @ sd[d + "attention_layer.location_layer.location_dense.linear_layer.weight"].T
                              + processed_memory) @ sd[d + "attention_layer.v.linear_layer.weight"][0]
        weights = torch.softmax(energies, dim=0)
        cumulative = cumulative + weights
        context = weights @ memory
        h_dec, c_dec = lstm_cell(torch.cat([h_att, context]), h_dec, c_dec,
                                 *(sd[f"{d}decoder_rnn.{n}"] for n in LSTM_CELL_KEYS))
        out = torch.cat([h_dec, context])
        frame = out @ sd[d + "linear_projection.linear_layer.weight"].T + sd[d + "linear_projection.linear_layer.bias"]
        frames.append(frame)
    mel = torch.stack(frames, dim=1).unsqueeze(0)  # (1, n_mel, steps)

    y = mel
    n_post = len({key.split(".")[2] for key in sd if key.startswith("postnet.convolutions.")})
    for i in range(n_post):
        y = conv_batchnorm(y, sd, f"postnet.convolutions.{i}")
        y = torch.tanh(y) if i < n_post - 1 else y
    return (mel + y)[0]


def test_inference_equals_the_reference_equations_for_the_same_weights_and_prenet_masks():
    torch.manual_seed(0)
    model = build_model(SMALL).double().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics, as a trained checkpoint has
        for name, buffer in model.named_buffers():
            if name.endswith("running_mean"):
                buffer.normal_(0, 0.3)
            elif name.endswith("running_var"):
                buffer.uniform_(0.5, 1.5)
    state_dict = {key: value for key, value in model.state_dict().items()}
    text = torch.tensor([12, 40, 55, 11, 60, 44, 2])
    n_steps = 9
    keep_masks = torch.rand(n_steps, 2, 1, 6, generator=torch.Generator().manual_seed(1)) >= 0.5

    ours = model.infer(text.unsqueeze(0), torch.tensor([len(text)]), max_decoder_steps=n_steps,
                       prenet_masks=keep_masks)
    reference = reference_infer({k: v.double() for k, v in state_dict.items()}, text,
                                keep_masks[:, :, 0].double(), n_steps)
    assert ours.mel.shape == (1, 4, n_steps)
    torch.testing.assert_close(ours.mel[0], reference, rtol=1e-9, atol=1e-9)
