"""An op's output changed in place before backward, against torch 2.13: torch raises "modified
by an inplace operation" where the op's node saved its output (``ExpBackward0``'s result),
whichever way the change came (the tensor's own in-place method, a write through a view of it,
through its ``detach()`` alias, under ``no_grad``), and lets it pass where the node saved none.
Writes through ``.data`` are never seen (its version counter is its own)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

VALUES = np.array([0.5, 1.2, 0.3, 2.0])


def _ops(m: Any) -> dict[str, Callable[[Any], Any]]:
    F = m.nn.functional
    return {
        # nodes that save their output in torch
        "exp": m.exp,
        "exp2": m.exp2,
        "expm1": m.expm1,
        "tanh": m.tanh,
        "sigmoid": m.sigmoid,
        "sqrt": m.sqrt,
        "relu": m.relu,
        "special.erfcx": m.special.erfcx,
        "special.i0e": m.special.i0e,
        "special.i1": m.special.i1,
        "special.i1e": m.special.i1e,
        "special.ndtri": lambda x: m.special.ndtri(x * 0.3 + 0.1),
        "special.log_ndtr": m.special.log_ndtr,
        "softmax": lambda x: F.softmax(x, 0),
        "log_softmax": lambda x: F.log_softmax(x, 0),
        "softmin": lambda x: F.softmin(x, 0),
        "prod": lambda x: x.prod(),
        "norm": lambda x: x.norm(),
        "vector_norm": lambda x: m.linalg.vector_norm(x),
        "dist": lambda x: m.dist(x, x * 0.5),
        "logsumexp": lambda x: x.logsumexp(0),
        "amax": lambda x: x.amax(0),
        "max": lambda x: x.max(),
        "std": lambda x: x.std(),
        "scalar ** x": lambda x: 2**x,
        "x ** x": lambda x: x**x,
        "cholesky": lambda x: m.linalg.cholesky(
            x.reshape(2, 2) @ x.reshape(2, 2).T + m.eye(2, dtype=x.dtype)
        ),
        "inv": lambda x: m.linalg.inv(x.reshape(2, 2) + 2 * m.eye(2, dtype=x.dtype)),
        "det": lambda x: m.linalg.det(x.reshape(2, 2)),
        # nodes that save no output: the change passes
        "x ** 2": lambda x: x**2,
        "sin": m.sin,
        "log": m.log,
        "abs": m.abs,
        "cumsum": lambda x: x.cumsum(0),
        "mean": lambda x: x.mean(),
        "var": lambda x: x.var(),
        "gelu": F.gelu,
        "silu": F.silu,
        "softplus": F.softplus,
        "max(dim)": lambda x: x.reshape(2, 2).max(1)[0],
        "sort": lambda x: x.sort()[0],
        "slogdet logabsdet": lambda x: m.linalg.slogdet(x.reshape(2, 2))[1],
    }


def _changes(m: Any) -> dict[str, Callable[[Any], Any]]:
    def under_no_grad(y: Any) -> None:
        with m.no_grad():
            y.mul_(2)

    return {
        "mul_": lambda y: y.mul_(2),
        "+=": lambda y: y.__iadd__(1),
        "setitem": lambda y: y.__setitem__(0, 5.0),
        "through a view": lambda y: y.reshape(-1)[:1].add_(1),
        "through detach()": lambda y: y.detach().mul_(2),
        "under no_grad": under_no_grad,
        "copy_": lambda y: y.copy_(y.detach() * 0),
    }


def _run(m: Any, op: str, change: str, ops: Any = _ops) -> Any:
    x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
    y = ops(m)[op](x)
    _changes(m)[change](y)
    try:
        y.sum().backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        return "raises"
    return x.grad.numpy().copy()


def _same(want: Any, got: Any) -> None:
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", list(_ops(torch)))
def test_output_changed_in_place_like_torch(backend: str, op: str) -> None:
    _same(_run(torch, op, "mul_"), _run(tw, op, "mul_"))


@pytest.mark.parametrize("change", list(_changes(torch)))
@pytest.mark.parametrize("op", ["exp", "softmax", "sin"])
def test_every_way_of_changing_an_output_like_torch(backend: str, op: str, change: str) -> None:
    _same(_run(torch, op, change), _run(tw, op, change))


def _named_otherwise(m: Any) -> dict[str, Callable[[Any], Any]]:
    """Composites labelled with torch's node name (a div node before session 17's second
    wave: not known to save its output)."""
    return {
        "rsqrt": m.rsqrt,
        "reciprocal": m.reciprocal,
    }


@pytest.mark.parametrize("op", list(_named_otherwise(torch)))
def test_output_changed_in_place_of_composites_named_otherwise(backend: str, op: str) -> None:
    _same(_run(torch, op, "mul_", _named_otherwise), _run(tw, op, "mul_", _named_otherwise))


def test_the_error_names_the_node_and_versions(backend: str) -> None:
    x = tw.tensor(VALUES, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.mul_(2)
    with pytest.raises(
        RuntimeError, match="output 0 of ExpBackward0, is at version 2; expected version 0"
    ):
        y.sum().backward()


def test_an_output_changed_then_made_again_by_an_in_place_op(backend: str) -> None:
    """``y.exp_()`` replaces y's node by a new ExpBackward0 that saved the new value: a change
    after it trips that node, one before trips the first."""
    for m in (torch, tw):
        x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
        y = x * 1
        y.exp_()  # (the mul saved nothing of y's: no error)
        y.sum().backward()
        assert np.allclose(x.grad.numpy(), np.exp(VALUES))
        y = x.exp()
        y.exp_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


# -- .data: a version counter of its own ------------------------------------------------------


def _data_versions(m: Any) -> list:
    p = m.nn.Parameter(m.ones(3, 2))
    with m.no_grad():
        p.add_(1)
        p.add_(1)
    seen = []
    d = p.data
    seen.append((p._version, d._version))
    d.add_(1)
    seen.append((p._version, d._version))
    w = p[0]
    p.data[1].add_(1)
    seen.append((p._version, w._version, d._version))
    with m.no_grad():
        p.add_(1)
    seen.append((p._version, d._version))
    a = p.detach()
    a.data.add_(1)
    seen.append((a._version, p._version))
    seen.append(p.detach().numpy().tolist())
    return seen


def test_data_has_its_own_version_counter(backend: str) -> None:
    assert _data_versions(tw) == _data_versions(torch)


def _data_write_under_a_saved_view(m: Any) -> Any:
    p = m.nn.Parameter(m.tensor(np.arange(6.0).reshape(3, 2)))
    row = p[1]
    y = (row * row).sum() + (p * p).sum()
    p.data[0].add_(1)
    p.data.mul_(2)
    y.backward()
    return p.grad.numpy().copy()


def test_data_writes_trip_no_saved_view(backend: str) -> None:
    np.testing.assert_array_equal(
        _data_write_under_a_saved_view(tw), _data_write_under_a_saved_view(torch)
    )


@pytest.mark.parametrize("op", ["exp", "relu"])
def test_data_write_into_a_saved_output_raises_nothing(backend: str, op: str) -> None:
    for m in (torch, tw):
        x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
        y = getattr(m, op)(x)
        y.data.mul_(2)
        y.sum().backward()  # no error, as torch's


def _data_ops(m: Any) -> dict[str, Callable[[Any], Any]]:
    F = m.nn.functional
    return {
        "exp": m.exp,
        "tanh": m.tanh,
        "sigmoid": m.sigmoid,
        "sqrt": m.sqrt,
        "expm1": m.expm1,
        "relu": m.relu,
        "special.erfcx": m.special.erfcx,
        "special.i0e": m.special.i0e,
        "sin": m.sin,
        "x * x": lambda x: x * x,
        "softmax": lambda x: F.softmax(x, 0),
        "log_softmax": lambda x: F.log_softmax(x, 0),
        "prod": lambda x: x.prod(),
        "norm": lambda x: x.norm(),
        "logsumexp": lambda x: x.logsumexp(0),
    }


#: Composites whose rule reads values they computed on the way (or the backend kept), not
#: the output array itself, so a write through the output's .data does not reach them.
_DATA_NOT_SEEN: dict[str, str] = {}  # (prod's rule reads its kept result since session 29)


def _data_write_gradient(m: Any, op: str) -> Any:
    x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
    y = _data_ops(m)[op](x)
    y.data.mul_(2)  # unseen by the version counters: torch's node reads the changed values
    y.sum().backward()
    return x.grad.numpy().copy()


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(
            op,
            marks=(
                pytest.mark.xfail(
                    strict=True,
                    reason=f"{_DATA_NOT_SEEN[op]}: torch's node reads the output's memory, "
                    "which the write through .data changed",
                )
                if op in _DATA_NOT_SEEN
                else ()
            ),
        )
        for op in _data_ops(torch)
    ],
)
def test_data_write_into_a_saved_output_changes_the_gradient_as_torch(
    backend: str, op: str
) -> None:
    np.testing.assert_allclose(
        _data_write_gradient(tw, op), _data_write_gradient(torch, op), rtol=1e-12
    )
