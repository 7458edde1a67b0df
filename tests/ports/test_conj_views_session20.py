"""``conj()``, ``mH``, ``adjoint()`` and ``H`` of a complex tensor as PyTorch 2.13 has them:
views with the conjugate bit (``is_conj()``) that writes reach the base through, conjugated,
and that follow the base's later changes; ``resolve_conj``/``conj_physical``; the refusal of
``view_as_real``; gradients, gradcheck and ``tw.compile`` through such views. Each snippet
runs as ``fn(torch)`` and ``fn(tw)`` on the NumPy, torch:cpu and cuPyNumeric backends.

Before the twentieth session these were copies (ops/complex.py): a write through them did
not reach the base, they did not see its later changes, ``is_conj()`` was always False and
``view_as_real(z.conj())`` did not raise (tests/ports/test_user_hunt_issue14_session19.py
keeps the cases found then).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_user_hunt_session18 import CUNUMERIC, _check_raises
from tw_backends import FAST, entered


@pytest.fixture(params=[*FAST, *CUNUMERIC])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


_RNG = np.random.default_rng(2020)
_Z = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))
_W = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))
_S = _RNG.standard_normal((4, 3)) + 1j * _RNG.standard_normal((4, 3))


def _z(m: Any, values: Any = _Z, grad: bool = False) -> Any:
    return m.tensor(values, dtype=m.complex128, requires_grad=grad)


def _host(t: Any) -> np.ndarray:
    """Values of a torch or tw tensor (torch's conjugate and negative bits resolved: its
    numpy() refuses them)."""
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    # (resolved: torch's np.asarray refuses them too)
    return np.asarray(t.detach().resolve_conj().resolve_neg())


def _same(ours: Any, theirs: Any, path: str = "result") -> None:
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tw.Tensor), path
        assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1], path
        assert tuple(ours.shape) == tuple(theirs.shape), path
        np.testing.assert_allclose(_host(ours), _host(theirs), rtol=1e-12, atol=1e-12)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{path}[{i}]")
    else:
        assert ours == theirs, f"{path}: {ours!r}, torch {theirs!r}"


def _check(spec: str, fn: Callable[[Any], Any]) -> None:
    """``fn(tw)`` on ``spec`` gives what ``fn(torch)`` gives (complex values compared)."""
    theirs = fn(torch)
    with entered(spec):
        ours = fn(tw)
    _same(ours, theirs)


# -- the conjugate bit ----------------------------------------------------------------------


def test_which_tensors_have_the_conjugate_bit(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        c = z.conj()
        real = m.tensor(_Z.real)
        return [
            c.is_conj(),
            m.is_conj(c),
            z.is_conj(),
            real.conj() is real,
            real.conj().is_conj(),
            c.conj().is_conj(),
            c.conj().conj().is_conj(),
            z.mH.is_conj(),
            z.mH.mH.is_conj(),
            z.adjoint().is_conj(),
            z.H.is_conj(),
            z.mT.is_conj(),
            c[0].is_conj(),
            c.T.is_conj(),
            c.reshape(12).is_conj(),
            c.unsqueeze(0).is_conj(),
            c.detach().is_conj(),
            c.data.is_conj(),
            c.clone().is_conj(),
            (c * 2).is_conj(),
            (-c).is_conj(),
            c.real.is_conj(),
            c.resolve_conj().is_conj(),
            z.resolve_conj() is z,
            c.conj_physical().is_conj(),
            m.conj_physical(real) is real,
        ]

    _check(spec, fn)


def test_contiguous_of_a_conjugate_view_is_itself(spec: str) -> None:
    def fn(m: Any) -> list:
        c = _z(m).conj()
        return [c.contiguous() is c, c.contiguous().is_conj()]

    _check(spec, fn)


def test_values_of_conjugate_views(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        c = z.conj()
        return [c, c.conj(), z.mH, z.adjoint(), z.H, c[1], c.real, c.imag, c.resolve_conj()]

    _check(spec, fn)


def test_printing_a_conjugate_view() -> None:
    theirs = repr(torch.tensor(_Z[:2, :2], dtype=torch.complex128).conj())
    ours = repr(tw.tensor(_Z[:2, :2], dtype=tw.complex128).conj())
    assert ours == theirs.replace("torch.", "tensorweaver.")


# -- writes through them, and their following the base -------------------------------------


_WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "setitem": lambda m, z: z.conj().__setitem__((0, 1), 2 + 5j),
    "row_fill_": lambda m, z: z.conj()[1].fill_(3j),
    "mul_": lambda m, z: z.conj().mul_(1 + 2j),
    "copy_": lambda m, z: z.conj().copy_(_z(m, _W)),
    "conj_physical_": lambda m, z: z.conj().conj_physical_(),
    "real_part": lambda m, z: z.conj().real.__setitem__(0, 7.0),
    "imag_part": lambda m, z: z.conj().imag.__setitem__(0, 7.0),
    "mH_setitem": lambda m, z: z.mH.__setitem__((2, 0), -1 + 4j),
    "adjoint_add_": lambda m, z: z.adjoint().add_(_z(m, _S)),
    "conj_of_conj": lambda m, z: z.conj().conj().sub_(1j),
    "H_column": lambda m, z: z.H[:, 1].zero_(),
}


@pytest.mark.parametrize("write", list(_WRITES))
def test_a_write_through_a_conjugate_view_reaches_the_base(spec: str, write: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        _WRITES[write](m, z)
        return [z]

    _check(spec, fn)


def test_conjugate_views_follow_the_base(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        c, h, cc, row = z.conj(), z.mH, z.conj().conj(), z.conj()[2]
        z.mul_(1 - 3j)
        z[0, 0] = 9 + 1j
        return [c, h, cc, row, c.is_conj(), h.is_conj()]

    _check(spec, fn)


def test_a_write_reaches_the_other_views_of_the_base(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        c, h, r = z.conj(), z.mH, z[1]
        c[1, 2] = 4 - 4j
        return [z, h, r, c]

    _check(spec, fn)


def test_strided_views_of_a_conjugate_view(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        c = z.conj()
        s, u, d = c.as_strided((2, 2), (4, 1), 1), c.unfold(1, 2, 2), c.diagonal()
        bits = [s.is_conj(), u.is_conj(), d.is_conj(), c.stride(), d.stride(), z.mH.stride()]
        values = [s.resolve_conj(), u.resolve_conj(), d.resolve_conj()]
        s[0, 0] = 100j
        d.mul_(2)
        return [*bits, *values, z, u]

    _check(spec, fn)


def test_resolve_conj_is_a_new_tensor(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        resolved, physical = z.conj().resolve_conj(), z.conj_physical()
        resolved.add_(1)
        physical.add_(2)
        return [z, resolved, physical]

    _check(spec, fn)


def test_conjugate_view_of_host_shared_memory_writes_into_it() -> None:
    """A conj view of a ``from_numpy`` tensor writes into the shared memory, conjugated."""
    for lib in (torch, tw):
        a = _Z.copy()
        lib.from_numpy(a).conj()[0].mul_(2j)
        expected = _Z.copy()
        expected[0] = np.conj(np.conj(_Z[0]) * 2j)
        np.testing.assert_allclose(a, expected, err_msg=lib.__name__)


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["conj", "mH", "conj_row"])
def test_view_as_real_refuses_an_unresolved_conjugate(spec: str, view: str) -> None:
    def fn(m: Any) -> Any:
        z = _z(m)
        v = z.conj() if view == "conj" else z.mH if view == "mH" else z.conj()[0]
        return m.view_as_real(v)

    _check_raises(spec, fn)


# before: view(dtype) of a conj view read its conjugated values' bits; PyTorch refuses it
@pytest.mark.parametrize("dtype", ["complex128", "float64", "int64"])
def test_view_dtype_refuses_a_conjugate_view(spec: str, dtype: str) -> None:
    _check_raises(spec, lambda m: _z(m).conj().view(getattr(m, dtype)))


def test_view_as_real_of_resolved_and_doubly_conjugated(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m)
        return [m.view_as_real(z.conj().resolve_conj()), m.view_as_real(z.conj().conj())]

    _check(spec, fn)


def test_numpy_of_a_conjugate_view_raises() -> None:
    with pytest.raises(RuntimeError):
        torch.tensor(_Z).conj().numpy()
    with pytest.raises(RuntimeError):
        tw.tensor(_Z).conj().numpy()


def test_numpy_of_a_conjugate_view_holds_its_values_not_the_base_memory() -> None:
    """``np.asarray`` of a conj view raises as numpy() does (above), as PyTorch's; its
    resolved values never show the base's unconjugated memory."""
    z = tw.tensor(_Z)
    c = z.conj()
    with pytest.raises(RuntimeError, match="conjugate bit"):
        np.asarray(c)
    np.testing.assert_array_equal(np.asarray(c.resolve_conj()), np.conj(_Z))
    z.numpy()  # the base moves into host-shared memory: the view keeps its own values
    np.testing.assert_array_equal(np.asarray(c.resolve_conj()), np.conj(_Z))
    np.testing.assert_array_equal(c.imag.resolve_neg().numpy(), -_Z.imag)


