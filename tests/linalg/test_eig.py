"""eig and eigvals against PyTorch: complex results for real and complex input, eigenvectors
compared up to their phases (|v^H v_torch| = 1, |V|, A V = V diag(L)), gradients of
phase-invariant losses (also by finite differences), PyTorch's error for a loss that depends
on the phases, batches (empty too), 1 x 1, and the core's own path (the host fallback, and
the composition the torch backend replaces with one torch call)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices
from tensor_reference import host, raises_like_torch
from tensorweaver.ops import host_fallback
from tensorweaver.ops.fusion import reference_only
from tensorweaver.ops.host_fallback import HostFallbackWarning

DTYPES = ["float64", "float32", "complex128", "complex64"]


def _input(shape: tuple[int, ...], dtype: str = "float64", seed: int = 0) -> np.ndarray:
    """Random matrices (complex ones for a complex dtype) with well separated eigenvalues."""
    a = matrices(shape, seed)
    if dtype.startswith("complex"):
        a = a + 1j * np.random.default_rng(seed + 1).standard_normal(shape)
    return a


def _parts(m: Any, z: Any) -> Any:
    """Real and imaginary parts side by side (torch's backward of view_as_real fails on
    empty tensors)."""
    return m.cat([z.real, z.imag], -1)


def _values(m: Any, a: Any) -> Any:
    return _parts(m, m.linalg.eig(a).eigenvalues)


def _eigvals(m: Any, a: Any) -> Any:
    return _parts(m, m.linalg.eigvals(a))


def _moduli(m: Any, a: Any) -> Any:
    """|V| and the eigenvalues: invariant under each eigenvector's phase."""
    values, vectors = m.linalg.eig(a)
    return m.cat([vectors.abs(), values.real.unsqueeze(-2), values.imag.unsqueeze(-2)], -2)


def _weighted(m: Any, a: Any) -> Any:
    """sum_i |V_ki|^2 exp(L_i): phase-invariant, and invariant under the eigenvalues' order."""
    values, vectors = m.linalg.eig(a)
    return _parts(m, (vectors.abs().square() * values.exp().unsqueeze(-2)).sum(-1))


def _dtype(dtype: str) -> str:
    """The precision of ``dtype``'s parts."""
    return {"complex128": "float64", "complex64": "float32"}.get(dtype, dtype)


@pytest.mark.cunumeric
def test_eig_like_torch_cheap(backend: str) -> None:
    compare(_moduli, _input((3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,), (2, 1)])
def test_eig_like_torch(backend: str, dtype: str, batch: tuple) -> None:
    a = _input((*batch, 4, 4), dtype)
    tol = 1e-8 if _dtype(dtype) == "float64" else 2e-4
    for fn in (_values, _moduli, _weighted):
        compare(fn, a, dtype=dtype, tol=tol)
    compare(_eigvals, a, dtype=dtype, tol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_dtypes_and_phases(backend: str, dtype: str) -> None:
    """Complex results (complex64 for float32) of PyTorch's type; unit eigenvectors equal to
    PyTorch's up to a phase, with A V = V diag(L)."""
    a = _input((2, 5, 5), dtype)
    ours = tw.linalg.eig(tw.tensor(a, dtype=getattr(tw, dtype)))
    theirs = torch.linalg.eig(torch.tensor(a, dtype=getattr(torch, dtype)))
    assert type(ours).__name__ == type(theirs).__name__ == "linalg_eig"
    assert ours._fields == ("eigenvalues", "eigenvectors")
    want = np.complex128 if _dtype(dtype) == "float64" else np.complex64
    values, vectors = host(ours.eigenvalues), host(ours.eigenvectors)
    assert values.dtype == vectors.dtype == want
    assert str(ours.eigenvalues.dtype).split(".")[-1] == str(theirs.eigenvalues.dtype)[6:]
    tol = 1e-10 if want == np.complex128 else 1e-4
    overlap = np.abs(np.sum(vectors.conj() * theirs.eigenvectors.numpy(), -2))
    np.testing.assert_allclose(overlap, 1, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-2), 1, atol=tol)
    np.testing.assert_allclose(a @ vectors, vectors * values[..., None, :], atol=10 * tol)
    np.testing.assert_allclose(host(tw.linalg.eigvals(tw.tensor(a))), values, atol=tol)


