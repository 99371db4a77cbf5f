"""common/layers.py's convolutions over signals laid out as one-row images: the same numbers as nn.Conv1d and
nn.ConvTranspose1d (to float rounding) for every stride, dilation, group count, padding and bias, in channels-last
memory, with nn.Conv1d's parameters and state dict, through weight norm and in the backward pass."""
import pytest
import torch
from torch import nn

from common.layers import Conv1d, ConvTranspose1d, as_image_rows, from_image_rows, weight_norm


def rows_and_plain(conv: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return from_image_rows(conv(as_image_rows(x))), conv(x)


@pytest.mark.parametrize("stride, dilation, groups, padding, bias", [
    (1, 1, 1, 3, True), (2, 1, 1, 0, False), (1, 3, 1, 9, True), (4, 1, 4, 20, True), (1, 1, 2, "same", False)])
def test_a_convolution_on_image_rows_computes_what_conv1d_does(stride, dilation, groups, padding, bias):
    torch.manual_seed(0)
    conv = Conv1d(8, 12, 7, stride=stride, dilation=dilation, groups=groups, padding=padding, bias=bias)
    x = torch.randn(2, 8, 101)
    rows, plain = rows_and_plain(conv, x)
    torch.testing.assert_close(rows, plain, rtol=1e-5, atol=1e-5)
    assert conv(as_image_rows(x)).is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("stride, kernel, padding, output_padding", [(8, 16, 4, 0), (2, 4, 1, 0), (3, 5, 1, 2)])
def test_a_transposed_convolution_on_image_rows_computes_what_convtranspose1d_does(stride, kernel, padding,
                                                                                   output_padding):
    torch.manual_seed(0)
    conv = ConvTranspose1d(8, 4, kernel, stride, padding=padding, output_padding=output_padding)
    x = torch.randn(2, 8, 33)
    rows, plain = rows_and_plain(conv, x)
    assert rows.shape == plain.shape
    torch.testing.assert_close(rows, plain, rtol=1e-5, atol=1e-5)


def test_image_rows_keep_nn_conv1ds_state_dict_and_weight_norm_and_give_the_same_gradients():
    torch.manual_seed(0)
    plain = weight_norm(nn.Conv1d(6, 6, 5, padding=2))
    ours = weight_norm(Conv1d(6, 6, 5, padding=2))
    assert ours.state_dict().keys() == plain.state_dict().keys()
    ours.load_state_dict(plain.state_dict())
    x = torch.randn(1, 6, 50)
    from_image_rows(ours(as_image_rows(x))).square().sum().backward()
    plain(x).square().sum().backward()
    for ours_parameter, plain_parameter in zip(ours.parameters(), plain.parameters()):
        torch.testing.assert_close(ours_parameter.grad, plain_parameter.grad, rtol=1e-4, atol=1e-4)


def test_image_rows_refuse_what_they_do_not_implement():
    with pytest.raises(ValueError, match="image rows are implemented for zero padding only, not 'reflect'"):
        Conv1d(2, 2, 3, padding=1, padding_mode="reflect")(as_image_rows(torch.randn(1, 2, 9)))
    with pytest.raises(ValueError, match="image rows take no output_size"):
        ConvTranspose1d(2, 2, 4, 2)(as_image_rows(torch.randn(1, 2, 9)), output_size=[18])