@pytest.mark.xfail(
    strict=True,
    reason="ops/views.py (conj): a conj view holds the conjugated values in an array of its "
    "own, so a write into its base's memory made through NumPy (numpy()/from_numpy) is not "
    "seen when it is read; PyTorch's view reads that memory. (An in-place write through it "
    "reads the memory again first since the 21st session: tensor.py _catch_up_with_host.) "
    "Fix: refresh conj views of a host-shared base when they are read (no read hook exists: "
    "every op reads .native itself)",
)
def test_conjugate_view_sees_host_writes_into_its_base() -> None:
    a = _Z.copy()
    c = tw.from_numpy(a).conj()
    a[0, 0] = 5.0
    assert complex(c[0, 0]) == 5.0


def test_imag_of_a_conjugate_view_has_the_negative_bit(spec: str) -> None:
    _check(spec, lambda m: [_z(m).conj().imag.is_neg()])


# -- autograd -------------------------------------------------------------------------------


def test_gradients_through_conjugate_views(spec: str) -> None:
    def fn(m: Any) -> list:
        z, w = _z(m, grad=True), _z(m, _W)
        s = _z(m, _S)
        loss = (z.conj() * w).real.sum() + (z.mH @ w).abs().sum() + (z.adjoint() * s).imag.sum()
        loss.backward()
        names = [type(v.grad_fn).__name__ for v in (z.conj(), z.mH, z.conj_physical())]
        return [z.grad, names]

    _check(spec, fn)