def test_eig_real_eigenvalues_stay_complex(backend: str) -> None:
    a = np.diag([1.0, -2.0, 3.0]) + np.triu(np.ones((3, 3)), 1)
    for fn in (lambda m, a: m.linalg.eig(a).eigenvectors, lambda m, a: m.linalg.eigvals(a)):
        ours, theirs = fn(tw, tw.tensor(a)), fn(torch, torch.tensor(a))
        assert ours.dtype == tw.complex128 and theirs.dtype == torch.complex128
    compare(_weighted, a)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (1, 1), (3, 1, 1)])
def test_eig_empty_and_one_by_one(backend: str, shape: tuple) -> None:
    a = _input(shape)
    compare(_values, a)
    compare(_moduli, a)
    compare(_eigvals, a)


def test_eig_gradients_by_finite_differences(backend: str) -> None:
    def real_input(a: tw.Tensor) -> tw.Tensor:
        return _weighted(tw, a)

    def complex_input(re: tw.Tensor, im: tw.Tensor) -> tw.Tensor:
        return _moduli(tw, tw.complex(re, im))

    gradcheck(real_input, _input((2, 3, 3)))
    gradcheck(complex_input, _input((2, 3, 3)), _input((2, 3, 3), seed=5))
    gradcheck(lambda a: _eigvals(tw, a), _input((3, 3)))


def test_eig_second_order(backend: str) -> None:
    gradgradcheck(lambda a: _eigvals(tw, a), _input((3, 3)))
    gradgradcheck(lambda a: _weighted(tw, a), _input((3, 3)))
    re, im = _input((3, 3)), _input((3, 3), seed=5)
    gradgradcheck(lambda re, im: _weighted(tw, tw.complex(re, im)), re, im)


def _numpy(m: Any, t: Any) -> np.ndarray:
    return host(t.detach()) if m is tw else t.detach().numpy()


#: Phase-invariant losses of eig's outputs: both, the eigenvalues alone, the vectors alone.
LOSSES: dict[str, Any] = {
    "both": lambda m, a: _weighted(m, a),
    "values": lambda m, a: _parts(m, m.linalg.eig(a).eigenvalues.square()),
    "vectors": lambda m, a: m.linalg.eig(a).eigenvectors.abs().pow(3),
}


def _first(m: Any, a: np.ndarray, retain_graph: bool | None = None, loss: str = "both") -> tuple:
    """A leaf of ``a`` and the first derivatives (with create_graph) of a phase-invariant
    loss of eig's outputs."""
    leaf = m.tensor(a, requires_grad=True)
    out = LOSSES[loss](m, leaf)
    weights = m.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)))
    (g,) = m.autograd.grad(
        (out * weights).sum(), [leaf], create_graph=True, retain_graph=retain_graph
    )
    return leaf, g


def _second(m: Any, leaf: Any, g: Any) -> np.ndarray:
    """The second derivatives: the gradient of a real loss of the first ones."""
    w = m.tensor(np.random.default_rng(4).standard_normal(tuple(g.shape)))
    loss = g * w + g.imag * w.flip(-1) if g.is_complex() else g * w
    loss.real.sum().backward()
    return _numpy(m, leaf.grad)


def _derivatives(m: Any, a: np.ndarray, loss: str = "both") -> tuple:
    leaf, g = _first(m, a, loss=loss)
    return _numpy(m, g), _second(m, leaf, g)


@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_double_backward_like_torch(backend: str, dtype: str, loss: str) -> None:
    """The second backward reaches eig once with the whole gradient of each output (on
    torch:cpu, the backend's own eig node), so the phase check passes as in PyTorch."""
    a = _input((2, 3, 3), dtype)
    for ours, theirs in zip(_derivatives(tw, a, loss), _derivatives(torch, a, loss)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)


def test_eig_double_backward_without_fused_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a backend without fused_linalg_outputs_backward too: one node for both outputs, as
    torch's LinalgEigBackward0."""
    from tensorweaver_torch.linalg import LinearAlgebra

    monkeypatch.delattr(LinearAlgebra, "fused_linalg_outputs_backward")
    a = _input((2, 3, 3), "complex128")
    with tw.device("torch:cpu"):
        outs = tw.linalg.eig(tw.tensor(a, requires_grad=True))
        assert outs[0].grad_fn is outs[1].grad_fn
        ours = _derivatives(tw, a)
    for mine, theirs in zip(ours, _derivatives(torch, a)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-11)


