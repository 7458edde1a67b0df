"""``tw.nn.utils.rnn`` (padding, packing, PackedSequence) and RNN, LSTM, GRU on packed input,
against ``torch.nn.utils.rnn`` and ``torch.nn`` with identical float64 inputs and weights:
values, index tensors, final states and every gradient."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
import torch.nn.utils.rnn as torch_rnn
from seq_reference import assert_close, compare_with_torch, host
from tensorweaver.nn.modules import rnn as nn
from tensorweaver.nn.utils import rnn as tw_rnn

rng = np.random.default_rng(0)
INPUT, HIDDEN, LENGTH = 3, 4, 5
UNSORTED = [2, 5, 1, 3]  # distinct lengths: the sorted order does not depend on tie-breaking
SORTED = [5, 3, 3, 1]


def both(array: np.ndarray) -> tuple[tw.Tensor, torch.Tensor]:
    """The same float64 leaf in tw and in torch."""
    return tw.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def assert_same_packed(actual: tw_rnn.PackedSequence, expected: torch_rnn.PackedSequence) -> None:
    assert_close(actual.data, expected.data)
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        mine, theirs = getattr(actual, name), getattr(expected, name)
        assert (mine is None) == (theirs is None), name
        if theirs is not None:
            assert mine.tolist() == theirs.tolist(), name


def assert_grads_match(tw_outs: list, torch_outs: list, tw_leaf, torch_leaf) -> None:
    """Backprop the same random cotangent through both and compare the leaf's gradient."""
    cotangents = [rng.standard_normal(tuple(t.shape)) for t in torch_outs]
    sum(((a * tw.tensor(c)).sum() for a, c in zip(tw_outs, cotangents))).backward()
    sum(((e * torch.tensor(c)).sum() for e, c in zip(torch_outs, cotangents))).backward()
    assert_close(tw_leaf.grad, torch_leaf.grad)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(backend: str, batch_first: bool, padding_side: str) -> None:
    arrays = [rng.standard_normal((n, 2, 3)) for n in UNSORTED]
    pairs = [both(a) for a in arrays]
    kwargs = {"batch_first": batch_first, "padding_value": -2.5, "padding_side": padding_side}
    actual = tw_rnn.pad_sequence([p[0] for p in pairs], **kwargs)
    expected = torch_rnn.pad_sequence([p[1] for p in pairs], **kwargs)
    assert_close(actual, expected)
    cotangent = rng.standard_normal(tuple(expected.shape))
    (actual * tw.tensor(cotangent)).sum().backward()
    (expected * torch.tensor(cotangent)).sum().backward()
    for mine, theirs in pairs:
        assert_close(mine.grad, theirs.grad)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    ("lengths", "enforce_sorted"), [(SORTED, True), (UNSORTED, False), (SORTED, False)]
)
def test_pack_then_pad_round_trip(
    backend: str, batch_first: bool, lengths: list[int], enforce_sorted: bool
) -> None:
    layout = (len(lengths), LENGTH) if batch_first else (LENGTH, len(lengths))
    tw_x, torch_x = both(rng.standard_normal((*layout, 2)))
    kwargs = {"batch_first": batch_first, "enforce_sorted": enforce_sorted}
    packed = tw_rnn.pack_padded_sequence(tw_x, tw.tensor(lengths), **kwargs)
    expected = torch_rnn.pack_padded_sequence(torch_x, torch.tensor(lengths), **kwargs)
    assert_same_packed(packed, expected)
    unpack = {"batch_first": not batch_first, "padding_value": 7.0, "total_length": LENGTH + 2}
    padded, out_lengths = tw_rnn.pad_packed_sequence(packed, **unpack)
    expected_padded, expected_lengths = torch_rnn.pad_packed_sequence(expected, **unpack)
    assert_close(padded, expected_padded)
    assert out_lengths.tolist() == expected_lengths.tolist() == lengths
    assert_grads_match([packed.data, padded], [expected.data, expected_padded], tw_x, torch_x)


def test_pack_sequence_and_unpack(backend: str) -> None:
    arrays = [rng.standard_normal((n, 2)) for n in UNSORTED]
    packed = tw_rnn.pack_sequence([tw.tensor(a) for a in arrays], enforce_sorted=False)
    expected = torch_rnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    assert_same_packed(packed, expected)
    for seq, array in zip(tw_rnn.unpack_sequence(packed), arrays):
        np.testing.assert_array_equal(host(seq), array)
    padded = tw_rnn.pad_sequence([tw.tensor(a) for a in arrays])
    for seq, array in zip(tw_rnn.unpad_sequence(padded, tw.tensor(UNSORTED)), arrays):
        np.testing.assert_array_equal(host(seq), array)