def test_gradients_of_a_conjugate_view_read_again(spec: str) -> None:
    def fn(m: Any) -> list:
        z = _z(m, grad=True)
        y = z * 1
        c = y.conj()
        y.mul_(2 - 1j)
        (c * _z(m, _W)).real.sum().backward()
        return [c, type(c.grad_fn).__name__, z.grad]

    _check(spec, fn)


def test_gradients_through_a_write_into_a_conjugate_view(spec: str) -> None:
    def fn(m: Any) -> list:
        z, w = _z(m, grad=True), _z(m, _W, grad=True)
        y = z * 1
        y.conj()[1] = w[0] * (2 - 1j)
        y.mH.mul_(1 + 1j)
        (y * _z(m, _S.T)).abs().sum().backward()
        return [y, z.grad, w.grad]

    _check(spec, fn)


def test_gradcheck_through_conjugate_views() -> None:
    """Finite differences in complex128 (tw's gradcheck perturbs real and imaginary parts)
    of a function that reads through conj views."""
    w = tw.tensor(_W, dtype=tw.complex128)

    def f(z: Any) -> Any:
        return z.conj() * w + z.mH.mT * z + z.conj().conj()[1] * z.adjoint().conj().mT

    z = tw.tensor(_Z, dtype=tw.complex128, requires_grad=True)
    assert tw.autograd.gradcheck(f, (z,))


