"""A seeded sweep of ``tw.nn.RNN``/``LSTM``/``GRU`` and their cells against ``torch.nn``.

Each case draws a layer (mode, sizes, ``num_layers``, ``bias``, ``batch_first``,
``bidirectional``, ``proj_size``, ``dropout`` in eval mode), an input (batched, unbatched,
an empty batch, one step), an initial state or none, a dtype (float32 or float64) and a
backend (NumPy or PyTorch's CPU); both libraries run with the same weights (the torch
layer's ``state_dict``) and inputs, and the outputs, final states and the gradients of one
random linear loss with respect to the input, the initial states and every parameter must
agree (float64 to ~1e-10, float32 to ~1e-5 relative), as must ``repr`` and PyTorch's
weight bookkeeping (``_flat_weights_names``, ``_all_weights``). Error cases call a drawn
layer with one thing wrong (input size or dtype, an empty sequence, hx of a wrong size,
rank or dtype) and compare exception classes. Dropout in training and finite differences of a few
small float64 layers close the file. A few cases also run on cuPyNumeric.

The suite runs a deterministic share of the cases (``TW_SWEEP_SHARE``, default 1 in 6;
``TW_SWEEP_SHARE=1`` runs them all)."""

from __future__ import annotations

import os
import random
import zlib
from typing import Any, Optional

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import check_gradients, host
from tw_backends import entered

SHARE = int(os.environ.get("TW_SWEEP_SHARE", "6"))
LAYER_CASES = 240
CELL_CASES = 120
CLASSES = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "LSTM": "LSTM", "GRU": "GRU"}
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}


def assert_matches(ours: Any, theirs: Any, dtype: str, what: str) -> None:
    """Same shape and dtype; values within the dtype's tolerance, relative to the largest
    expected magnitude."""
    a, e = host(ours), host(theirs)
    assert a.shape == e.shape, f"{what}: shape {a.shape}, PyTorch {e.shape}"
    assert a.dtype == e.dtype, f"{what}: dtype {a.dtype}, PyTorch {e.dtype}"
    tol = TOLERANCE[dtype]
    scale = max(1.0, float(np.abs(e).max())) if e.size else 1.0
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale, err_msg=what)


def flat(outputs: Any) -> list[Any]:
    """The tensors of ``output, h_n`` or ``output, (h_n, c_n)``, in order."""
    if isinstance(outputs, (tuple, list)):
        return [t for o in outputs for t in flat(o)]
    return [outputs]


def run_both(
    make: Any, inputs: list[Optional[np.ndarray]], call: Any, dtype: str, seed: int, what: str
) -> None:
    """``make(m)`` builds the layer of library ``m`` (torch's first: tw's takes its state);
    ``call(module, *tensors)`` runs it. Compares every output and every gradient of
    ``sum(cotangent * output)``."""
    theirs_module = make(torch)
    ours_module = make(tw)
    assert repr(ours_module) == repr(theirs_module), what
    for attr in ("_flat_weights_names", "_all_weights"):  # layers' bookkeeping, read by users
        assert getattr(ours_module, attr, None) == getattr(theirs_module, attr, None), attr
    ours_module.load_state_dict(
        {k: tw.tensor(host(v)) for k, v in theirs_module.state_dict().items()}
    )
    results = {}
    for m, module in ((torch, theirs_module), (tw, ours_module)):
        leaves = [None if a is None else m.tensor(a, requires_grad=True) for a in inputs]
        outs = flat(call(module, *leaves))
        rng = np.random.default_rng(seed)
        loss = sum(
            (o * m.tensor(rng.standard_normal(tuple(o.shape)).astype(dtype))).sum() for o in outs
        )
        if any(o.numel() for o in outs):
            loss.backward()
        results[m] = (outs, leaves, dict(module.named_parameters()))
    (t_outs, t_leaves, t_params), (o_outs, o_leaves, o_params) = results[torch], results[tw]
    assert len(o_outs) == len(t_outs), f"{what}: {len(o_outs)} outputs, PyTorch {len(t_outs)}"
    for i, (a, e) in enumerate(zip(o_outs, t_outs)):
        assert_matches(a, e, dtype, f"{what}: output {i}")
    for i, (a, e) in enumerate(zip(o_leaves, t_leaves)):
        if e is not None and e.grad is not None:
            assert a.grad is not None, f"{what}: input {i} got no gradient"
            assert_matches(a.grad, e.grad, dtype, f"{what}: gradient of input {i}")
    assert list(o_params) == list(t_params), f"{what}: parameter names"
    for name, p in t_params.items():
        if p.grad is not None:
            assert o_params[name].grad is not None, f"{what}: {name} got no gradient"
            assert_matches(o_params[name].grad, p.grad, dtype, f"{what}: gradient of {name}")


