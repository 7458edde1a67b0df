"""Review of session 19's commits (setitem's value check, the fused LSTM's one-node split,
``clip_grad_norm_`` in place, the NumPy backend's BLAS-staged sums), each case against torch
2.13: the defects found (fixed, or strict xfails naming where the fix belongs) and the cases
the changes had to keep right."""

from __future__ import annotations

import enum

import numpy as np
import pytest
import tensorweaver as tw
import torch

BACKENDS = ["numpy", "torch:cpu"]


# ------------------------------------------------------------------------ x[...] = value


class _Index:
    """An integer only through ``__index__`` (no int subclass)."""

    def __index__(self) -> int:
        return 2


class _Small(enum.IntEnum):
    THREE = 3


class _Int(int):
    pass


class _Float(float):
    pass


def _assigned(lib: object, dtype: str, value: object, device: str) -> object:
    """``x[1:] = value`` on a zeros(3) of ``dtype``: its values, or the exception's class."""
    kwargs = {} if lib is torch else {"device": device}
    x = lib.zeros(3, dtype=getattr(lib, dtype), **kwargs)
    try:
        x[1:] = value
    except Exception as e:  # (the class is what is compared)
        return type(e)
    return x.tolist()


ACCEPTED = {
    "np.int64": lambda lib: np.int64(-3),
    "np.uint8": lambda lib: np.uint8(200),
    "np.float64": lambda lib: np.float64(2.5),
    "np.complex128": lambda lib: np.complex128(1 + 2j),
    "bool": lambda lib: True,
    "IntEnum": lambda lib: _Small.THREE,
    "int subclass": lambda lib: _Int(4),
    "float subclass": lambda lib: _Float(1.5),
    "0-d tensor of another dtype": lambda lib, **on: lib.tensor(7, **on),
    "tensor of another dtype": lambda lib, **on: lib.tensor([True, False], **on),
    "nan": lambda lib: float("nan"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64", "bool"])
@pytest.mark.parametrize("value", sorted(ACCEPTED))
def test_setitem_takes_every_value_torch_takes(backend: str, dtype: str, value: str) -> None:
    if dtype != "complex64" and value == "np.complex128":
        pytest.skip("torch refuses a complex value into a real tensor (not this check's case)")
    make = ACCEPTED[value]
    theirs = _assigned(torch, dtype, make(torch), "cpu")
    ours = _assigned(
        tw, dtype, make(tw, device=backend) if "tensor" in value else make(tw), backend
    )
    assert str(ours) == str(theirs)


REFUSED = {
    # the check asked operator.index(), which a 0-d NumPy integer array and any object with
    # __index__ pass: x[...] = np.array(2) wrote 2, where torch raises TypeError
    "0-d int array": lambda: np.array(2),
    "__index__ object": _Index,
    "np.float32": lambda: np.float32(1.5),
    "np.bool_": lambda: np.bool_(True),
    "None": lambda: None,
    "list": lambda: [1.0, 2.0],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", sorted(REFUSED))
def test_setitem_refuses_what_torch_refuses(backend: str, value: str) -> None:
    make = REFUSED[value]
    theirs = _assigned(torch, "float32", make(), "cpu")
    ours = _assigned(tw, "float32", make(), backend)
    assert theirs is TypeError
    assert ours is theirs


# before: OverflowError (fill_value's); torch reads the int as a 64-bit one first
@pytest.mark.parametrize("value", [2**70, 2**63, -(2**63) - 1])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_setitem_of_an_int_past_int64_raises_torch_class(value: int, dtype: str) -> None:
    assert _assigned(tw, dtype, value, "numpy") is _assigned(torch, dtype, value, "cpu")


# ------------------------------------------------------------------------- clip_grad_norm_


def _params(lib: object, shapes: list[tuple[int, ...]], device: str) -> list:
    rng = np.random.default_rng(0)
    kwargs = {} if lib is torch else {"device": device}
    params = []
    for shape in shapes:
        p = lib.tensor(rng.standard_normal(shape), requires_grad=True, **kwargs)
        p.grad = lib.tensor(rng.standard_normal(shape) * 10, **kwargs)
        params.append(p)
    return params


def _clip_duplicate(lib: object, device: str, foreach: bool | None) -> np.ndarray:
    a, b = _params(lib, [(3, 4), (5,)], device)
    lib.nn.utils.clip_grad_norm_([a, a, b], 1.0, foreach=foreach)
    return np.concatenate([np.asarray(a.grad).ravel(), np.asarray(b.grad).ravel()])


def _clip_shared(lib: object, device: str, foreach: bool | None) -> np.ndarray:
    a, b = _params(lib, [(3, 4), (3, 4)], device)
    b.grad = a.grad
    lib.nn.utils.clip_grad_norm_([a, b], 1.0, foreach=foreach)
    return np.concatenate([np.asarray(a.grad).ravel(), np.asarray(b.grad).ravel()])


def _clip_overlapping(lib: object, device: str, foreach: bool | None) -> np.ndarray:
    a, b = _params(lib, [(8,), (4,)], device)
    b.grad = a.grad[2:6]
    lib.nn.utils.clip_grad_norm_([a, b], 1.0, foreach=foreach)
    return np.concatenate([np.asarray(a.grad).ravel(), np.asarray(b.grad).ravel()])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("case", [_clip_duplicate, _clip_shared])
def test_clip_grad_norm_scales_a_shared_gradient_once_per_listing(
    backend: str, foreach: bool | None, case: object
) -> None:
    # torch scales each listed gradient in turn (mul_ in a loop, or _foreach_mul_): one
    # listed twice is scaled twice. foreach=False scaled it once (all products computed
    # from the gradients before any was written).
    theirs = case(torch, "cpu", foreach)
    ours = case(tw, backend, foreach)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_grad_norm_scales_overlapping_gradient_views_twice_without_foreach(
    backend: str,
) -> None:
    theirs = _clip_overlapping(torch, "cpu", False)
    ours = _clip_overlapping(tw, backend, False)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_grad_norm_foreach_scales_overlapping_gradient_views_twice(backend: str) -> None:
    theirs = _clip_overlapping(torch, "cpu", None)
    ours = _clip_overlapping(tw, backend, None)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def _clip_mixed(lib: object, device: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    kwargs = {} if lib is torch else {"device": device}
    params = []
    for shape, dtype in [((3, 4), "float32"), ((2,), "float16")]:
        p = lib.zeros(shape, dtype=getattr(lib, dtype), requires_grad=True, **kwargs)
        p.grad = lib.tensor(rng.standard_normal(shape) * 10, **kwargs).to(getattr(lib, dtype))
        params.append(p)
    lib.nn.utils.clip_grad_norm_(params, 1.0)
    return np.asarray(params[1].grad.float())


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_grad_norm_mixed_float16_rounds_once(backend: str) -> None:
    np.testing.assert_array_equal(_clip_mixed(tw, backend), _clip_mixed(torch, "cpu"))


# ------------------------------------------------------ checks the changes had to keep right


def _lstm_grads(lib: object, post: str) -> np.ndarray:
    """An LSTM's first and second derivatives, with in-place writes into its outputs."""
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    if lib is torch:
        module = theirs
    else:
        with tw.device("torch:cpu"):
            module = tw.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
            module.load_state_dict(
                {k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
            )
    kwargs = {} if lib is torch else {"device": "torch:cpu"}
    x = lib.tensor(np.random.default_rng(1).standard_normal((5, 2, 3)), **kwargs)
    x.requires_grad_()
    out, (h, c) = module(x)
    if post == "in place":
        loss = (out.mul_(2) ** 2).sum() + (h.add_(1) ** 3).sum()
    else:  # only the cell state: the output's and h's gradients are None in the node
        loss = (c * c).sum()
    (g,) = lib.autograd.grad(loss, x, create_graph=True)
    (gg,) = lib.autograd.grad((g**2).sum(), x)
    return np.concatenate([np.asarray(g.detach()).ravel(), np.asarray(gg).ravel()])


@pytest.mark.parametrize("post", ["in place", "cell only"])
def test_fused_lstm_pieces_double_backward(post: str) -> None:
    np.testing.assert_allclose(_lstm_grads(tw, post), _lstm_grads(torch, post), rtol=1e-9)


LAYOUTS = {
    "Fortran": np.asfortranarray,
    "negative strides": lambda a: np.flip(np.flip(a, 0).copy(), 0),
    "every other row": lambda a: np.repeat(a, 2, axis=0)[::2],
    "broadcast rows": lambda a: np.broadcast_to(a[:1], a.shape),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_numpy_column_sums_on_any_layout_as_accurate_as_torch(dtype: str, layout: str) -> None:
    # (256, 512): the size the BLAS first stage of _sum_leading takes
    from tensorweaver_numpy.backend import NumpyBackend

    rng = np.random.default_rng(0)
    a = LAYOUTS[layout]((rng.standard_normal((256, 512)) * 1e3 + 1e4).astype(dtype))
    exact = np.asarray(a, np.longdouble).sum(0)
    ours = NumpyBackend.sum(None, a, (0,), False)
    theirs = torch.from_numpy(np.array(a)).sum(0).numpy()
    eps = np.finfo(dtype).eps * float(np.abs(exact).max())
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.abs(ours - exact).max() <= 4 * np.abs(theirs - exact).max() + 8 * eps
