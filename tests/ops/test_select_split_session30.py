"""x[i], x[:, i], select, narrow, chunk, split and unbind through the backends' optional
``select`` and ``split`` (API 2.11) and through the core's slices where a backend lacks them:
values, gradients, grad_fn names, views that share their base's memory and versions, bad
and negative indices, 0-d and empty tensors, each against torch; and the kit's cases for the
two primitives, which pass on the plugins and catch a wrong one."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
from snippet_outcomes import grad_fn_name, grid, leaf, same, same_each
from tensorweaver.check.cases import movement as kit
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.ir import OPTIONAL, REQUIRED


def _pieces(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


#: name -> the op on a (3, 4) grid (one tensor or a tuple of pieces).
OPS = {
    "x[1]": lambda x: x[1],
    "x[-1]": lambda x: x[-1],
    "x[:, 2]": lambda x: x[:, 2],
    "x[:, -4]": lambda x: x[:, -4],
    "x[1, :]": lambda x: x[1, :],
    "select(1, 2)": lambda x: x.select(1, 2),
    "select(-1, -1)": lambda x: x.select(-1, -1),
    "narrow(0, 1, 2)": lambda x: x.narrow(0, 1, 2),
    "chunk(2, 1)": lambda x: x.chunk(2, 1),
    "chunk(3, 0)": lambda x: x.chunk(3, 0),
    "split(3, 1)": lambda x: x.split(3, 1),
    "split([1, 0, 2], 0)": lambda x: x.split([1, 0, 2], 0),
    "unbind(0)": lambda x: x.unbind(0),
    "unbind(1)": lambda x: x.unbind(1),
}


def _forward(op: Any) -> Any:
    return lambda m: op(grid(m, 3, 4))


def _backward(op: Any) -> Any:
    """Values, grad_fn names and the gradient of a weighted sum of every piece."""

    def run(m: Any) -> Any:
        x = leaf(m, 3, 4)
        pieces = _pieces(op(x))
        loss = sum((p * (i + 2)).sum() for i, p in enumerate(pieces))
        loss.backward()
        return pieces, [grad_fn_name(p) for p in pieces], x.grad

    return run


def _written_through(op: Any) -> Any:
    """A write into the last piece reaches the base, and the base's versions move."""

    def run(m: Any) -> Any:
        x = grid(m, 3, 4)
        pieces = _pieces(op(x))
        pieces[-1].mul_(10)
        return x, x._version, [p._version for p in pieces]

    return run


def _following(op: Any) -> Any:
    """A write into the base is seen by the pieces taken before it."""

    def run(m: Any) -> Any:
        x = grid(m, 3, 4)
        pieces = _pieces(op(x))
        x.add_(100)
        return pieces

    return run


PROGRAMS = {
    **{f"{name} forward": _forward(op) for name, op in OPS.items()},
    **{f"{name} backward": _backward(op) for name, op in OPS.items()},
    **{f"{name} written": _written_through(op) for name, op in OPS.items()},
    **{f"{name} followed": _following(op) for name, op in OPS.items()},
    "no_grad x[1] of a leaf": lambda m: _no_grad_row(m),
    "1-d x[2] is 0-d": lambda m: grid(m, 4)[2],
    "1-d unbind": lambda m: grid(m, 3).unbind(0),
    "empty x[:, 1]": lambda m: m.zeros(0, 3)[:, 1],
    "empty select": lambda m: m.zeros(2, 0).select(0, 1),
    "empty unbind": lambda m: m.zeros(2, 0).unbind(1),
    "empty split": lambda m: m.zeros(0, 3).split(2, 0),
    "empty chunk": lambda m: m.zeros(2, 0).chunk(3, 1),
    "int x[1]": lambda m: m.arange(12).reshape(3, 4)[1],
    "bool unbind": lambda m: (m.arange(6).reshape(2, 3) > 2).unbind(1),
    "transposed x[1]": lambda m: grid(m, 3, 4).t()[1],
    "transposed unbind": lambda m: grid(m, 3, 4).t().unbind(1),
}


def _no_grad_row(m: Any) -> Any:
    x = leaf(m, 3, 4)
    with m.no_grad():
        row = x[1]
    return row, row.requires_grad, grad_fn_name(row)


#: Bad indices: the error class and PyTorch's words.
BAD = {
    "x[3]": lambda x: x[3],
    "x[-4]": lambda x: x[-4],
    "x[:, 4]": lambda x: x[:, 4],
    "x[1, -5]": lambda x: x[1, -5],
    "0-d x[0]": lambda x: x.sum()[0],
    "0-d x[-1]": lambda x: x.sum()[-1],
}


def _error(op: Any, grad: bool) -> Any:
    def run(m: Any) -> Any:
        x = leaf(m, 3, 4) if grad else grid(m, 3, 4)
        try:
            op(x)
        except IndexError as e:
            return "IndexError", str(e)
        return "no error"

    return run


@pytest.fixture(params=["primitives", "core slices"])
def path(request: pytest.FixtureRequest, spec: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend's select and split, or (removed from its class) the core's slices."""
    if request.param == "core slices":
        with tw.device(spec):
            kind = type(tw.zeros(1).backend)
        monkeypatch.delattr(kind, "select")
        monkeypatch.delattr(kind, "split")
    return request.param


def test_views_cut_along_one_axis_as_torch(spec: str, path: str) -> None:
    same_each(PROGRAMS, spec, decimals=None)


def test_bad_indices_raise_torch_errors(spec: str, path: str) -> None:
    programs = {f"{name} {grad}": _error(op, grad) for name, op in BAD.items() for grad in (0, 1)}
    same_each(programs, spec)


def test_select_out_of_range_says_torchs_words(spec: str) -> None:
    same(_error(lambda x: x.select(1, 5), False), spec)


def test_cunumeric_cuts_as_torch() -> None:
    programs = {k: PROGRAMS[k] for k in ("x[:, 2] backward", "unbind(1) written", "x[1] followed")}
    same_each(programs, "cunumeric", decimals=None)


def test_the_contract_lists_them_as_optional() -> None:
    for name in ("select", "split"):
        assert name in OPTIONAL and name not in REQUIRED
        assert OPTIONAL[name].startswith(f"{name}(a, axis, ")


class _Wrong:
    """A backend whose select takes the next index and whose split drops the last piece."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def select(self, a: Any, axis: int, index: int) -> Any:
        return self._backend.select(a, axis, (index + 1) % a.shape[axis])

    def split(self, a: Any, axis: int, sizes: tuple) -> Any:
        return self._backend.split(a, axis, sizes)[:-1]


def _kit_outcomes(backend: Any, name: str) -> list:
    ctx = Context(backend)
    found = []
    for layout in ("standard", "transposed", "empty"):
        ctx.start_case()
        try:
            found += [m.ok for m in kit._case(name, d.float32, layout)(ctx)]
        except Exception as e:  # noqa: BLE001  (a Failure is the kit's verdict)
            found.append(type(e).__name__)
    return found


@pytest.mark.parametrize("name", ["select", "split"])
def test_the_kit_passes_the_plugins_and_catches_a_wrong_one(spec: str, name: str) -> None:
    with tw.device(spec):
        backend = tw.zeros(1).backend
    right = _kit_outcomes(backend, name)
    assert right and all(r is True for r in right), right
    wrong = _kit_outcomes(_Wrong(backend), name)
    assert any(r is not True for r in wrong), wrong