class LayerCase:
    """One drawn sequence layer, input and initial state."""

    def __init__(self, index: int) -> None:
        r = random.Random(index)
        self.mode = r.choice(tuple(CLASSES))
        self.hidden = r.randint(1, 5)
        self.input_size = r.randint(1, 4)
        self.kwargs: dict[str, Any] = {
            "num_layers": r.choice((1, 1, 2, 3)),
            "bias": r.random() < 0.8,
            "batch_first": r.random() < 0.4,
            "bidirectional": r.random() < 0.4,
        }
        if self.mode.startswith("RNN"):
            self.kwargs["nonlinearity"] = self.mode[4:].lower()
        if self.mode == "LSTM" and self.hidden > 1 and r.random() < 0.4:
            self.kwargs["proj_size"] = r.randint(1, self.hidden - 1)
        if self.kwargs["num_layers"] > 1 and r.random() < 0.3:
            self.kwargs["dropout"] = 0.5  # eval mode: no effect, as PyTorch
        self.length = r.choice((1, 2, 3, 5))
        self.batch = r.choice((None, 0, 1, 2, 3))  # None: unbatched input
        self.with_state = r.random() < 0.5
        self.dtype = r.choice(("float32", "float64"))
        self.backend = r.choice(("numpy", "torch:cpu"))
        self.seed = index
        given = ",".join(f"{k}={v}" for k, v in self.kwargs.items() if k != "nonlinearity")
        self.id = (
            f"{index}-{self.mode}-I{self.input_size}H{self.hidden}-{given}-L{self.length}"
            f"N{self.batch}-{'hx' if self.with_state else 'nohx'}-{self.dtype}-{self.backend}"
        )

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        batch = () if self.batch is None else (self.batch,)
        if self.kwargs["batch_first"] and batch:
            shape = (*batch, self.length, self.input_size)
        else:
            shape = (self.length, *batch, self.input_size)
        arrays = [rng.standard_normal(shape)]
        if self.with_state:
            count = self.kwargs["num_layers"] * (2 if self.kwargs["bidirectional"] else 1)
            width = self.kwargs.get("proj_size") or self.hidden
            arrays.append(rng.standard_normal((count, *batch, width)))
            if self.mode == "LSTM":
                arrays.append(rng.standard_normal((count, *batch, self.hidden)))
        return [a.astype(self.dtype) for a in arrays]

    def make(self, m: Any) -> Any:
        if m is torch:
            torch.manual_seed(self.seed)
        layer = getattr(m.nn, CLASSES[self.mode])
        module = layer(self.input_size, self.hidden, **self.kwargs, dtype=getattr(m, self.dtype))
        return module.eval() if "dropout" in self.kwargs else module

    def check(self, backend: Optional[str] = None) -> None:
        def call(module: Any, x: Any, *state: Any) -> Any:
            if not state:
                return module(x)
            return module(x, state if len(state) == 2 else state[0])

        with entered(backend or self.backend, seed=self.seed):
            run_both(self.make, self.inputs(), call, self.dtype, self.seed, self.id)


