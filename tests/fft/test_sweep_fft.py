"""A seeded sweep of ``tw.fft`` against ``torch.fft``: every transform over float32/64 and
complex64/128 inputs (integers too), ``n``/``s`` below, at and above the size, positive and
negative ``dim``, every ``norm``, empty batches, and non-contiguous inputs (transposed,
sliced, broadcast); values, dtypes and the gradients of a real loss.

The suite runs a deterministic share of the cases (``TW_SWEEP_SHARE``, default 1 in 3;
``TW_SWEEP_SHARE=1`` runs them all)."""

from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from fft_reference import assert_close, host, loss, values
from tensor_reference import builtin_class

SHARE = int(os.environ.get("TW_SWEEP_SHARE", "3"))
DTYPES = ("float32", "float64", "complex64", "complex128")
NORMS = (None, "backward", "ortho", "forward")
LAYOUTS = ("C", "T", "slice", "expand")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn")
N_D += ("hfftn", "ihfftn")
REAL_ONLY = ("rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn")


def laid_out(m: Any, x: np.ndarray, how: str, grad: bool) -> tuple[Any, Any]:
    """(leaf, input): ``x`` contiguous, as a transposed view, every other element of its last
    dimension, or broadcast along its first."""
    if how == "T" and x.ndim >= 2:
        leaf = m.tensor(np.swapaxes(x, -1, -2).copy(), requires_grad=grad)
        return leaf, leaf.transpose(-1, -2)
    if how == "slice":
        wide = np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype)
        wide[..., ::2] = x
        leaf = m.tensor(wide, requires_grad=grad)
        return leaf, leaf[..., ::2]
    if how == "expand" and x.ndim >= 2 and x.shape[0] > 1:
        leaf = m.tensor(x[:1].copy(), requires_grad=grad)
        return leaf, leaf.expand(*x.shape)
    leaf = m.tensor(x, requires_grad=grad)
    return leaf, leaf


class Case:
    def __init__(self, name: str, dtype: str, shape: tuple, how: str, kwargs: dict) -> None:
        self.name, self.dtype, self.shape, self.how, self.kwargs = name, dtype, shape, how, kwargs
        self.id = f"{name}-{dtype}-{'x'.join(map(str, shape))}-{how}-{kwargs}"

    def check(self) -> None:
        seed = zlib.crc32(self.id.encode())
        x = values(self.shape, "float64" if self.dtype == "int64" else self.dtype, seed)
        if self.dtype == "int64":
            x = np.round(x * 3).astype("int64")
        grad = x.dtype.kind in "fc" and x.dtype.itemsize in (8, 16) and min(self.shape) > 0
        results = []
        for m in (torch, tw):
            leaf, inp = laid_out(m, x, self.how, grad)
            try:
                y = getattr(m.fft, self.name)(inp, **self.kwargs)
            except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
                results.append((e, leaf))
                continue
            if grad:
                loss(m, y).backward()
            results.append((y, leaf))
        (theirs, t_leaf), (ours, o_leaf) = results
        if isinstance(theirs, Exception) and "MKL FFT error" in str(theirs):
            # PyTorch's CPU kernel refuses an empty batch; the transform of nothing is empty
            assert not isinstance(ours, Exception), f"{self.id}: raised {ours!r}"
            assert ours.numel() == 0, f"{self.id}: {tuple(ours.shape)} from an empty batch"
            return
        if isinstance(theirs, Exception):
            assert isinstance(ours, builtin_class(theirs)), f"{self.id}: {ours!r} for {theirs!r}"
            return
        assert not isinstance(ours, Exception), f"{self.id}: raised {ours!r}"
        want = str(theirs.dtype).removeprefix("torch.")
        assert_close(host(ours), host(theirs), want, self.id)
        if grad:
            assert_close(host(o_leaf.grad), host(t_leaf.grad), x.dtype.name, f"grad {self.id}")


def cases() -> list[Case]:
    out = []
    k = 0
    for name in ONE_D:
        for dtype in (*DTYPES, "int64"):
            if name in REAL_ONLY and dtype.startswith("complex"):
                continue
            for shape in ((6,), (3, 5), (0, 4), (2, 3, 8)):
                for n in (None, 3, 10):
                    for dim in (-1, 0):
                        norm = NORMS[k % 4]
                        how = LAYOUTS[k % 4]
                        k += 1
                        kwargs = {"n": n, "dim": dim, "norm": norm}
                        out.append(Case(name, dtype, shape, how, kwargs))
    for name in N_D:
        for dtype in (*DTYPES, "int64"):
            if name in REAL_ONLY and dtype.startswith("complex"):
                continue
            for shape in ((4, 6), (2, 3, 5), (0, 3, 4)):
                for s, dim in ((None, None), ((3, 8), (-1, 0)), ((5,), (1,)), (None, (-2,))):
                    if name.endswith("2") and s is None and dim is None:
                        kwargs: dict = {}
                    elif name.endswith("2") and dim is not None and len(dim) == 1:
                        continue
                    else:
                        kwargs = {"s": s, "dim": dim}
                    kwargs["norm"] = NORMS[k % 4]
                    how = LAYOUTS[k % 4]
                    k += 1
                    out.append(Case(name, dtype, shape, how, kwargs))
    for name in ("fftshift", "ifftshift"):
        for dim in (None, 0, (-1, 0), -2):
            for shape in ((5,), (3, 4), (2, 3, 5)):
                if dim is not None and len(shape) < 2:
                    continue
                out.append(Case(name, "float64", shape, LAYOUTS[k % 4], {"dim": dim}))
                k += 1
    return out


