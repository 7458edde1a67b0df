"""Named regression tests for the defects the recurrent sweep found (test_sweep_recurrent*.py),
each against PyTorch 2.13 on the same call: exception classes and messages' gist, dtypes,
gradients and the attributes PyTorch's users read."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import assert_close, host

rng = np.random.default_rng(0)
X = rng.standard_normal((5, 3, 4)).astype(np.float32)  # (L, N, H_in)
H = np.zeros((1, 3, 6), np.float32)  # (layers * directions, N, hidden)


def outcome(call: Callable[[Any], Any], m: Any) -> Any:
    try:
        return call(m)
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        return e


def raises_like_torch(call: Callable[[Any], Any], gist: str) -> None:
    """``call(torch)`` and ``call(tw)`` raise the same class; ours names ``gist``."""
    theirs, ours = outcome(call, torch), outcome(call, tw)
    assert isinstance(theirs, Exception), f"PyTorch returned {theirs!r}"
    assert type(ours) is type(theirs), f"ours {ours!r}, PyTorch {theirs!r}"
    assert gist.lower() in str(ours).lower(), f"{ours!r} does not say {gist!r}"


def layer(m: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    torch.manual_seed(0)
    return getattr(m.nn, name)(*args, **kwargs)


def t(m: Any, a: np.ndarray) -> Any:
    return m.tensor(a)


def state(m: Any, name: str, *arrays: np.ndarray) -> Any:
    tensors = tuple(t(m, a) for a in arrays)
    return tensors if name.startswith("LSTM") else tensors[0]


# ------------------------------------------------------------ exception classes of layers


def run(m: Any, n: str, x: np.ndarray, *hx: np.ndarray, size: int = 4, **kwargs: Any) -> Any:
    """Layer (or cell) ``n`` of library ``m`` on ``x`` and the states ``hx``, if any."""
    return layer(m, n, size, 6, **kwargs)(t(m, x), *((state(m, n, *hx),) if hx else ()))


def run_packed(m: Any, n: str, x: np.ndarray, *hx: np.ndarray, size: int = 4) -> Any:
    packed = m.nn.utils.rnn.pack_padded_sequence(t(m, x), [5, 3, 2])
    return layer(m, n, size, 6)(packed, *((state(m, n, *hx),) if hx else ()))


X64 = X.astype(np.float64)
LAYER_ERRORS = [  # (id, call(m, name), gist): ValueError before the fix, PyTorch's class now
    ("input_size", lambda m, n: run(m, n, X, size=5), "input_size"),
    ("empty_sequence", lambda m, n: run(m, n, X[:0]), "sequence length"),
    ("empty_unbatched", lambda m, n: run(m, n, X[:0, 0]), "sequence length"),
    ("hx_batch", lambda m, n: run(m, n, X, H[:, :2], H), "size"),
    ("hx_width", lambda m, n: run(m, n, X, H[..., :2], H), "size"),
    ("hx_count", lambda m, n: run(m, n, X, H, H, bidirectional=True), "size"),
    ("hx_batch_first", lambda m, n: run(m, n, X, H, H, batch_first=True), "size"),
    ("hx_2d_batched", lambda m, n: run(m, n, X, H[0], H[0]), "3-D"),
    ("hx_3d_unbatched", lambda m, n: run(m, n, X[:, 0], H, H), "2-D"),
    ("hx_unbatched_width", lambda m, n: run(m, n, X[:, 0], H[:, 0, :3], H[:, 0]), "size"),
    ("input_dtype", lambda m, n: run(m, n, X64), "dtype"),
    ("input_int", lambda m, n: run(m, n, X.astype(np.int64)), "dtype"),
    ("packed_input_size", lambda m, n: run_packed(m, n, X, H, H, size=5), ""),
    ("packed_hx_batch", lambda m, n: run_packed(m, n, X, H[:, :2], H[:, :2]), ""),
    ("packed_dtype", lambda m, n: run_packed(m, n, X64), "dtype"),
    ("packed_dtype_with_hx", lambda m, n: run_packed(m, n, X64, H, H), "dtype"),
]


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize(("case", "call", "gist"), LAYER_ERRORS, ids=[c[0] for c in LAYER_ERRORS])
def test_layer_errors_have_torch_classes(name: str, case: str, call: Any, gist: str) -> None:
    raises_like_torch(lambda m: call(m, name), gist)


def test_lstm_hx_of_one_or_three_tensors() -> None:
    raises_like_torch(lambda m: layer(m, "LSTM", 4, 6)(t(m, X), (t(m, H),)), "hx")
    raises_like_torch(lambda m: layer(m, "LSTM", 4, 6)(t(m, X), (t(m, H),) * 3), "two hidden")


# ------------------------------------------------------------- exception classes of cells

CELL_ERRORS = [
    ("input_size", lambda m, n: run(m, n, X[0], size=5), "input_size"),
    ("hx_batch", lambda m, n: run(m, n, X[0], H[0, :2], H[0, :2]), "batch size"),
    ("hx_width", lambda m, n: run(m, n, X[0], H[0, :, :2], H[0, :, :2]), "hidden_size"),
    ("hx_1d_batched", lambda m, n: run(m, n, X[0], H[0, 0], H[0, 0]), "hidden0"),
    ("hx_2d_unbatched", lambda m, n: run(m, n, X[0, 0], H[0], H[0]), "hidden0"),
    ("hx_unbatched_width", lambda m, n: run(m, n, X[0, 0], H[0, 0, :2], H[0, 0, :2]), "hidden"),
    ("hx_3d", lambda m, n: run(m, n, X[0], H, H), "1D or 2D"),
]


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize(("case", "call", "gist"), CELL_ERRORS, ids=[c[0] for c in CELL_ERRORS])
def test_cell_errors_have_torch_classes(name: str, case: str, call: Any, gist: str) -> None:
    raises_like_torch(lambda m: call(m, name), gist)


def test_lstm_cell_hx_must_be_two_tensors() -> None:
    """A tensor ``hx`` was taken apart along its first axis; one or three tensors raised
    ValueError from unpacking."""
    cell = lambda m: layer(m, "LSTMCell", 4, 6)  # noqa: E731
    raises_like_torch(lambda m: cell(m)(t(m, X[0]), t(m, np.zeros((2, 3, 6), np.float32))), "tuple")
    raises_like_torch(lambda m: cell(m)(t(m, X[0]), (t(m, H[0]),)), "two hidden states")
    raises_like_torch(lambda m: cell(m)(t(m, X[0]), (t(m, H[0]),) * 3), "two hidden states")


def test_rnn_cell_unknown_nonlinearity_raises_when_run() -> None:
    """PyTorch builds the cell (and prints it) and raises RuntimeError when it runs."""
    ours = tw.nn.RNNCell(4, 6, nonlinearity="sigmoid")
    assert repr(ours) == repr(torch.nn.RNNCell(4, 6, nonlinearity="sigmoid"))
    raises_like_torch(
        lambda m: m.nn.RNNCell(4, 6, nonlinearity="sigmoid")(t(m, X[0])), "nonlinearity"
    )


# ------------------------------------------------------------------ constructor arguments

CONSTRUCTOR_ERRORS = [  # (args, kwargs, gist): accepted, or ValueError, before the fix
    ((4, 6), {"bias": 1}, "bias"),
    ((4, 6), {"batch_first": 1}, "batch_first"),
    ((4.0, 6), {}, "input_size"),
    ((0, 6), {}, "input_size"),
    ((4, 6.0), {}, "hidden_size"),
    ((4, 6), {"num_layers": 2.0}, ""),
]


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize(("args", "kwargs", "gist"), CONSTRUCTOR_ERRORS)
def test_constructor_argument_checks(name: str, args: tuple, kwargs: dict, gist: str) -> None:
    raises_like_torch(lambda m: layer(m, name, *args, **kwargs), gist)


@pytest.mark.parametrize("name", ["RNN", "GRU"])
def test_explicit_proj_size_zero_is_refused(name: str) -> None:
    raises_like_torch(lambda m: layer(m, name, 4, 6, proj_size=0), "only supported for LSTM")


# ------------------------------------------------------------------- PyTorch's bookkeeping


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_layers": 2, "bidirectional": True},
        {"proj_size": 2, "bias": False, "bidirectional": True},
    ],
)
def test_flat_weights_bookkeeping(kwargs: dict) -> None:
    """``_flat_weights`` was a method, ``_flat_weights_names`` and ``_all_weights`` missing."""
    theirs, ours = torch.nn.LSTM(4, 6, **kwargs), tw.nn.LSTM(4, 6, **kwargs)
    assert ours._flat_weights_names == theirs._flat_weights_names
    assert ours._all_weights == theirs._all_weights
    assert isinstance(ours._flat_weights, list)
    names = dict(ours.named_parameters())
    assert [id(w) for w in ours._flat_weights] == [id(names[n]) for n in ours._flat_weights_names]
    replaced = tw.nn.Parameter(tw.zeros(24, 4))
    ours.weight_ih_l0 = replaced  # PyTorch's list follows assignments too
    assert ours._flat_weights[0] is replaced
    assert ours.all_weights[0][0] is replaced


# ------------------------------------------------------------------------------- packing


def test_pad_sequence_keeps_an_empty_sequence_in_the_graph() -> None:
    """A 1-D zero-length sequence got no gradient (tw.cat skipped it); PyTorch gives it an
    empty one."""
    grads = []
    for m in (torch, tw):
        empty = m.zeros(0, requires_grad=True)
        full = m.tensor(X[:, 0, 0], requires_grad=True)
        padded = m.nn.utils.rnn.pad_sequence([empty, full], padding_value=2.0)
        (padded * m.tensor(np.arange(10.0, dtype=np.float32).reshape(5, 2))).sum().backward()
        grads.append((empty.grad, full.grad, padded))
    (t_empty, t_full, t_padded), (o_empty, o_full, o_padded) = grads
    assert o_empty is not None
    for ours, theirs in ((o_empty, t_empty), (o_full, t_full), (o_padded, t_padded)):
        assert_close(ours, theirs)


def test_pad_sequence_takes_the_first_sequence_dtype() -> None:
    """Mixed dtypes were promoted; PyTorch pads into the first sequence's dtype."""
    for first, second in ((np.float32, np.float64), (np.int64, np.float32)):
        out = []
        for m in (torch, tw):
            seqs = [m.tensor(X[:2, 0].astype(first)), m.tensor(X[:, 1].astype(second))]
            out.append(m.nn.utils.rnn.pad_sequence(seqs, padding_value=1.7))
        assert str(out[1].dtype).split(".")[-1] == str(out[0].dtype).split(".")[-1]
        np.testing.assert_array_equal(host(out[1]), host(out[0]))


