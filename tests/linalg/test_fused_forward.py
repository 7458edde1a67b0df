"""The torch backend's whole linalg functions without grad (``linalg_function``'s direct call,
which records nothing): the same values as the core's composition of the primitives
(``reference_only``) and as torch's own call, for every function the backend computes whole."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from linalg_reference import matrices, spd
from tensorweaver.ops.fusion import reference_only
from test_fused import CASES, A, S

#: The functions CASES leaves out: name -> (the call on module ``m``, tw or torch; inputs).
MORE: dict[str, tuple[Callable[..., Any], tuple]] = {
    "inv_ex": (lambda m, a: tuple(m.linalg.inv_ex(a)), (A,)),
    "eigvalsh": (lambda m, s: m.linalg.eigvalsh(s, UPLO="U"), (S,)),
    "eigvals": (lambda m, a: m.linalg.eigvals(a), (A,)),
    "eig": (lambda m, a: tuple(m.linalg.eig(a)), (A,)),
    "matrix_rank": (lambda m, a: m.linalg.matrix_rank(a, hermitian=True), (spd((2, 4, 4)),)),
    "solve_ex left": (lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), (A, matrices((4, 2)))),
    "solve_ex right": (
        lambda m, a, b: tuple(m.linalg.solve_ex(a, b, left=False)),
        (A, matrices((2, 3, 4), 1)),
    ),
    "cholesky_ex upper": (lambda m, s: tuple(m.linalg.cholesky_ex(s, upper=True)), (S,)),
    "lu_factor_ex": (lambda m, a: tuple(m.linalg.lu_factor_ex(a)), (A,)),
    "lstsq": (
        lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")),
        (matrices((2, 5, 3)), matrices((2, 5, 2), 1)),
    ),
}


def _values(fn: Callable[..., Any], arrays: tuple) -> list:
    outs = fn(*[tw.tensor(a) for a in arrays])
    return [np.asarray(out) for out in (outs if isinstance(outs, tuple) else (outs,))]


@pytest.mark.parametrize("name", list(CASES))
def test_without_grad_like_the_core_composition(name: str) -> None:
    fn, arrays = CASES[name]
    with tw.device("torch:cpu"):
        fused = _values(fn, arrays)
        with reference_only():
            composed = _values(fn, arrays)
    assert len(fused) == len(composed)
    for ours, theirs in zip(fused, composed):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", list(MORE))
def test_without_grad_like_torch(name: str) -> None:
    fn, arrays = MORE[name]
    with tw.device("torch:cpu"):
        ours = fn(tw, *[tw.tensor(a) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a) for a in arrays])
    ours, theirs = (x if isinstance(x, tuple) else (x,) for x in (ours, theirs))
    assert len(ours) == len(theirs)
    for mine, their in zip(ours, theirs):
        assert tuple(mine.shape) == tuple(their.shape)
        np.testing.assert_allclose(np.asarray(mine), their.numpy(), rtol=1e-10, atol=1e-12)


def test_every_whole_function_is_covered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases above reach every function of the backend's table without grad."""
    from tensorweaver_torch import linalg as torch_linalg

    called: set[str] = set()
    for name, fn in list(torch_linalg._FUNCTIONS.items()):

        def counted(arrays: tuple, static: tuple, _name: str = name, _fn: Any = fn) -> Any:
            called.add(_name)
            return _fn(arrays, static)

        monkeypatch.setitem(torch_linalg._FUNCTIONS, name, counted)
    with tw.device("torch:cpu"):
        for fn, arrays in CASES.values():
            _values(fn, arrays)
        for fn, arrays in MORE.values():
            fn(tw, *[tw.tensor(a) for a in arrays])
    assert called == set(torch_linalg._FUNCTIONS)


@pytest.mark.parametrize("flags", [{"left": 1}, {"unitriangular": 0}, {"left": 1.0}])
def test_solve_triangular_flags_must_be_bools_like_torch(flags: dict) -> None:
    """The plugin's short call for the default ``left`` and ``unitriangular`` tests them by
    identity: 1 or 0.0 still reach torch, whose TypeError names the argument (a truth test
    computed the solve)."""
    a, b = np.eye(3), np.ones((3, 2))
    name = next(iter(flags))
    with pytest.raises(TypeError, match=f"argument '{name}' must be bool") as theirs:
        torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=True, **flags)
    with tw.device("torch:cpu"), pytest.raises(TypeError, match=f"argument '{name}'") as ours:
        tw.linalg.solve_triangular(tw.tensor(a), tw.tensor(b), upper=True, **flags)
    assert str(ours.value) == str(theirs.value)