CASES = cases()
SHARED = [c for c in CASES if zlib.crc32(c.id.encode()) % SHARE == 0]


@pytest.mark.parametrize("case", SHARED, ids=[c.id for c in SHARED])
def test_sweep(backend: str, case: Case) -> None:
    case.check()


CHEAP = SHARED[:: 8 * SHARE]


@pytest.mark.cunumeric
@pytest.mark.parametrize("case", CHEAP, ids=[c.id for c in CHEAP])
def test_sweep_share_everywhere(backend: str, case: Case) -> None:
    """A few cases on every backend, cuPyNumeric included."""
    case.check()


#: One dtype a transform: real input where it must be, or where PyTorch composes (ifft)
OUT_CASES = [
    (name, "float32" if name in (*REAL_ONLY, "ifft", "fft2") else "complex128")
    for name in (*ONE_D, *N_D)
]


@pytest.mark.parametrize(("name", "dtype"), OUT_CASES)
def test_out(backend: str, name: str, dtype: str) -> None:
    """``out=``: the transform written into an empty tensor of the result's dtype (resized),
    returned; another dtype of its kind takes the values cast, others and an input that
    requires grad raise as on PyTorch."""
    x = values((3, 4), dtype, zlib.crc32(name.encode()))
    want = getattr(torch.fft, name)(torch.tensor(x))
    out = tw.empty(0, dtype=getattr(tw, str(want.dtype).removeprefix("torch.")))
    got = getattr(tw.fft, name)(tw.tensor(x), out=out)
    assert got is out
    assert_close(host(out), host(want), str(want.dtype).removeprefix("torch."), name)
    for other in ("float16", "float64", "int32", "complex64", "complex128"):  # cast or refused
        outs = [m.empty(0, dtype=getattr(m, other)) for m in (torch, tw)]
        found = []
        for m, o in zip((torch, tw), outs):
            try:
                getattr(m.fft, name)(m.tensor(x), out=o)
                found.append(None)
            except RuntimeError as e:
                found.append(type(e))
        assert found[0] == found[1], f"{name} into {other}: PyTorch {found[0]}, ours {found[1]}"
        if found[0] is None:  # both cast the same values (float16's precision at worst)
            theirs = host(outs[0])
            assert host(outs[1]).dtype == theirs.dtype, f"{name} into {other}"
            scale = float(np.abs(theirs).max(initial=1.0))
            np.testing.assert_allclose(host(outs[1]), theirs, rtol=1e-3, atol=1e-3 * scale)
    grad = x.dtype.kind in "fc"
    errors = []
    for m in (torch, tw):  # an input that requires grad (ihfft's out joins the graph)
        leaf = m.tensor(x, requires_grad=grad)
        try:
            getattr(m.fft, name)(leaf, out=m.empty(0, dtype=getattr(m, str(want.dtype)[6:])))
            errors.append(None)
        except RuntimeError as e:
            errors.append(type(e))
    assert errors[0] == errors[1], f"{name}: PyTorch {errors[0]}, ours {errors[1]}"


@pytest.mark.parametrize("name", (*ONE_D, *N_D))
def test_out_with_keywords(name: str) -> None:
    """``out=`` beside every argument given by keyword, and beside the defaults (a 2-d
    transform of a 3-d input: its default dims), as PyTorch's."""
    dtype = "float64" if name in REAL_ONLY else "complex128"
    x = values((2, 3, 4), dtype, zlib.crc32(name.encode()))
    size = {"n": 4} if name in ONE_D else {"s": (3, 4)}
    keywords = {**size, "dim": -1 if name in ONE_D else (-2, -1), "norm": "ortho"}
    for kwargs in ({}, keywords):
        want = getattr(torch.fft, name)(input=torch.tensor(x), **kwargs)
        out = tw.empty(0, dtype=getattr(tw, str(want.dtype).removeprefix("torch.")))
        got = getattr(tw.fft, name)(input=tw.tensor(x), **kwargs, out=out)
        assert got is out, name
        assert_close(host(out), host(want), str(want.dtype).removeprefix("torch."), name)
