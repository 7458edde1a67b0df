"""Strides, storage offsets, addresses and memory formats on cuPyNumeric, against torch 2.13.

Before the plugin's ``layout``/``storage``/``contiguous`` (tensorweaver_cunumeric/layouts.py)
every cuPyNumeric tensor reported row-major strides at offset 0 and address 0: ``x.t()``
said (4, 1) and ``is_contiguous()`` True where torch says (1, 4) and False, ``x.t().view(-1)``
reinterpreted it instead of raising, ``x.t().reshape(-1)`` was a view whose writes reached
``x``, ``x[0].contiguous()`` a copy whose writes did not, ``contiguous(memory_format=
channels_last)`` and ``empty_strided`` kept row-major strides, ``as_strided`` read the
elements of a row-major copy, ``tw.save`` stored views as copies, and ``out=`` overlapping
an input passed.

One child interpreter runs every case on cuPyNumeric (Legate starts once, about a second);
the test runs the same cases on torch. The child also checks that the strides reported for
Legate's own views (transpose, broadcast, basic slices) are the ``.strides`` cuPyNumeric
gives them, and that no layout query copies an array to the host.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from cunumeric_child import run_python
from tensorweaver_cunumeric import legate_config

pytestmark = [
    pytest.mark.cunumeric,
    pytest.mark.skipif(
        legate_config.library_name() is None,
        reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
    ),
]


def _x(m: Any) -> Any:
    return m.arange(12.0, dtype=m.float64).reshape(3, 4)


def _raises(fn: Any) -> str:
    try:
        fn()
    except Exception as e:  # (the class is what both must agree on)
        return type(e).__name__
    return "no error"


def views(m: Any) -> list:
    x = _x(m)
    y = m.arange(24.0, dtype=m.float64).reshape(2, 3, 4)
    made = [
        x.t(),
        x[1],
        x[1:, 1:3],
        x[:, ::2],
        x[::2, 1::2],
        x[0].expand(2, 4),
        x.expand(2, 3, 4),
        x.t().unsqueeze(1),
        x[:, None, 1:],
        y.permute(2, 0, 1),
        y.permute(2, 0, 1)[1:, :, ::2],
        x.t().reshape(2, 2, 3),
        x.t()[1:].reshape(3, 1, 3),
        x.narrow(1, 1, 2),
        x.unbind(1)[2],
        x.chunk(2, 1)[1],
        x.diagonal(),
        x.t().diagonal(1),
        x.unfold(1, 2, 1),
        x.t().flatten(),
        x.view(2, 6)[1],
        x.mT[1:],
        x.flip(0),
    ]
    return [[tuple(v.stride()), v.storage_offset(), v.is_contiguous()] for v in made]


def view_rules(m: Any) -> list:
    x = _x(m)
    return [
        _raises(lambda: x.t().view(-1)),
        _raises(lambda: x[:, 1:3].view(6)),
        tuple(x[:, 1:3].view(3, 2, 1).stride()),
        tuple(x.t().view(2, 2, 3).stride()),
        _raises(lambda: x.expand(2, 3, 4).view(24)),
        tuple(x.expand(2, 3, 4).view(2, 12).stride()),
    ]


def writes(m: Any) -> list:
    x = _x(m)
    y = x.t().reshape(-1)  # torch copies: the write stays in y
    y[0] = 77.0
    x[0].contiguous()[1] = 50.0  # torch returns the row itself: the write reaches x
    x.t().contiguous()[0, 2] = -5.0  # a copy
    x[1:].view(8)[3] = 33.0  # a view of a view
    z = _x(m)
    z.t()[1].mul_(10.0)
    return [x, y, z]


def channels_last(m: Any) -> list:
    c = m.arange(2 * 3 * 2 * 2, dtype=m.float64).reshape(2, 3, 2, 2)
    last = c.contiguous(memory_format=m.channels_last)
    to = c.to(memory_format=m.channels_last)
    facts = []
    for t in (
        last,
        to,
        last.clone(),
        last.clone(memory_format=m.contiguous_format),
        m.empty_like(last),
        m.zeros_like(last),
        last[:, :, ::2],
    ):
        facts.append(
            [
                tuple(t.stride()),
                t.is_contiguous(),
                t.is_contiguous(memory_format=m.channels_last),
            ]
        )
    v = m.arange(2 * 3 * 2 * 2 * 2, dtype=m.float64).reshape(2, 3, 2, 2, 2)
    v3 = v.contiguous(memory_format=m.channels_last_3d)
    facts.append([tuple(v3.stride()), v3.is_contiguous(memory_format=m.channels_last_3d)])
    last.add_(1.0)  # an in-place op keeps the layout
    facts.append([tuple(last.stride()), last, c.permute(0, 2, 3, 1).clone().stride()])
    return facts


def elementwise_layout(m: Any) -> list:
    c = m.ones(2, 3, 2, 2, dtype=m.float64).contiguous(memory_format=m.channels_last)
    x = _x(m)
    y = m.ones(4, 3, dtype=m.float64)
    return [
        tuple((c + 1).stride()),
        tuple(c.double().stride()),
        tuple(m.where(c > 0, c, 0.0).stride()),
        tuple(x.t().exp().stride()),
        tuple((x.t() * x.t()).stride()),
        tuple((x.t() + y).stride()),
        tuple((y + x.t()).stride()),
        tuple((x.t() + 1).sum(0).stride()),
        tuple((x.t() + m.arange(3.0, dtype=m.float64)).stride()),
        (x.t() * m.arange(3.0, dtype=m.float64)).tolist(),
        tuple(m.maximum(c, c.permute(0, 1, 3, 2).transpose(2, 3)).stride()),
        (x.t() * 2).tolist(),
    ]


def strided(m: Any) -> list:
    x = _x(m)
    s = x.as_strided((2, 2), (1, 4), 1)
    u = x.t().as_strided((3, 2), (2, 1), 2)
    e = m.empty_strided((2, 3), (1, 2), dtype=m.float64)
    n = m.ones(1, dtype=m.float64).new_empty_strided((2, 3, 4), (1, 2, 6))
    s[0, 1] = -1.0  # as_strided writes reach x
    return [
        [tuple(s.stride()), s.storage_offset(), s],
        [tuple(u.stride()), u.storage_offset(), u],
        [tuple(e.stride()), e.is_contiguous(), tuple(n.stride())],
        x,
    ]


def addresses(m: Any) -> list:
    x = _x(m)
    at = x.data_ptr()
    return [
        x[1].data_ptr() - at,
        x.t()[2].data_ptr() - at,
        x[1:, 2:].data_ptr() - at,
        x.as_strided((2,), (1,), 5).data_ptr() - at,
        x.diagonal(1).data_ptr() - at,
        x.clone().storage_offset(),
    ]


def out_overlap(m: Any) -> list:
    x = _x(m)
    disjoint = m.add(x[1], 1.0, out=x[0])  # torch allows it: x[0] and x[1] do not meet
    return [
        _raises(lambda: m.index_select(x, 0, m.tensor([0, 2]), out=x[1:3])),
        _raises(lambda: m.index_select(x[0], 0, m.tensor([0, 2]), out=x.view(-1)[1:3])),
        m.index_select(x[0], 0, m.tensor([0, 2]), out=x[1, :2]),
        disjoint,
        x,
    ]


def elementwise_out_overlap(m: Any) -> str:
    x = _x(m)
    return _raises(lambda: m.add(x[0], 1.0, out=x.view(-1)[2:6]))


def saved(m: Any) -> list:
    base = m.arange(12.0, dtype=m.float64)
    grid = base.view(3, 4)
    state = {"w": base, "row": grid[1], "t": grid.t(), "cols": grid[:, 1:3], "step": base[::3]}
    buf = io.BytesIO()
    m.save(state, buf)
    buf.seek(0)
    back = m.load(buf)
    back["w"][5] = -1.0  # every loaded view shares w's memory, as in torch
    return [back[k] for k in ("row", "t", "cols", "step")] + [
        [tuple(back[k].stride()), back[k].storage_offset()] for k in ("row", "t", "cols", "step")
    ]


def gradients(m: Any) -> list:
    w = m.arange(12.0, dtype=m.float64).reshape(3, 4).requires_grad_()
    (w.t() * m.arange(3.0, dtype=m.float64)).sum().backward()
    c = m.ones(1, 2, 2, 3, dtype=m.float64).contiguous(memory_format=m.channels_last)
    c.requires_grad_()
    (c * 2).sum().backward()
    b = m.zeros(4, dtype=m.float64, requires_grad=True)
    b.expand(3, 4).sum().backward()
    return [[tuple(t.grad.stride()), t.grad] for t in (w, c, b)]


CASES = [
    elementwise_out_overlap,
    elementwise_layout,
    views,
    view_rules,
    writes,
    channels_last,
    strided,
    addresses,
    out_overlap,
    saved,
    gradients,
]


def plain(value: Any) -> Any:
    """``value`` with tensors as nested lists (JSON's values, torch's and tensorweaver's)."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def outcomes(m: Any) -> dict[str, Any]:
    found = {}
    for case in CASES:
        try:
            found[case.__name__] = plain(case(m))
        except Exception as e:  # (recorded: the comparison names the case)
            found[case.__name__] = f"{type(e).__name__}: {e}"
    return json.loads(json.dumps(found))


CHILD = """
    import importlib.util, json
    import tensorweaver as tw
    spec = importlib.util.spec_from_file_location("layout_cases", {path!r})
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    tw.set_backend("cunumeric")
    found = cases.outcomes(tw)

    # Legate's own views: the reported strides are cuPyNumeric's .strides (read here only:
    # they copy the array to the host)
    from cupynumeric._thunk.deferred import DeferredArray
    x = tw.arange(24.0, dtype=tw.float64).reshape(2, 3, 4)
    legate = [x.permute(2, 0, 1), x[1], x[:, 1:, 2:], x[0].expand(5, 3, 4),
              x.permute(1, 2, 0)[1:], x.unsqueeze(2)]
    found["legate_strides"] = [
        [list(v.stride()), [s // 8 for s in v.native.strides]] for v in legate
    ]

    # no layout query copies an array to the host
    copies = []
    real = DeferredArray.__numpy_array__
    def counted(self, *args, **kwargs):
        copies.append(1)
        return real(self, *args, **kwargs)
    DeferredArray.__numpy_array__ = counted
    t = x.permute(2, 0, 1)
    t.stride(), t.is_contiguous(), t.storage_offset(), t.data_ptr(), x[1].contiguous()
    x[0].t().reshape(-1), t.contiguous(), x[None].contiguous(memory_format=tw.channels_last)
    DeferredArray.__numpy_array__ = real
    found["host_copies"] = len(copies)
    print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def cunumeric_outcomes() -> dict[str, Any]:
    return run_python(CHILD.format(path=__file__), timeout=120)


@pytest.fixture(scope="module")
def torch_outcomes() -> dict[str, Any]:
    import torch

    return outcomes(torch)


@pytest.mark.parametrize("case", [c.__name__ for c in CASES])
def test_layouts_as_torch(cunumeric_outcomes: dict, torch_outcomes: dict, case: str) -> None:
    assert cunumeric_outcomes[case] == torch_outcomes[case]


def test_strides_of_legate_views_are_its_own(cunumeric_outcomes: dict) -> None:
    found = cunumeric_outcomes["legate_strides"]
    assert len(found) == 6
    for reported, legate in found:
        assert reported == legate


def test_layout_queries_copy_nothing_to_the_host(cunumeric_outcomes: dict) -> None:
    assert cunumeric_outcomes["host_copies"] == 0