def test_gradcheck_through_a_write_into_a_conjugate_view() -> None:
    w = tw.tensor(_W, dtype=tw.complex128)

    def f(z: Any) -> Any:
        y = z * w
        y.conj()[0] = z[1] * 2j
        y.mH.mul_(z.mH)
        return y.conj() * z

    z = tw.tensor(_Z, dtype=tw.complex128, requires_grad=True)
    assert tw.autograd.gradcheck(f, (z,))


def test_compiled_step_with_a_conjugate_view() -> None:
    def step(m: Any, a: Any, c: Any) -> Any:
        y = (a.conj() * c).real.sum() + (a.mH @ c).abs().sum()
        y.backward()
        return y

    values, weights = _Z.astype(np.complex64), _W.astype(np.complex64)
    eager, compiled = (tw.tensor(values, requires_grad=True) for _ in range(2))
    c = tw.tensor(weights)
    fn = tw.compile(lambda a, c: step(tw, a, c))
    for _ in range(4):
        step(tw, eager, c), fn(compiled, c)
    assert len(fn.graph_source()) == 1  # compiled once, replayed
    theirs = torch.tensor(values, requires_grad=True)
    for _ in range(4):
        step(torch, theirs, torch.tensor(weights))
    np.testing.assert_allclose(np.asarray(compiled.grad), np.asarray(eager.grad), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(eager.grad), theirs.grad.numpy(), rtol=1e-5)


def test_0d_mH_is_a_conjugate_view(spec: str) -> None:
    def fn(m: Any) -> list:
        z = m.tensor(1 + 2j, dtype=m.complex128)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = z.mH
        v.mul_(3)
        return [v.is_conj(), z, v]

    _check(spec, fn)


# -- host memory shared after z.numpy(): the review of the first wave ---------------------------


def _host_write_then_base_write(m: Any, chain: Callable[[Any], Any]) -> list:
    z = m.tensor([[1 + 2j, 3 - 4j], [1j, 2]], dtype=m.complex128)
    v = chain(z)
    v.numpy()[0, 0] = 7  # a write into the memory the chain shares with its base
    z.mul_(2)
    return [v, z]


# before: numpy() of z.conj().conj() / z.conj().real was an array of its own, so the NumPy
# write missed z, and z's later write lost it (or flipped the sign of z's imaginary part)
@pytest.mark.parametrize("chain", ["conj_conj", "conj_real"])
def test_a_chain_without_the_conj_bit_shares_the_base_memory(chain: str) -> None:
    def fn(m: Any) -> list:
        pick = (lambda z: z.conj().conj()) if chain == "conj_conj" else (lambda z: z.conj().real)
        return _host_write_then_base_write(m, pick)

    _same(fn(tw), fn(torch))


def test_numpy_of_the_imaginary_part_of_a_conjugate_raises() -> None:
    with pytest.raises(RuntimeError):
        torch.tensor(_Z).conj().imag.numpy()
    with pytest.raises(RuntimeError):
        tw.tensor(_Z).conj().imag.numpy()


def test_as_strided_of_the_conjugate_of_a_strided_view() -> None:
    def fn(m: Any) -> Any:
        z = m.tensor([[1 + 2j, 3 - 4j, 5j], [1, 2, 3]], dtype=m.complex128)
        return z[:, 1:].conj().as_strided((2,), (3,), 0)

    _same(fn(tw), fn(torch))
