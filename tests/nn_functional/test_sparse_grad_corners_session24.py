"""Corners of the sparse gradient of ``embedding(sparse=True)`` beyond the second reader's
cases (tests/ports/test_review_session24_reader_b.py): in-place refusals, ``pow``'s
exponents, coalescing of zero-preserving ops, entry dimensions, a save/load of a coalesced
one, and the optimizers' refusals on their other paths (each program run on torch 2.13 and
on tensorweaver with only the import changed)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from snippet_outcomes import same_each

_WEIGHT = np.arange(18, dtype=np.float64).reshape(6, 3) / 7 - 1


def _grad(m: Any) -> Any:
    """The gradient of an embedding's weight after a lookup of rows 3, 1, 3."""
    e = m.nn.Embedding(6, 3, sparse=True).double()
    with m.no_grad():
        e.weight.copy_(m.tensor(_WEIGHT))
    (e(m.tensor([3, 1, 3])) * m.tensor([1.0, -2.0, 3.0], dtype=m.float64)).sum().backward()
    return e.weight.grad


def _kind(t: Any) -> Any:
    """A tensor's layout name, whether it is coalesced, and its values densely."""
    coalesced = t.is_coalesced() if t.is_sparse else None
    return str(t.layout).split(".")[-1], coalesced, t.to_dense() if t.is_sparse else t


def _dense(m: Any) -> Any:
    return m.ones(6, 3, dtype=m.float64)


def _stepped(m: Any, name: str, **kw: Any) -> Any:
    """The weight of a sparse=True embedding after one step of optimizer ``name``."""
    e = m.nn.Embedding(6, 3, sparse=True).double()
    with m.no_grad():
        e.weight.copy_(m.tensor(_WEIGHT))
    opt = getattr(m.optim, name)(e.parameters(), **kw)
    e(m.tensor([3, 1, 3])).pow(2).sum().backward()
    opt.step()
    return e.weight


def _saved(m: Any, t: Any) -> Any:
    buffer = io.BytesIO()
    m.save(t, buffer)
    buffer.seek(0)
    return m.load(buffer)


def test_in_place_and_power_corners_like_torch() -> None:
    same_each(
        {
            "div_dense_in_place": lambda m: _grad(m).div_(_dense(m)),
            "itruediv_dense": lambda m: _grad(m).__itruediv__(_dense(m)),
            "itruediv_zero_dim": lambda m: _kind(_grad(m).__itruediv__(m.tensor(2.0))),
            "div_number_in_place": lambda m: _kind(_grad(m).div_(4)),
            "sub_dense_in_place": lambda m: _grad(m).sub_(_dense(m)),
            "iadd_dense": lambda m: _grad(m).__iadd__(_dense(m)),
            "iadd_sparse": lambda m: (lambda g: _kind(g.__iadd__(g)))(_grad(m)),
            "add_number_in_place": lambda m: _grad(m).add_(1),
            "pow_zero": lambda m: _grad(m).pow(0),
            "pow_keyword": lambda m: _kind(_grad(m).pow(exponent=3)),
            "pow_numpy_exponent": lambda m: _kind(_grad(m).pow(np.int64(2))),
            "power_operator": lambda m: _kind(abs(_grad(m)) ** 0.5),
            "abs_of_coalesced": lambda m: _kind(_grad(m).coalesce().abs()),
            "dims": lambda m: (_grad(m).sparse_dim(), _grad(m).dense_dim()),
            "data_of_coalesced": lambda m: _kind(_grad(m).coalesce().data),
            "save_load_coalesced": lambda m: _kind(_saved(m, _grad(m).coalesce())),
            "save_load_in_a_dict": lambda m: (lambda d: (_kind(d["g"]), _kind(d["w"])))(
                _saved(m, {"g": _grad(m), "w": m.tensor(_WEIGHT)})
            ),
        },
        "numpy",
    )


def test_optimizer_refusals_on_other_paths_like_torch() -> None:
    same_each(
        {
            "SGD_foreach_weight_decay": lambda m: _stepped(
                m, "SGD", lr=0.1, weight_decay=0.1, foreach=True
            ),
            "SGD_momentum_weight_decay": lambda m: _stepped(
                m, "SGD", lr=0.1, momentum=0.9, weight_decay=0.1
            ),
            "SGD_foreach": lambda m: _stepped(m, "SGD", lr=0.1, foreach=True),
            "Adam_foreach": lambda m: _stepped(m, "Adam", lr=0.1, foreach=True),
            "AdamW_amsgrad": lambda m: _stepped(m, "AdamW", lr=0.1, amsgrad=True),
            "Adafactor": lambda m: _stepped(m, "Adafactor", lr=0.1),
            "Muon": lambda m: _stepped(m, "Muon", lr=0.1),
            "Adagrad_foreach": lambda m: _stepped(m, "Adagrad", lr=0.1, foreach=True),
        },
        "numpy",
    )
