"""tw.masked against torch.masked (PyTorch 2.13) on the inputs a user hands over that the
other files do not try: transposed, strided and expanded inputs and masks, masks of integer
and floating dtypes, infinite and NaN entries, float16, negative and fractional norm orders;
values and float64 gradients. Also the identities themselves and the namespace's names."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import (
    assert_like_torch,
    builtin_class,
    grads_like_torch,
    like_torch,
    require,
)

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4))
#: Row 1 fully masked out, so each op's identity (or NaN) shows there.
MASK = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], dtype=bool)
#: -inf, inf and NaN among the masked-in and the masked-out elements.
EXTREME = np.array(
    [[1.0, np.inf, -np.inf, 2.0], [np.nan, 1.0, 3.0, -np.inf], [-np.inf, -np.inf, np.nan, 1e300]]
)
Call = Callable[..., Any]


def _op(name: str) -> Call:
    """``name``'s call with ``dim`` 1 (norm and normalize with ``ord`` 3)."""
    if name in ("norm", "normalize"):
        return lambda m, x, k: getattr(m.masked, name)(x, 3.0, 1, mask=k)
    return lambda m, x, k: getattr(m.masked, name)(x, 1, mask=k)


OPS = {
    name: _op(name)
    for name in (
        "sum prod amax amin argmax argmin mean median logsumexp norm var std "
        "cumsum cumprod softmax log_softmax softmin normalize"
    ).split()
}
#: Whose gradient is PyTorch's (argmax and argmin have none).
DIFFERENTIABLE = sorted(set(OPS) - {"argmax", "argmin"})

#: name -> how the input and the mask reach the op (on the host values X and MASK).
LAYOUTS: dict[str, Callable[[Any, Any, Any], tuple[Any, Any]]] = {
    "transposed": lambda m, x, k: (x.mT.contiguous().mT, k.mT.contiguous().mT),
    "strided": lambda m, x, k: (x[:, ::2], k[:, 1::2]),
    "expanded_input": lambda m, x, k: (x[:1].expand(3, 4), k),
    "expanded_mask": lambda m, x, k: (x, k[2:].expand(3, 4)),
    "mask_int64": lambda m, x, k: (x, k.long()),
    "mask_float": lambda m, x, k: (x, k.double() * 0.5),
    "mask_uint8_row": lambda m, x, k: (x, k[0].to(m.uint8)),
    "mask_0d": lambda m, x, k: (x, m.tensor(False)),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layouts_and_mask_dtypes_like_torch(backend: str, layout: str) -> None:
    arrange = LAYOUTS[layout]
    for fn in OPS.values():
        like_torch(lambda m, x, k, fn=fn: fn(m, *arrange(m, x, k)), X, MASK)
    for name in DIFFERENTIABLE:

        def on_leaf(m: Any, x: Any, fn: Call = OPS[name]) -> Any:
            return fn(m, *arrange(m, x, m.tensor(MASK)))

        grads_like_torch(on_leaf, X)


@pytest.mark.parametrize("name", sorted(OPS))
def test_infinite_and_nan_entries_like_torch(backend: str, name: str) -> None:
    like_torch(lambda m, x, k: OPS[name](m, x, k), EXTREME, MASK)


@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax", "softmin", "amax"])
def test_gradients_through_infinite_entries_like_torch(backend: str, name: str) -> None:
    """-inf entries among the masked-in ones (logsumexp and softmax stay finite) and inf
    among the masked-out ones."""
    values = np.where(MASK, X, np.inf)
    values[0, 0] = values[2, 1] = -np.inf
    grads_like_torch(lambda m, x: OPS[name](m, x, m.tensor(MASK)), values)


@pytest.mark.parametrize("name", sorted(OPS))
def test_float16_like_torch(backend: str, name: str) -> None:
    require("float16")
    like_torch(lambda m, x, k: OPS[name](m, x.half(), k), X, MASK)


@pytest.mark.parametrize("ord", [0, 0.5, 1, 2.5, math.inf, -math.inf])
def test_norm_orders_like_torch(backend: str, ord: float) -> None:
    dense = np.where(np.arange(12).reshape(3, 4) % 5 == 0, 0.0, X)  # zeros among the kept
    like_torch(lambda m, x, k: m.masked.norm(x, ord, 1, mask=k), dense, MASK)
    like_torch(lambda m, x, k: m.masked.normalize(x, ord, 1, mask=k), dense, MASK)
    if ord != 0:  # PyTorch's gradient of the count is undefined (None), not zeros
        grads_like_torch(lambda m, x: m.masked.norm(x, ord, (0, 1), mask=m.tensor(MASK)), X)


@pytest.mark.parametrize("ord", [-1, -0.5])
def test_negative_norm_orders_like_torch(backend: str, ord: float) -> None:
    like_torch(lambda m, x, k: m.masked.norm(x, ord, 1, mask=k), X, MASK)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_boolean_scans_refused_like_torch(backend: str, name: str) -> None:
    with pytest.raises(NotImplementedError):
        OPS[name](torch, torch.tensor(X > 0), torch.tensor(MASK))
    with pytest.raises(NotImplementedError):
        OPS[name](tw, tw.tensor(X > 0), tw.tensor(MASK))


IDENTITY_OPS = (
    "sum cumsum prod cumprod amax argmax logaddexp logsumexp amin argmin mean var std "
    "norm median".split()
)


@pytest.mark.parametrize(
    "dtype", ["bool", "uint8", "int8", "int64", "float16", "float64", "complex64"]
)
def test_reduction_identity_like_torch(backend: str, dtype: str) -> None:
    """Each op's identity on each dtype: value, dtype and device, or PyTorch's error."""
    require(dtype)
    for op in IDENTITY_OPS:
        for args in ((), (-math.inf,)) if op == "norm" else ((),):

            def identity(m: Any, x: Any, op: str = op, args: tuple = args) -> Any:
                return m.masked._reduction_identity(op, x.to(getattr(m, dtype)), *args)

            try:
                theirs = identity(torch, torch.zeros(2))
            except Exception as error:  # noqa: BLE001  (ours must raise its built-in class)
                with pytest.raises(builtin_class(error)):
                    identity(tw, tw.zeros(2))
                continue
            ours = identity(tw, tw.zeros(2))
            if theirs is None:
                assert ours is None, f"{op} on {dtype}: {ours}, PyTorch gives None"
                continue
            assert_like_torch(ours, theirs, f"{op} on {dtype}")
            assert ours.device == tw.zeros(2).device, f"{op} on {dtype}: device {ours.device}"
            # The masked-out element takes the identity, in the dtype PyTorch's where gives.
            combined = like_torch(
                lambda m, x, k, op=op, args=args: m.masked._combine_input_and_mask(
                    getattr(m.masked, op), x.to(getattr(m, dtype)), k, *args
                ),
                np.array([1.0, 2.0]),
                np.array([True, False]),
            )
            assert combined.device == tw.zeros(2).device


def test_namespace_exports_torchs_names() -> None:
    """``from tw.masked import *`` gives PyTorch's functions and no private helper."""
    provided = {name for name in torch.masked.__all__ if callable(getattr(torch.masked, name))}
    prototype = {"MaskedTensor", "as_masked_tensor", "masked_tensor", "is_masked_tensor"}
    assert set(tw.masked.__all__) == provided - prototype
