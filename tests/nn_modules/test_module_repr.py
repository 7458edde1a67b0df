"""``repr(module)`` equals PyTorch's for every layer class both ``tensorweaver.nn`` and
``torch.nn`` have, built with the same arguments, and for nested containers, collapsed
repeats and custom ``extra_repr``."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch

# torch's Transformer warns that it cannot use nested tensors: noise here.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

# Each builder takes the nn namespace (``torch.nn`` or ``tensorweaver.nn``).
LAYERS: dict[str, Callable[[Any], Any]] = {
    "AdaptiveLogSoftmaxWithLoss": lambda nn: nn.AdaptiveLogSoftmaxWithLoss(
        8, 10, [3, 6], div_value=2.0
    ),
    "AdaptiveAvgPool1d": lambda nn: nn.AdaptiveAvgPool1d(5),
    "AdaptiveAvgPool2d": lambda nn: nn.AdaptiveAvgPool2d((5, 7)),
    "AvgPool1d": lambda nn: nn.AvgPool1d(3, stride=2),
    "AvgPool2d": lambda nn: nn.AvgPool2d(3, stride=2, padding=1),
    "BCELoss": lambda nn: nn.BCELoss(),
    "BCEWithLogitsLoss": lambda nn: nn.BCEWithLogitsLoss(),
    "BatchNorm1d": lambda nn: nn.BatchNorm1d(16),
    "BatchNorm1d_nostats": lambda nn: nn.BatchNorm1d(4, track_running_stats=False),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(8, eps=1e-3, momentum=0.2, affine=False),
    "Bilinear": lambda nn: nn.Bilinear(4, 5, 6),
    "CELU": lambda nn: nn.CELU(alpha=2.0),
    "Conv1d": lambda nn: nn.Conv1d(3, 8, 5, padding=2),
    "Conv2d": lambda nn: nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
    "Conv2d_dil": lambda nn: nn.Conv2d(4, 8, (3, 5), dilation=2, groups=2),
    "Conv2d_same": lambda nn: nn.Conv2d(2, 2, 3, padding="same", padding_mode="reflect"),
    "Conv1d_circular": lambda nn: nn.Conv1d(2, 2, 3, padding=1, padding_mode="circular"),
    "ConvTranspose1d": lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
    "CrossEntropyLoss": lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1),
    "Dropout": lambda nn: nn.Dropout(0.3),
    "Dropout1d": lambda nn: nn.Dropout1d(),
    "Dropout2d": lambda nn: nn.Dropout2d(0.2),
    "ELU": lambda nn: nn.ELU(),
    "ELU_alpha": lambda nn: nn.ELU(alpha=0.5, inplace=True),
    "Embedding": lambda nn: nn.Embedding(10, 3, padding_idx=0),
    "Embedding_plain": lambda nn: nn.Embedding(100, 16),
    "Embedding_norm": lambda nn: nn.Embedding(5, 2, max_norm=1.0, scale_grad_by_freq=True),
    "Flatten": lambda nn: nn.Flatten(),
    "Flatten_dims": lambda nn: nn.Flatten(0, 2),
    "GELU": lambda nn: nn.GELU(approximate="tanh"),
    "GELU_plain": lambda nn: nn.GELU(),
    "GLU": lambda nn: nn.GLU(),
    "GRU": lambda nn: nn.GRU(10, 20, num_layers=2, batch_first=True),
    "GRUCell": lambda nn: nn.GRUCell(10, 20),
    "GRU_all": lambda nn: nn.GRU(
        3, 4, 2, bias=False, batch_first=True, dropout=0.5, bidirectional=True
    ),
    "GroupNorm": lambda nn: nn.GroupNorm(2, 8),
    "Hardsigmoid": lambda nn: nn.Hardsigmoid(),
    "Hardswish": lambda nn: nn.Hardswish(),
    "Hardtanh": lambda nn: nn.Hardtanh(-2.0, 2.0),
    "HuberLoss": lambda nn: nn.HuberLoss(delta=0.5),
    "Identity": lambda nn: nn.Identity(),
    "KLDivLoss": lambda nn: nn.KLDivLoss(reduction="batchmean"),
    "L1Loss": lambda nn: nn.L1Loss(),
    "LSTM": lambda nn: nn.LSTM(10, 20, num_layers=2, dropout=0.1, bidirectional=True),
    "LSTM_plain": lambda nn: nn.LSTM(8, 16),
    "LSTMCell": lambda nn: nn.LSTMCell(10, 20),
    "LayerNorm": lambda nn: nn.LayerNorm(16),
    "LayerNorm_2d": lambda nn: nn.LayerNorm([4, 5], elementwise_affine=False),
    "LeakyReLU": lambda nn: nn.LeakyReLU(),
    "LeakyReLU_inplace": lambda nn: nn.LeakyReLU(0.2, inplace=True),
    "Linear": lambda nn: nn.Linear(4, 3),
    "Linear_nobias": lambda nn: nn.Linear(4, 3, bias=False),
    "LogSigmoid": lambda nn: nn.LogSigmoid(),
    "LogSoftmax": lambda nn: nn.LogSoftmax(dim=1),
    "MSELoss": lambda nn: nn.MSELoss(reduction="sum"),
    "MaxPool1d": lambda nn: nn.MaxPool1d(2),
    "MaxPool2d": lambda nn: nn.MaxPool2d(3, stride=2, padding=1),
    "MaxPool2d_ceil": lambda nn: nn.MaxPool2d((2, 3), dilation=2, ceil_mode=True),
    "AvgPool2d_opts": lambda nn: nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False),
    "Mish": lambda nn: nn.Mish(),
    "Module": lambda nn: nn.Module(),
    "ModuleDict": lambda nn: nn.ModuleDict({"act": nn.ReLU(), "proj": nn.Linear(2, 2)}),
    "ModuleList": lambda nn: nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(16, 4),
    "MultiheadAttention_kdim": lambda nn: nn.MultiheadAttention(16, 4, kdim=8, vdim=8),
    "NLLLoss": lambda nn: nn.NLLLoss(),
    "NLLLoss2d": lambda nn: nn.NLLLoss2d(),
    "LinearCrossEntropyLoss": lambda nn: nn.LinearCrossEntropyLoss(
        3, 5, bias=True, out_features=(2,)
    ),
    "PReLU": lambda nn: nn.PReLU(),
    "PReLU_channels": lambda nn: nn.PReLU(3, init=0.1),
    "ParameterDict": lambda nn: nn.ParameterDict({"a": nn.Parameter(tensor_of(nn)([1.0, 2.0]))}),
    "ParameterList": lambda nn: nn.ParameterList([nn.Parameter(tensor_of(nn)([[1.0, 2.0]]))]),
    "RMSNorm": lambda nn: nn.RMSNorm(8, eps=1e-6),
    "RMSNorm_plain": lambda nn: nn.RMSNorm([4]),
    "RNN": lambda nn: nn.RNN(10, 20, nonlinearity="relu", bias=False),
    "RNN_plain": lambda nn: nn.RNN(3, 4),
    "RNNCell": lambda nn: nn.RNNCell(10, 20),
    "RNNCellBase": lambda nn: nn.RNNCellBase(10, 20, False, 3),
    "RNNCell_relu": lambda nn: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
    "ReLU": lambda nn: nn.ReLU(),
    "ReLU_inplace": lambda nn: nn.ReLU(inplace=True),
    "ReLU6": lambda nn: nn.ReLU6(),
    "SELU": lambda nn: nn.SELU(),
    "Sequential": lambda nn: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
    "SiLU": lambda nn: nn.SiLU(),
    "Sigmoid": lambda nn: nn.Sigmoid(),
    "SmoothL1Loss": lambda nn: nn.SmoothL1Loss(beta=0.5),
    "Softmax": lambda nn: nn.Softmax(dim=1),
    "Softmin": lambda nn: nn.Softmin(dim=-1),
    "Softplus": lambda nn: nn.Softplus(beta=2.0, threshold=10.0),
    "Softsign": lambda nn: nn.Softsign(),
    "Tanh": lambda nn: nn.Tanh(),
    "Transformer": lambda nn: nn.Transformer(
        d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32
    ),
    "TransformerDecoder": lambda nn: nn.TransformerDecoder(
        nn.TransformerDecoderLayer(16, 2, dim_feedforward=32), num_layers=2
    ),
    "TransformerDecoderLayer": lambda nn: nn.TransformerDecoderLayer(16, 2, 32, norm_first=True),
    "TransformerEncoder": lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True), num_layers=3
    ),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=64, dropout=0.0, activation="gelu"
    ),
    "Unflatten": lambda nn: nn.Unflatten(1, (2, 5)),
    # convolution in 1-3 dimensions, lazy layers, resampling (issue 15)
    "Conv3d": lambda nn: nn.Conv3d(4, 6, (1, 2, 3), stride=2, groups=2, padding_mode="replicate"),
    "ConvTranspose3d": lambda nn: nn.ConvTranspose3d(4, 2, 3, stride=2, output_padding=1),
    "LazyLinear": lambda nn: nn.LazyLinear(3),
    "LazyConv1d": lambda nn: nn.LazyConv1d(4, 3, padding=1),
    "LazyConv2d": lambda nn: nn.LazyConv2d(4, 3, bias=False),
    "LazyConv3d": lambda nn: nn.LazyConv3d(4, 3, dilation=2),
    "LazyConvTranspose1d": lambda nn: nn.LazyConvTranspose1d(4, 3, stride=2),
    "LazyConvTranspose2d": lambda nn: nn.LazyConvTranspose2d(4, 3, groups=2),
    "LazyConvTranspose3d": lambda nn: nn.LazyConvTranspose3d(4, 3, output_padding=1, stride=2),
    "LazyBatchNorm1d": lambda nn: nn.LazyBatchNorm1d(),
    "LazyBatchNorm2d": lambda nn: nn.LazyBatchNorm2d(eps=1e-3, affine=False),
    "LazyBatchNorm3d": lambda nn: nn.LazyBatchNorm3d(momentum=None, track_running_stats=False),
    "LazyInstanceNorm1d": lambda nn: nn.LazyInstanceNorm1d(),
    "LazyInstanceNorm2d": lambda nn: nn.LazyInstanceNorm2d(affine=False),
    "LazyInstanceNorm3d": lambda nn: nn.LazyInstanceNorm3d(bias=False),
    "Fold": lambda nn: nn.Fold((4, 5), 2, stride=2),
    "Unfold": lambda nn: nn.Unfold(3, padding=1),
    "PixelShuffle": lambda nn: nn.PixelShuffle(3),
    "PixelUnshuffle": lambda nn: nn.PixelUnshuffle(2),
    "ChannelShuffle": lambda nn: nn.ChannelShuffle(4),
    "Upsample": lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
    "Upsample_size": lambda nn: nn.Upsample(size=(3, 4)),
    "UpsamplingNearest2d": lambda nn: nn.UpsamplingNearest2d(size=5),
    "UpsamplingBilinear2d": lambda nn: nn.UpsamplingBilinear2d(scale_factor=1.5),
    # losses, distances, bags (issue 15)
    "CTCLoss": lambda nn: nn.CTCLoss(blank=1, zero_infinity=True),
    "MarginRankingLoss": lambda nn: nn.MarginRankingLoss(margin=0.5),
    "HingeEmbeddingLoss": lambda nn: nn.HingeEmbeddingLoss(),
    "MultiMarginLoss": lambda nn: nn.MultiMarginLoss(p=2),
    "MultiLabelMarginLoss": lambda nn: nn.MultiLabelMarginLoss(),
    "MultiLabelSoftMarginLoss": lambda nn: nn.MultiLabelSoftMarginLoss(),
    "SoftMarginLoss": lambda nn: nn.SoftMarginLoss(),
    "TripletMarginLoss": lambda nn: nn.TripletMarginLoss(swap=True),
    "TripletMarginWithDistanceLoss": lambda nn: nn.TripletMarginWithDistanceLoss(),
    "PoissonNLLLoss": lambda nn: nn.PoissonNLLLoss(full=True),
    "GaussianNLLLoss": lambda nn: nn.GaussianNLLLoss(),
    "CosineEmbeddingLoss": lambda nn: nn.CosineEmbeddingLoss(),
    "CosineSimilarity": lambda nn: nn.CosineSimilarity(dim=0),
    "PairwiseDistance": lambda nn: nn.PairwiseDistance(p=1.0),
    "EmbeddingBag": lambda nn: nn.EmbeddingBag(10, 3, mode="max", padding_idx=0, max_norm=1.0),
}

# Classes both namespaces export that cannot be built alone (abstract bases).
NOT_BUILDABLE = {"RNNBase"}


def tensor_of(nn: Any) -> Callable[..., Any]:
    return torch.tensor if nn is torch.nn else tw.tensor


class _Block:
    """A custom module, written once for each namespace, with its own ``extra_repr``."""

    @staticmethod
    def build(nn: Any) -> Any:
        class Block(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.scale = 2.5
                self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
                self.heads = nn.ModuleDict({"cls": nn.Linear(8, 10), "box": nn.Linear(8, 4)})

            def extra_repr(self) -> str:
                return f"scale={self.scale}"

        return Block()


def _multiline(nn: Any) -> Any:
    """A leaf module whose ``extra_repr`` spans lines, inside a container."""

    class Table(nn.Module):
        def extra_repr(self) -> str:
            return "rows=2\ncols=3"

    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = Table()

        def extra_repr(self) -> str:
            return "mode=fast"

    return nn.ModuleList([Holder(), Table(), nn.Identity()])


NESTED: dict[str, Callable[[Any], Any]] = {
    "multiline_extra_repr": _multiline,
    "repeats_collapse": lambda nn: nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)], nn.ReLU()),
    "repeats_mixed": lambda nn: nn.ModuleList(
        [nn.ReLU(), nn.ReLU(), nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 3), nn.ReLU()]
    ),
    "named_sequential": lambda nn: nn.Sequential(
        __import__("collections").OrderedDict(
            [("conv", nn.Conv2d(1, 4, 3)), ("act", nn.LeakyReLU(0.1)), ("flat", nn.Flatten())]
        )
    ),
    "nested": lambda nn: nn.Sequential(
        nn.Sequential(nn.Linear(2, 3), nn.Tanh()), nn.ModuleList([nn.Dropout(0.5)])
    ),
    "custom_extra_repr": _Block.build,
    "empty_sequential": lambda nn: nn.Sequential(),
    "cnn": lambda nn: nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.25),
        nn.Linear(64, 10),
        nn.LogSoftmax(dim=1),
    ),
}


def as_tensorweaver(text: str) -> str:
    """PyTorch's text with tw's names: objects tw defines (dtypes) print ``tensorweaver.``,
    ``Tensor.type()`` names (``torch.FloatTensor``) stay PyTorch's."""
    return re.sub(r"torch\.(?!\w*Tensor\b)", "tensorweaver.", text)


def _reprs(build: Callable[[Any], Any]) -> tuple[str, str]:
    torch.manual_seed(0)
    return repr(build(tw.nn)), as_tensorweaver(repr(build(torch.nn)))


def test_every_shared_layer_has_a_case() -> None:
    shared = {
        name
        for name in dir(torch.nn)
        if inspect.isclass(getattr(torch.nn, name))
        and issubclass(getattr(torch.nn, name), torch.nn.Module)
        and inspect.isclass(getattr(tw.nn, name, None))
    }
    from test_layer_repr_nd import LAYERS as LAYERS_ND  # the issue-15 layers' own table

    covered = {name.split("_")[0] for name in (*LAYERS, *LAYERS_ND)} | NOT_BUILDABLE
    assert shared - covered == set()


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_repr_matches_torch(name: str) -> None:
    ours, theirs = _reprs(LAYERS[name])
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_repr_matches_torch(name: str) -> None:
    ours, theirs = _reprs(NESTED[name])
    assert ours == theirs