def test_pack_padded_sequence_lengths_and_input_errors() -> None:
    pack = lambda m, *a, **k: m.nn.utils.rnn.pack_padded_sequence(*a, **k)  # noqa: E731
    raises_like_torch(lambda m: pack(m, t(m, X), m.tensor([[5, 3, 2]])), "1-D")
    raises_like_torch(lambda m: pack(m, t(m, X[:, 0, 0]), [5]), "dimension")
    # more lengths than columns: index_select's classes (IndexError in dim 0, else RuntimeError)
    lengths = [5, 3, 2, 1]
    raises_like_torch(lambda m: pack(m, t(m, X), lengths, enforce_sorted=False), "4 lengths")
    x = X.transpose(1, 0, 2).copy()
    raises_like_torch(
        lambda m: pack(m, t(m, x), lengths, batch_first=True, enforce_sorted=False), "4 lengths"
    )


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_unsorted_with_fewer_lengths_packs_those_columns(batch_first: bool) -> None:
    """PyTorch selects the columns in sorted order first, so two lengths for three columns
    pack columns 0 and 1 (ours raised)."""
    x = X.transpose(1, 0, 2).copy() if batch_first else X
    packed = [
        m.nn.utils.rnn.pack_padded_sequence(
            t(m, x), [3, 5], batch_first=batch_first, enforce_sorted=False
        )
        for m in (torch, tw)
    ]
    for theirs, ours in zip(*packed):
        assert_close(ours, theirs)
