"""torch.special's functions without a gradient are optional primitives of the IR (API 2.6):
each has a row in ``OPTIONAL`` (they had none, so ``tw check`` and the kit did not cover them),
a kit case, the torch plugin's native kernel, and the host's answer on a backend without it."""

from __future__ import annotations

import warnings

import numpy as np
import tensorweaver as tw
import torch
from tensorweaver.check.cases import special as kit
from tensorweaver.contract.ir import OPTIONAL, REQUIRED
from tensorweaver.ops.host_fallback import HostFallbackWarning

NAMES = [*kit.UNARY_CONSTANTS, *kit.POLYNOMIALS]


def test_every_function_without_gradient_is_an_optional_row_with_a_kit_case() -> None:
    public = {n for n in tw.special.__all__ if n == "airy_ai" or "bessel" in n}
    public |= {n for n in tw.special.__all__ if "_polynomial_" in n}
    assert public == set(NAMES)
    for name in NAMES:
        assert name in OPTIONAL and name not in REQUIRED, name
        assert OPTIONAL[name].startswith(f"{name}("), name
        assert name in kit.CASES, name
    assert {"constants", "polynomials"} <= set(kit.CASES)


def test_torch_serves_them_natively_and_numpy_through_the_host() -> None:
    with tw.device("torch:cpu"):
        backend = tw.zeros(1).backend
    assert all(callable(getattr(backend, n, None)) for n in NAMES)
    with tw.device("numpy"):
        backend = tw.zeros(1).backend
        assert not any(hasattr(backend, n) for n in NAMES)
        x = np.array([0.25, 1.5])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HostFallbackWarning)
            ours = tw.special.airy_ai(tw.tensor(x))
        np.testing.assert_allclose(
            np.asarray(ours), torch.special.airy_ai(torch.tensor(x)).numpy(), rtol=1e-14
        )