def test_packed_sequence_is_a_named_tuple(backend: str) -> None:
    packed = tw_rnn.pack_sequence([tw.ones(3, 2), tw.ones(1, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert data is packed.data and sorted_indices is None and unsorted_indices is None
    assert batch_sizes.tolist() == [2, 1, 1]
    single = packed.to(tw.float32)
    assert single.data.dtype is tw.float32 and single.batch_sizes is batch_sizes
    assert packed.to(tw.float64) is packed
    shuffled = tw_rnn.PackedSequence(data, batch_sizes, tw.tensor([1, 0]))
    assert shuffled.unsorted_indices.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x: tw_rnn.pack_padded_sequence(x, [2, 3]), RuntimeError, "decreasing"),
        (lambda x: tw_rnn.pack_padded_sequence(x, [3, 0]), RuntimeError, "greater than 0"),
        (lambda x: tw_rnn.pack_padded_sequence(x, [9, 1]), RuntimeError, "exceeds"),
        (lambda x: tw_rnn.pack_padded_sequence(x, [3]), RuntimeError, "one length per"),
        (lambda x: tw_rnn.pad_sequence([x[0], x[..., 0]]), RuntimeError, "trailing"),
        (lambda x: tw_rnn.pad_sequence([x], padding_side="up"), RuntimeError, "padding_side"),
        (
            lambda x: tw_rnn.pad_packed_sequence(
                tw_rnn.pack_padded_sequence(x, [3, 1]), total_length=2
            ),
            ValueError,
            "total_length",
        ),
    ],
)
def test_errors(backend: str, call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call(tw.zeros(3, 2, 4))


def run_packed(module, x, lengths, *state):
    """Pack ``x`` (time-major, unsorted lengths), run ``module`` on it with ``state`` in the
    batch's order, and return the packed output's data, its padded form and the final
    states."""
    utils = torch_rnn if isinstance(module, torch.nn.Module) else tw_rnn
    packed = utils.pack_padded_sequence(x, lengths, enforce_sorted=False)
    hx = None if not state else tuple(state) if len(state) == 2 else state[0]
    out, last = module(packed, hx)
    padded, _ = utils.pad_packed_sequence(out, padding_value=-1.0)
    assert type(out).__name__ == "PackedSequence"
    return out.data, padded, last


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("RNN", {}),
        ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
        ("LSTM", {"num_layers": 2, "bidirectional": True}),
        ("LSTM", {"batch_first": True}),  # batch_first does not change packed input
        ("LSTM", {"proj_size": 2, "bidirectional": True}),
        ("GRU", {"num_layers": 2}),
        ("GRU", {"bidirectional": True, "bias": False}),
    ],
)
def test_layer_on_packed_input(backend: str, name: str, kwargs: dict, with_state: bool) -> None:
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = 2 if name == "LSTM" else 1
    widths = [kwargs.get("proj_size") or HIDDEN, HIDDEN][:states]  # h (projected), c
    state = [rng.standard_normal((count, len(UNSORTED), width)) for width in widths]
    x = rng.standard_normal((LENGTH, len(UNSORTED), INPUT))
    compare_with_torch(
        getattr(nn, name)(INPUT, HIDDEN, **kwargs),
        getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs),
        [x, *(state if with_state else [])],
        call=lambda module, x, *s: run_packed(module, x, UNSORTED, *s),
    )


def test_packed_matches_each_sequence_alone(backend: str) -> None:
    # Without torch: each sequence's packed result is what the layer gives it on its own.
    layer = nn.LSTM(INPUT, HIDDEN, bidirectional=True)
    arrays = [rng.standard_normal((n, INPUT)) for n in UNSORTED]
    out, (h_n, c_n) = layer(tw_rnn.pack_sequence([tw.tensor(a) for a in arrays], False))
    for b, (seq, array) in enumerate(zip(tw_rnn.unpack_sequence(out), arrays)):
        alone, (h, c) = layer(tw.tensor(array))
        assert_close(seq, host(alone))
        assert_close(h_n[:, b], host(h))
        assert_close(c_n[:, b], host(c))


def test_flatten_parameters_is_a_no_op(backend: str) -> None:
    layer = nn.GRU(INPUT, HIDDEN)
    before = {k: host(v) for k, v in layer.state_dict().items()}
    assert layer.flatten_parameters() is None
    for k, v in layer.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])
