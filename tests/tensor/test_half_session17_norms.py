"""Normalization parameters' dtypes as torch 2.13's CPU kernels take them (session 17).

PyTorch's rule (ATen's "mixed dtype" check): the first given parameter decides; of another
dtype than the input, every given parameter must be float32 and the input float16 or
bfloat16; of the input's dtype, every other one must be too ("expected scalar type Half but
found Float", naming the first the kernel reads: the running statistics in training, the
affine map in eval). Before session 17 batch_norm and group_norm computed with any mix (a
float64 input with float16 statistics, a float16 input with float64 weights...), layer_norm
raised with another message, and an integer input gave an integer result or mean()'s error.
"""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

FLOATS = ("float16", "bfloat16", "float32", "float64")
PARAMS = (*FLOATS, None)


def _make(m: Any, values: np.ndarray, dtype: str | None) -> Any:
    return None if dtype is None else m.tensor(values, dtype=getattr(m, dtype))


def _outcome(m: Any, call: Any) -> tuple[str, Any]:
    try:
        y = call(m)
    except (RuntimeError, ValueError, NotImplementedError, IndexError) as e:
        return type(e).__name__, str(e)
    return "ok", (y.dtype, np.asarray(y.detach().double().numpy()))


def _assert_like(spec: str, call: Any, dtypes_used: tuple) -> None:
    kind, want = _outcome(torch, call)
    with entered(spec):
        if any(d and getattr(tw, d) not in tw.empty(0).backend.dtypes for d in dtypes_used):
            return  # (NumPy has no bfloat16)
        got_kind, got = _outcome(tw, call)
    assert got_kind == kind, (got_kind, got)
    if kind != "ok":
        assert want in got  # torch's message is the gist of ours
        return
    assert str(got[0]).split(".")[-1] == str(want[0]).split(".")[-1]
    # values: the half results are rounded once from float32 on both sides; float32 and
    # float64 ones may differ by the order torch's kernels sum in
    np.testing.assert_allclose(got[1], want[1], rtol=2e-3, atol=2e-3)


def _batch_norm_cases() -> list[tuple]:
    rng = np.random.default_rng(17)
    every = list(itertools.product(FLOATS, PARAMS, PARAMS, PARAMS, (True, False)))
    picked = [every[i] for i in rng.choice(len(every), 80, replace=False)]
    # named: each message once, and both read orders
    return picked + [
        ("float16", "float32", "float32", "float32", True),  # mixed, accepted
        ("float16", None, None, "float32", False),  # mixed, accepted
        ("float64", None, "float32", "float32", True),  # all inputs must share
        ("float16", "float16", "float64", "float32", True),  # the statistics are read first
        ("float16", "float16", "float64", "float32", False),  # the weight first
        ("float32", "float16", None, None, True),
    ]


@pytest.mark.parametrize("spec", FAST)
def test_batch_norm_parameter_dtypes_as_torch(spec: str) -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 3, 2)), rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    mean, var = rng.standard_normal(3) * 0.1, rng.uniform(0.5, 1.5, 3)
    for xd, wd, bd, sd, training in _batch_norm_cases():
        if sd is None and not training:
            continue  # (eval needs the statistics: another check)

        def call(
            m: Any, xd: str = xd, wd: Any = wd, bd: Any = bd, sd: Any = sd, tr: bool = training
        ) -> Any:
            stats = _make(m, mean, sd), _make(m, var, sd)
            return m.nn.functional.batch_norm(
                _make(m, x, xd), *stats, _make(m, w, wd), _make(m, b, bd), training=tr
            )

        _assert_like(spec, call, (xd, wd, bd, sd))


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("fn", ["layer_norm", "group_norm"])
def test_affine_norm_parameter_dtypes_as_torch(spec: str, fn: str) -> None:
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((3, 4, 2)), rng.uniform(0.5, 1.5, 4), rng.standard_normal(4)
    for xd, wd, bd in itertools.product(("float16", "float32", "float64"), PARAMS, PARAMS):

        def call(m: Any, xd: str = xd, wd: Any = wd, bd: Any = bd) -> Any:
            args = _make(m, x, xd), _make(m, w, wd), _make(m, b, bd)
            if fn == "layer_norm":
                return m.nn.functional.layer_norm(args[0].transpose(1, 2), (4,), *args[1:])
            return m.nn.functional.group_norm(args[0], 2, *args[1:])

        _assert_like(spec, call, (xd, wd, bd))


REFUSALS = {
    # before: computed (torch: ValueError)
    "one running statistic": lambda m: m.nn.functional.batch_norm(
        m.ones(4, 3), m.zeros(3), None, training=True
    ),
    # before: a broadcasting error of mul (torch names the parameter and the sizes)
    "statistic size": lambda m: m.nn.functional.batch_norm(m.ones(4, 3), m.zeros(2), m.ones(3)),
    "weight size": lambda m: m.nn.functional.batch_norm(
        m.ones(4, 3), m.zeros(3), m.ones(3), m.ones(2, dtype=m.float64)
    ),
    # before: mean()'s RuntimeError, or an int64 result (layer_norm)
    "integer batch_norm": lambda m: m.nn.functional.batch_norm(
        m.ones(4, 3, dtype=m.int64), None, None, training=True
    ),
    "bool batch_norm": lambda m: m.nn.functional.batch_norm(
        m.ones(4, 3, dtype=m.bool), None, None, training=True
    ),
    "integer layer_norm": lambda m: m.nn.functional.layer_norm(m.ones(4, 3, dtype=m.int64), (3,)),
    "integer group_norm": lambda m: m.nn.functional.group_norm(m.ones(4, 4, dtype=m.int64), 2),
}


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("name", list(REFUSALS))
def test_norm_refusals_as_torch(spec: str, name: str) -> None:
    _assert_like(spec, REFUSALS[name], ())


@pytest.mark.xfail(
    strict=True,
    reason="torch's float16 layer_norm with float32 weight/bias sums their gradients row by "
    "row in float16 per thread (at 1 thread: sequential float16 sums; with 4 threads a (4, 8) "
    "input gives the float32 sum), up to ~1.5e-2 relative off the float32 sum tw returns: a "
    "thread-count-dependent result, not matched on purpose (emulating it takes one op a row)",
)
@pytest.mark.parametrize("spec", FAST)
def test_mixed_layer_norm_parameter_gradients_as_torch_one_thread(spec: str) -> None:
    rng = np.random.default_rng(4)
    x, g = rng.standard_normal((64, 32)) * 3 + 1, rng.standard_normal((64, 32))
    w, b = rng.standard_normal(32), rng.standard_normal(32)
    grads = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for m in (torch, tw):
            with entered(spec) if m is tw else nullcontext():
                xt = m.tensor(x, dtype=m.float16, requires_grad=True)
                wt = m.tensor(w, dtype=m.float32, requires_grad=True)
                bt = m.tensor(b, dtype=m.float32, requires_grad=True)
                m.nn.functional.layer_norm(xt, (32,), wt, bt).backward(m.tensor(g, dtype=m.float16))
                grads[m] = [np.asarray(t.grad.double().numpy()) for t in (xt, wt, bt)]
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(grads[tw][0], grads[torch][0])  # (the input's: equal)
    np.testing.assert_array_equal(grads[tw][1], grads[torch][1])
    np.testing.assert_array_equal(grads[tw][2], grads[torch][2])
