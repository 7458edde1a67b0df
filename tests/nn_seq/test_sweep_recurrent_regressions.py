"""Named regression tests for the defects the recurrent sweep found (test_sweep_recurrent*.py),
each against PyTorch 2.13 on the same call: exception classes and messages' gist, dtypes,
gradients and the attributes PyTorch's users read."""

from __future__ import annotations

import fractions
import io
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


def test_flat_weights_takes_an_assigned_list_as_torch() -> None:
    """Code written for PyTorch assigns ``_flat_weights`` (adapters, custom layers); ours was
    a read-only property (AttributeError), and ``_init_flat_weights`` missing. The list runs
    until a weight is assigned, ``_init_flat_weights()`` or a conversion, as PyTorch's."""
    theirs = layer(torch, "GRU", 4, 6).double()
    ours = tw.nn.GRU(4, 6, dtype=tw.float64)
    ours.load_state_dict({k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()})
    outs: dict[Any, list[Any]] = {torch: [], tw: []}
    for m, module in ((torch, theirs), (tw, ours)):
        x = t(m, X.astype(np.float64))
        adapted = module.weight_hh_l0 * 0.5  # a LoRA-like adapted weight, not a Parameter
        module._flat_weights = [adapted if n == "weight_hh_l0" else getattr(module, n)
                                for n in module._flat_weights_names]  # fmt: skip
        outs[m].append(module(x)[0])
        module.weight_ih_l0 = m.nn.Parameter(module.weight_ih_l0.detach() * 2)  # list ends
        outs[m].append(module(x)[0])
        module._flat_weights = [w * 0.5 for w in module._flat_weights]
        module._flat_weights = list(module._flat_weights)  # the same list again
        outs[m].append(module(x)[0])
        module._init_flat_weights()  # PyTorch's, called by its subclasses and tools
        outs[m].append(module(x)[0])
        module._flat_weights = [w * 0.5 for w in module._flat_weights]
        module.double()  # reads the weights afresh
        outs[m].append(module(x)[0])
    for ours_out, theirs_out in zip(outs[tw], outs[torch]):
        assert_close(ours_out, theirs_out)
    assert not np.allclose(host(outs[tw][2]), host(outs[tw][3]))  # the list did change things


def test_layer_saved_whole_before_the_bookkeeping_still_runs() -> None:
    """``tw.save(model)`` files written before ``_flat_weights_names``/``_all_weights``
    existed came back without them (tw.load runs no ``__setstate__``), and every forward
    raised AttributeError; PyTorch's ``__setstate__`` names old layers' weights too."""
    theirs = layer(torch, "LSTM", 4, 6, num_layers=2, bidirectional=True).double()
    ours = tw.nn.LSTM(4, 6, num_layers=2, bidirectional=True, dtype=tw.float64)
    ours.load_state_dict({k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()})
    for name in ("_flat_weights_names", "_all_weights"):  # the layout saved before
        del ours.__dict__[name]
    buffer = io.BytesIO()
    tw.save(ours, buffer)
    buffer.seek(0)
    loaded = tw.load(buffer, weights_only=False)
    assert loaded._all_weights == theirs._all_weights
    assert loaded._flat_weights_names == theirs._flat_weights_names
    x = X.astype(np.float64)
    assert_close(loaded(t(tw, x))[0], theirs(t(torch, x))[0])


def test_a_deleted_weight_is_named_when_the_layer_runs() -> None:
    """After ``del lstm.weight_hh_l0`` a forward said "no attribute '_flat_weights'" (the
    property's error, swallowed); PyTorch runs on the deleted tensor, gone here: the error
    names the weight."""
    ours = tw.nn.LSTM(4, 6)
    del ours.weight_hh_l0
    assert ours._flat_weights[1] is None  # as PyTorch's list after it is read afresh
    with pytest.raises(RuntimeError, match="LSTM: weight 'weight_hh_l0' is None or was deleted"):
        ours(t(tw, X))


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_padded_sequence_refuses_lengths_torch_cannot_read(enforce_sorted: bool) -> None:
    """A generator was read up by the rank check ("got 0 lengths", RuntimeError); a str, set
    or dict was read as lengths; 2-D unsorted lengths raised RuntimeError. PyTorch raises
    TypeError for the first ones and index_select's IndexError for the last."""

    def pack(m: Any, lengths: Any) -> Any:
        return m.nn.utils.rnn.pack_padded_sequence(t(m, X), lengths, enforce_sorted=enforce_sorted)

    raises_like_torch(lambda m: pack(m, (n for n in (5, 3, 2))), "lengths")
    for lengths in ("532", {5, 3, 2}, {5: 0, 3: 0, 2: 0}):
        raises_like_torch(lambda m, lengths=lengths: pack(m, lengths), "lengths")
    raises_like_torch(lambda m: pack(m, np.array([[5, 3, 2]])), "1-D")
    raises_like_torch(lambda m: pack(m, np.array(5)), "1-D")


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_constructor_numbers_as_torch(name: str) -> None:
    """A NumPy or Fraction dropout was refused (ValueError) and a NumPy proj_size too; a
    float or bool proj_size raised ValueError where PyTorch raises TypeError."""
    for dropout in (np.float32(0.5), fractions.Fraction(1, 4)):
        built = [layer(m, name, 4, 6, num_layers=2, dropout=dropout) for m in (torch, tw)]
        assert repr(built[1]) == repr(built[0])
        assert built[1].dropout == built[0].dropout
    if name == "LSTM":
        theirs, ours = (layer(m, name, 4, 6, proj_size=np.int64(2)) for m in (torch, tw))
        assert repr(ours) == repr(theirs)
        x = X.astype(np.float64)
        ours.load_state_dict({k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()})
        assert_close(ours.double()(t(tw, x))[0], theirs.double()(t(torch, x))[0])
        for proj_size in (2.0, True, "2"):
            raises_like_torch(lambda m, p=proj_size: layer(m, name, 4, 6, proj_size=p), "proj")
