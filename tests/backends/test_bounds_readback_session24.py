"""The optional ``host_aminmax`` (API 2.10): a range check's two extremes read back as Python
numbers in one call. Its values and number types against torch's own ``aminmax`` read with
``.item()``; the same errors as PyTorch (and as the core's other read paths) with it, without
it (``aminmax`` and ``to_host``) and without both (``min`` and ``max``); and a step that
``tw.compile`` traces keeps reading through ``to_host``, which its replay repeats."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch

NAN = float("nan")
#: (torch dtype, values): NaN where the dtype has it, so that both extremes are NaN.
SAMPLES = [
    (torch.bool, [[True, False], [True, True]]),
    (torch.uint8, [[3, 250], [0, 7]]),
    (torch.int32, [[-5, 9], [2, -7]]),
    (torch.int64, [[2**40, -3], [0, 5]]),
    (torch.float16, [[0.5, -2.25], [65504.0, 1.0]]),
    (torch.bfloat16, [[0.5, -3.0], [NAN, 1.0]]),
    (torch.float32, [[1e-3, -math.inf], [2.5, 4.0]]),
    (torch.float64, [[1.0, NAN], [-1.0, 2.0]]),
]


def _same(got: tuple, want: tuple) -> bool:
    return all(
        type(g) is type(w) and (g == w or (g != g and w != w)) for g, w in zip(got, want)
    ) and len(got) == len(want)


@pytest.mark.parametrize("dtype, values", SAMPLES, ids=[str(t)[6:] for t, _ in SAMPLES])
def test_host_aminmax_reads_torchs_aminmax_as_python_numbers(dtype, values):
    ours = tw.tensor(values, device="torch:cpu", dtype=getattr(tw, str(dtype).split(".")[1]))
    theirs = torch.tensor(values, dtype=dtype)
    for a, b in [(ours, theirs), (ours.t(), theirs.t()), (ours[:, 1:], theirs[:, 1:])]:
        want = tuple(v.item() for v in torch.aminmax(b))
        got = ours.backend.host_aminmax(a.native)
        assert type(got) is tuple and _same(got, want), (got, want)


#: The core's three ways to read both extremes: an attribute set to None turns one off.
READ_PATHS = [{}, {"host_aminmax": None}, {"host_aminmax": None, "aminmax": None}]


def _cases(m):
    f = tw.nn.functional if m is tw else torch.nn.functional
    rng = np.random.default_rng(24)
    weight, logits = rng.standard_normal((5, 3)), rng.standard_normal((4, 5))
    probs = rng.uniform(0, 1, (4,))
    return [
        (lambda w, i: f.embedding(i, w), weight, [[0, 5]]),
        (lambda w, i: f.embedding(i, w), weight, [[-1, 2]]),
        (lambda x, t: f.nll_loss(x, t), logits, [0, 1, 5, 2]),
        (lambda x, t: f.nll_loss(x, t), logits, [0, -3, 1, 2]),
        (lambda x, t: f.cross_entropy(x, t), logits, [0, 1, 7, 2]),
        (lambda p, t: f.binary_cross_entropy(p, t), probs, [0.0, 1.5, 0.5, 1.0]),
        (lambda p, t: f.binary_cross_entropy(t, p), probs, [0.0, -0.5, 0.5, 1.0]),
    ]


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_every_read_path_raises_torchs_error_and_the_same_message(device, monkeypatch):
    backend = tw.tensor([0], device=device).backend
    messages: list[list[str]] = []
    for path in READ_PATHS:
        with monkeypatch.context() as patch:
            for name, value in path.items():
                patch.setattr(backend, name, value, raising=False)
            seen = []
            for (fn, arg, bad), (tfn, targ, tbad) in zip(_cases(tw), _cases(torch)):
                with pytest.raises(Exception) as theirs:
                    tfn(torch.tensor(targ), torch.tensor(tbad))
                with pytest.raises(type(theirs.value)) as ours:
                    fn(tw.tensor(arg, device=device), tw.tensor(bad, device=device))
                seen.append(str(ours.value))
            # in range: the loss as torch's
            target = [0, -100, 4, 2]
            logits = _cases(torch)[2][1]
            want = torch.nn.functional.nll_loss(torch.tensor(logits), torch.tensor(target))
            got = F.nll_loss(tw.tensor(logits, device=device), tw.tensor(target, device=device))
            np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
            messages.append(seen)
    assert messages[0] == messages[1] == messages[2]


def test_a_traced_step_reads_through_to_host(monkeypatch):
    # numpy has no host_aminmax: one is lent to its backend object, counting its calls
    weight = tw.tensor(np.random.default_rng(0).standard_normal((6, 2)), device="numpy")
    backend = weight.backend
    calls = []

    def host_aminmax(a):
        calls.append(a)
        return np.min(a).item(), np.max(a).item()

    monkeypatch.setattr(backend, "host_aminmax", host_aminmax, raising=False)
    F.embedding(tw.tensor([[1, 5]], device="numpy"), weight)
    assert len(calls) == 1  # eager: the one call
    step = tw.compile(lambda i: F.embedding(i, weight).sum())
    rng = np.random.default_rng(1)
    for _ in range(4):
        index = rng.integers(0, 6, (2, 3))
        got = step(tw.tensor(index, device="numpy")).item()
        assert got == pytest.approx(np.asarray(weight)[index].sum(), rel=1e-12)
    assert len(calls) == 1  # traced and replayed through aminmax and to_host
    assert step.traces >= 1
    with pytest.raises(IndexError, match="index 6 is out of bounds"):
        step(tw.tensor([[0, 6]], device="numpy"))


def test_numpy_strides_are_layouts_without_the_address():
    base = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    theirs = torch.from_numpy(base.copy())
    backend = tw.tensor([0.0], device="numpy").backend
    for ours, want in [
        (base, theirs),
        (base.transpose(1, 0, 2), theirs.transpose(0, 1)),
        (base[:, 1:, ::2], theirs[:, 1:, ::2]),
        (np.broadcast_to(base[:1], (5, 3, 4)), theirs[:1].expand(5, 3, 4)),
        (base[0, 0, 0, ...], theirs[0, 0, 0]),
    ]:
        assert backend.strides(ours) == backend.layout(ours)[0] == want.stride()
    # a new empty array: None, as layout says (the core takes C order's strides)
    assert backend.strides(np.empty((0, 3))) is backend.layout(np.empty((0, 3))) is None