class CellCase:
    """One drawn cell, input and state."""

    def __init__(self, index: int) -> None:
        r = random.Random(10_000 + index)
        self.mode = r.choice(tuple(CLASSES))
        self.hidden = r.randint(1, 5)
        self.input_size = r.randint(1, 4)
        self.bias = r.random() < 0.8
        self.batch = r.choice((None, 0, 1, 3))
        self.with_state = r.random() < 0.6
        self.dtype = r.choice(("float32", "float64"))
        self.backend = r.choice(("numpy", "torch:cpu"))
        self.seed = 10_000 + index
        self.id = (
            f"{index}-{self.mode}Cell-I{self.input_size}H{self.hidden}-bias={self.bias}-"
            f"N{self.batch}-{'hx' if self.with_state else 'nohx'}-{self.dtype}-{self.backend}"
        )

    def check(self, backend: Optional[str] = None) -> None:
        rng = np.random.default_rng(self.seed)
        batch = () if self.batch is None else (self.batch,)
        arrays = [rng.standard_normal((*batch, self.input_size))]
        if self.with_state:
            states = 2 if self.mode == "LSTM" else 1
            arrays += [rng.standard_normal((*batch, self.hidden)) for _ in range(states)]
        kwargs: dict[str, Any] = {"bias": self.bias}
        if self.mode.startswith("RNN"):
            kwargs["nonlinearity"] = self.mode[4:].lower()

        def make(m: Any) -> Any:
            if m is torch:
                torch.manual_seed(self.seed)
            cell = getattr(m.nn, CLASSES[self.mode] + "Cell")
            return cell(self.input_size, self.hidden, **kwargs, dtype=getattr(m, self.dtype))

        def call(module: Any, x: Any, *state: Any) -> Any:
            if not state:
                return module(x)
            return module(x, state if len(state) == 2 else state[0])

        with entered(backend or self.backend, seed=self.seed):
            run_both(
                make, [a.astype(self.dtype) for a in arrays], call, self.dtype, self.seed, self.id
            )


def shared(cases: list[Any]) -> list[Any]:
    return [c for c in cases if zlib.crc32(c.id.encode()) % SHARE == 0]


LAYERS = shared([LayerCase(i) for i in range(LAYER_CASES)])
CELLS = shared([CellCase(i) for i in range(CELL_CASES)])


@pytest.mark.parametrize("case", LAYERS, ids=[c.id for c in LAYERS])
def test_layer_sweep(case: LayerCase) -> None:
    case.check()


@pytest.mark.parametrize("case", CELLS, ids=[c.id for c in CELLS])
def test_cell_sweep(case: CellCase) -> None:
    case.check()


@pytest.mark.parametrize("case", LAYERS[:2] + CELLS[:1], ids=lambda c: c.id)
def test_sweep_share_on_cunumeric(case: Any) -> None:
    """A few cases on cuPyNumeric (skipped where its device is unusable)."""
    case.check("cunumeric")


# ----------------------------------------------------------------------- wrong arguments


class ErrorCase:
    """A drawn layer called with one thing wrong: PyTorch's exception class or none."""

    FAULTS = ("input_size", "dtype", "empty", "hx_batch", "hx_width", "hx_count", "hx_rank")
    FAULTS += ("hx_dtype",)

    def __init__(self, index: int) -> None:
        self.layer = LayerCase(50_000 + index)
        self.fault = random.Random(50_000 + index).choice(self.FAULTS)
        self.id = f"{self.fault}-{self.layer.id}"

    def check(self) -> None:
        case = self.layer
        x, *hx = case.inputs()
        if self.fault == "input_size":
            x = np.concatenate([x, x[..., :1]], -1)
        elif self.fault == "dtype":
            x = x.astype("float64" if case.dtype == "float32" else "float32")
        elif self.fault == "empty":
            x = x[:, :0] if case.kwargs["batch_first"] and case.batch is not None else x[:0]
        else:
            twin = LayerCase(case.seed)  # the same draw, with initial states
            twin.with_state = True
            hx = twin.inputs()[1:]
            axis = {"hx_batch": 1, "hx_width": -1, "hx_count": 0}.get(self.fault)
            if self.fault == "hx_rank":
                hx[0] = hx[0][0]
            elif self.fault == "hx_dtype":
                hx[0] = hx[0].astype("float64" if case.dtype == "float32" else "float32")
            elif axis == 1 and case.batch is None:
                hx[0] = hx[0][:, None]  # an unbatched input's hx with a batch axis
            else:
                hx[0] = np.concatenate([hx[0], hx[0].take([0], axis)], axis)
        outcomes = []
        with entered(case.backend, seed=case.seed):
            for m in (torch, tw):
                module = case.make(m)
                tensors = [m.tensor(a) for a in (x, *hx)]
                state = tuple(tensors[1:]) if len(hx) == 2 else (tensors[1:] or [None])[0]
                try:
                    module(tensors[0], state)
                    outcomes.append(None)
                except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
                    outcomes.append(e)
        theirs, ours = outcomes
        assert type(ours) is type(theirs), f"{self.id}: ours {ours!r}, PyTorch {theirs!r}"