def test_eig_two_create_graph_passes_like_torch(backend: str) -> None:
    """Two first-derivative graphs of one eig whose eigenvalues the program dropped: the
    second backward through both sums their gradients of each output."""
    a = _input((2, 3, 3), "complex128")

    def second(m: Any, a: Any) -> Any:
        vectors = m.linalg.eig(a.requires_grad_()).eigenvectors
        (g1,) = m.autograd.grad(vectors.abs().pow(3).sum(), [a], create_graph=True)
        (g2,) = m.autograd.grad((vectors.abs() * 2).sum(), [a], create_graph=True)
        ((g1.real**2).sum() + (g2.imag * g1.real).sum()).backward()
        return a.grad

    compare(second, a, dtype="complex128", grad=False, tol=1e-8)


def test_eig_create_graph_without_retain_graph(backend: str) -> None:
    """retain_graph=False frees eig's nodes as it goes: the first derivatives are still
    PyTorch's, and a second backward through the freed graph fails as in PyTorch."""
    a = _input((2, 3, 3), "complex128")
    ours, theirs = _first(tw, a, False), _first(torch, a, False)
    np.testing.assert_allclose(_numpy(tw, ours[1]), _numpy(torch, theirs[1]), rtol=1e-9)
    for m, (leaf, g) in ((torch, theirs), (tw, ours)):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            _second(m, leaf, g)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_phase_dependent_loss_raises_like_torch(backend: str, dtype: str) -> None:
    # a real matrix with a pair of complex eigenvalues 1 +- 2i (real eigenvectors' phases
    # do not change a real loss to first order)
    p = matrices((2, 3, 3))
    a = p @ np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 3.0]]) @ np.linalg.inv(p)
    if dtype == "complex128":
        a = _input((2, 3, 3), dtype)
    for loss in (lambda v: v.real.sum(), lambda v: v.imag.sum(), lambda v: v[..., 0, :].real):

        def backward(m: Any, a: Any, loss: Any = loss) -> None:
            loss(m.linalg.eig(a.requires_grad_()).eigenvectors).sum().backward()

        raises_like_torch(backward, a, match=["linalg_eig_backward", "e\\^\\{i phi\\}"])


def test_eig_errors_like_torch(backend: str) -> None:
    for fn in (lambda m, a: m.linalg.eig(a), lambda m, a: m.linalg.eigvals(a)):
        raises_like_torch(fn, np.ones((2, 3)), match=["square", "2 by 3"])
        raises_like_torch(fn, np.ones((2, 4, 3)), match=["square"])
        raises_like_torch(fn, np.ones(3), match=["at least 2 dimensions"])
    ours = raises_like_torch(lambda m, a: m.linalg.eig(a), np.ones((2, 2), np.int64))
    assert "linalg.eig" in str(ours)


def test_eig_through_the_core_on_torch() -> None:
    """On torch:cpu, eig runs as one torch call; the core's composition (reference_only) gives
    the same values and gradients."""
    a = _input((2, 4, 4), "complex128")
    with tw.device("torch:cpu"):
        compare(_weighted, a, dtype="complex128", tol=1e-8)
        with reference_only():
            compare(_weighted, a, dtype="complex128", tol=1e-8)
            compare(_eigvals, a.real)


def test_eig_host_fallback(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    native = tw.zeros(1).backend
    for name in ("linalg_eig", "linalg_function"):
        monkeypatch.setattr(native, name, None, raising=False)
    monkeypatch.setattr(host_fallback, "_warned", set())
    a = _input((2, 4, 4))
    if backend == "numpy":
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # host arrays already: nothing to warn about
            compare(_weighted, a)
        return
    with pytest.warns(HostFallbackWarning, match="linalg_eig"):
        compare(_weighted, a)
    compare(_moduli, a.astype(np.float32), dtype="float32", tol=2e-4)
    assert tw.linalg.eig(tw.tensor(a, dtype=tw.float32)).eigenvalues.dtype == tw.complex64


def test_eig_repeated_eigenvalues_like_torch(backend: str) -> None:
    """A function that weighs equal eigenvalues equally stays differentiable there."""
    p = matrices((3, 3))
    a = p @ np.diag([1.0, 2.0, 2.0]) @ np.linalg.inv(p)
    compare(lambda m, a: m.linalg.eigvals(a).square().sum().real, a, tol=1e-6)
