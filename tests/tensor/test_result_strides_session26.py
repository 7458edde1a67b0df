"""Result layouts (``stride()``, ``is_contiguous()``) of ordering and running ops as torch
2.13's: ``sort``/``msort``/``argsort`` lay values and indices out as the input where it is
dense (else dense in its strides' order), ``topk``'s are contiguous whatever the input, and
``cumprod``/``logcumsumexp`` results are contiguous new tensors (never the input itself, a
0-d one or one scanned along a dim of size 0 or 1 included), with torch's node."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import pytest
from snippet_outcomes import grid, leaf, same_each

Program = Callable[[Any], Any]


def _laid(r: Any) -> Any:
    """Values and layout of a tensor (or of each of a tuple's)."""
    if isinstance(r, tuple):
        return tuple(_laid(t) for t in r)
    return r, r.stride(), r.is_contiguous()


#: Inputs of each layout: (3, 4)-shaped unless said (values with ties, so that the order of
#: equal elements shows too).
INPUTS: dict[str, Program] = {
    "contiguous": lambda m: grid(m, 3, 4) % 5,
    "transposed": lambda m: (grid(m, 4, 3) % 5).t(),
    "stepped_transposed": lambda m: (grid(m, 6, 4) % 5).t()[:, ::2],  # (4, 3), not dense
    "sliced": lambda m: (grid(m, 3, 8) % 5)[:, ::2],
    "expanded": lambda m: (grid(m, 3, 1) % 2).expand(3, 4),
    "permuted_3d": lambda m: (grid(m, 2, 3, 4) % 5).permute(2, 0, 1),
    "channels_last": lambda m: (grid(m, 2, 3, 2, 2) % 5).to(memory_format=m.channels_last),
    "stepped_1d": lambda m: (grid(m, 8) % 3)[::2],
}


def _each(calls: dict[str, Callable[[Any], Any]]) -> dict[str, Program]:
    return {
        f"{call} of {name}": lambda m, call=call, name=name: calls[call](INPUTS[name](m))
        for call in calls
        for name in INPUTS
    }


def _topk(r: Any, values: bool = True) -> Any:
    """topk's values (unless ``sorted=False``: any order) and its indices' layout (which of
    equal elements torch's topk picks is its own)."""
    v, i = r
    return (_laid(v) if values else (v.stride(), v.is_contiguous())), i.stride(), i.is_contiguous()


#: (before, torch:cpu: sort/msort values C-ordered; numpy and torch: topk's indices, and on
#: numpy its values, laid out as the input, even a C-ordered one's: (4, 1) for topk(2, 1))
ORDERING = _each(
    {
        "sort": lambda x: _laid(tuple(x.sort())),
        "sort_dim0_descending": lambda x: _laid(tuple(x.sort(0, True))),
        "sort_stable": lambda x: _laid(tuple(x.sort(dim=0, stable=True))),
        "sort_stable_descending": lambda x: _laid(
            tuple(x.sort(stable=True, dim=-1, descending=True))
        ),
        "msort": lambda x: _laid(x.msort()),
        "argsort_dim0": lambda x: _laid(x.argsort(0)),
        "topk": lambda x: _topk(x.topk(2)),
        "topk_dim0_smallest": lambda x: _topk(x.topk(1, 0, largest=False)),
        "topk_all_unsorted": lambda x: _topk(x.topk(x.shape[0], 0, sorted=False), False),
        "topk_none": lambda x: _topk(x.topk(0, 0)),  # (before: an empty view's strides)
    }
)


def test_ordering_results_lay_out_as_torch(backend: str) -> None:
    same_each(ORDERING, backend)


def _sorted_grad(m: Any, op: str) -> Any:
    x = leaf(m, 4, 3)
    y = x.t()
    v = y.sort(0, descending=True)[0] if op == "sort" else y.topk(2, 1)[0]
    (v * grid(m, *v.shape)).sum().backward()
    return x.grad, type(v.grad_fn).__name__


def test_ordering_gradients_of_a_transposed_input(backend: str) -> None:
    same_each({op: partial(_sorted_grad, op=op) for op in ("sort", "topk")}, backend)


@pytest.mark.cunumeric
def test_ordering_layouts_on_every_backend(backend: str) -> None:
    calls = {"sort": lambda x: _laid(tuple(x.sort(0))), "topk": lambda x: _topk(x.topk(2))}
    same_each(
        {
            f"{c} of {n}": lambda m, c=c, n=n: calls[c](INPUTS[n](m))
            for c in calls
            for n in ("transposed", "channels_last")
        }
        | {
            "flip of stepped_transposed": lambda m: _laid(INPUTS["stepped_transposed"](m).flip(1)),
            "argsort of permuted_3d": lambda m: _laid(INPUTS["permuted_3d"](m).argsort(2)),
        },
        backend,
    )


def test_sort_keeps_the_strides_of_size_one_axes() -> None:
    # (before, numpy: indices (1, 1), _torch_order trusted NumPy's C flag, which passes any
    # stride of a size-1 axis)
    same_each(
        {
            "size_one": lambda m: _laid(tuple(grid(m, 1, 3).t().sort(0))),
            "argsort": lambda m: _laid(grid(m, 1, 3).t().argsort(0)),
            "flip": lambda m: _laid(grid(m, 1, 3).t().flip(0)),
        },
        "numpy",
    )


def test_sort_keeps_the_strides_of_an_empty_input() -> None:
    same_each(
        {"empty": lambda m: _laid(tuple(m.ones(3, 0, dtype=m.float64).t().sort(0)))},
        "numpy",
    )


def _running(m: Any, op: str, source: str, dim: int, grad: bool = False) -> Any:
    x = {
        "channels_last": lambda: (grid(m, 2, 3, 2, 2) / 8).to(memory_format=m.channels_last),
        "channels_last_zeros": lambda: (grid(m, 2, 3, 2, 2) % 3).to(memory_format=m.channels_last),
        "transposed": lambda: (grid(m, 4, 3) / 8).t(),
        "0d": lambda: m.tensor(0.5, dtype=m.float64),
        "size_one": lambda: grid(m, 3, 1) / 4,
        "empty": lambda: m.ones(0, 2, dtype=m.float64),
    }[source]()
    if grad:
        x.requires_grad_()
    y = getattr(x, op)(dim)
    if grad:
        y.sum().backward()
        return _laid(y), y is x, type(y.grad_fn).__name__, x.grad
    changed = y.add_(1) is y and bool((x == y).all()) if y.numel() else None
    return _laid(y), y is x, changed


#: (before: cumprod/logcumsumexp of a channels-last input kept its layout; of a 0-d input, or
#: along a dim of size 0 or 1, cumprod gave the input itself (no node, y.add_ changed x), and
#: logcumsumexp the input itself there (a 0-d one: a CloneBackward0 node))
RUNNING: dict[str, Program] = {
    f"{op} {source} {dim}{' grad' if grad else ''}": partial(
        _running, op=op, source=source, dim=dim, grad=grad
    )
    for op in ("cumprod", "logcumsumexp")
    for source, dim in (
        ("channels_last", 1),
        ("channels_last", 3),
        ("channels_last_zeros", 2),
        ("transposed", 0),
        ("0d", 0),
        ("size_one", 1),
        ("empty", 0),
    )
    for grad in (False, True)
    if not (op == "logcumsumexp" and source == "channels_last_zeros")
}


def test_running_results_are_new_contiguous_tensors(backend: str) -> None:
    same_each(RUNNING, backend)


def test_running_results_of_other_dtypes(backend: str) -> None:
    same_each(
        {
            "cumprod_int_channels_last": lambda m: _laid(
                grid(m, 2, 3, 2, 2, dtype=m.int32).to(memory_format=m.channels_last).cumprod(1)
            ),
            "cumprod_to_float32_transposed": lambda m: _laid(
                (grid(m, 4, 3) / 8).t().cumprod(0, dtype=m.float32)
            ),
            "logcumsumexp_complex_transposed": lambda m: _laid(
                m.complex(grid(m, 4, 3) / 8, grid(m, 4, 3) / 5).t().logcumsumexp(0)
            ),
            "logcumsumexp_complex_0d": lambda m: _laid(m.tensor(0.5 + 4j).logcumsumexp(0)),
        },
        backend,
    )


def test_cumsum_of_a_0d_tensor_is_a_new_tensor(backend: str) -> None:
    same_each(
        {
            "values": lambda m: (lambda x: (x.cumsum(0) is x, x.cumsum(0).add_(1), x))(
                m.tensor(2.0)
            ),
            "grad": lambda m: (lambda x: type(x.cumsum(0).grad_fn).__name__)(
                m.tensor(2.0, requires_grad=True)
            ),
        },
        backend,
    )


def test_searchsorted_of_transposed_values_is_contiguous() -> None:
    same_each(
        {
            "values_transposed": lambda m: _laid(
                m.searchsorted(grid(m, 3, 4), (grid(m, 4, 3) % 5).t())
            ),
            "both_transposed": lambda m: _laid(
                m.searchsorted(grid(m, 4, 3).t(), (grid(m, 4, 3) % 5).t())
            ),
        },
        "torch:cpu",
    )