ERRORS = shared([ErrorCase(i) for i in range(LAYER_CASES // 2)])


@pytest.mark.parametrize("case", ERRORS, ids=[c.id for c in ERRORS])
def test_error_sweep(case: ErrorCase) -> None:
    case.check()


# ------------------------------------------------- dropout in training, finite differences


@pytest.mark.parametrize("mode", list(CLASSES))
@pytest.mark.parametrize("backend", ["numpy", "torch:cpu"])
def test_dropout_in_training(mode: str, backend: str) -> None:
    """Training mode with dropout: PyTorch's shapes, the same result under the same seed,
    the first layer's final states untouched (dropout acts between layers only), and with
    p = 1 (every dropped value zero, so deterministic) PyTorch's values."""
    case = LayerCase(zlib.crc32(mode.encode()) % 1000)
    case.mode, case.batch, case.length, case.dtype = mode, 3, 4, "float64"
    case.kwargs.update(num_layers=3, dropout=0.5, batch_first=False, proj_size=0)
    case.kwargs.pop("nonlinearity", None)
    if mode.startswith("RNN"):
        case.kwargs["nonlinearity"] = mode[4:].lower()
    if mode != "LSTM":
        del case.kwargs["proj_size"]
    x = case.inputs()[0]
    with entered(backend, seed=case.seed):
        ours = case.make(tw).train()
        theirs = case.make(torch).train()
        ours.load_state_dict({k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()})
        runs = []
        for _ in range(2):
            tw.manual_seed(7)
            runs.append(flat(ours(tw.tensor(x))))
        expected = flat(theirs(torch.tensor(x)))
        evaluated = flat(ours.eval()(tw.tensor(x)))
    for a, b, e in zip(*runs, expected):
        assert tuple(a.shape) == tuple(e.shape)
        np.testing.assert_array_equal(host(a), host(b))
    directions = 2 if case.kwargs["bidirectional"] else 1
    for trained, plain in zip(runs[0][1:], evaluated[1:]):  # layer 0's h_n (and c_n)
        assert_matches(trained[:directions], plain[:directions], "float64", "layer 0")
    assert not np.allclose(host(runs[0][0]), host(evaluated[0]))
    case.kwargs["dropout"] = 1.0
    with entered(backend, seed=case.seed):
        run_both(lambda m: case.make(m).train(), [x], lambda mod, a: mod(a), "float64", 0, mode)


FINITE_DIFFERENCES = [
    ("GRU", {"num_layers": 2, "bidirectional": True}, True),
    ("LSTM", {"proj_size": 1, "bias": False}, True),
    ("RNN", {"nonlinearity": "relu", "batch_first": True}, False),
]


@pytest.mark.parametrize(("name", "kwargs", "with_state"), FINITE_DIFFERENCES)
def test_gradients_by_finite_differences(name: str, kwargs: dict, with_state: bool) -> None:
    """Autograd through a small float64 layer against central differences in every input,
    initial-state and weight element."""
    with entered("numpy", float64=True, seed=1):
        module = getattr(tw.nn, name)(2, 2, **kwargs)
        rng = np.random.default_rng(3)
        inputs = [rng.standard_normal((2, 3, 2))]
        count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
        if with_state:
            inputs.append(rng.standard_normal((count, 3, kwargs.get("proj_size") or 2)))
            if name == "LSTM":
                inputs.append(rng.standard_normal((count, 3, 2)))

        def run(x: Any, *state: Any) -> Any:
            hx = (state if len(state) == 2 else state[0]) if state else None
            out, last = module(x, hx)
            return tw.cat([out.reshape(-1), *(s.reshape(-1) for s in flat(last))])

        check_gradients(module, run, inputs)
