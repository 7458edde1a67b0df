"""Conjugate and negative views over memory that host code shares, as PyTorch 2.13's.

Each case runs the same program on torch and on tensorweaver (only the module differs) and
compares what it returns: values, errors, and the bits.

Fixed here (each failed before):

* an in-place write through a ``conj()`` view (or a view of one) after NumPy wrote into its
  base's memory started from the view's old copy and wrote it back over the host's write
  (tensor.py ``Tensor._catch_up_with_host``, run by ``_check_inplace``);
* ``numpy()`` of ``z.conj().imag`` (the negative bit) gave its values where PyTorch raises,
  and ``resolve_neg`` returned its input itself (tensor.py ``numpy``, ops/complex.py);
* ``as_strided`` of the conjugate of a strided view read from the view's own offset, not
  from its storage's (ops/views.py ``_memory_base``);
* an in-place write into NumPy memory whose strides repeat an element (a zero stride) gave
  the tensor an array of its own, silently, where PyTorch refuses it (but for fills and a
  ``setitem`` of distinct locations, which write into that memory) (tensor.py
  ``Tensor._write_repeated``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _values(t: Any) -> Any:
    return [complex(v) for v in t.tolist()] if t.dim() else complex(t)


def _z(m: Any) -> Any:
    return m.tensor([1 + 2j, 3 - 4j, 5j], dtype=m.complex128)


def _outcome(fn: Any, m: Any) -> Any:
    """What ``fn(m)`` returns, or its error's class name; and the warnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = fn(m)
        except RuntimeError as e:
            result = type(e).__name__
    return result, sorted({w.category.__name__ for w in seen})


def _like_torch(fn: Any) -> None:
    assert _outcome(fn, tw) == _outcome(fn, torch)


# -- in-place writes through a conj view after a host write ----------------------------------


def _host_written(m: Any) -> tuple:
    z = _z(m)
    return z, z.numpy()


def _write_element(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj()
    n[0] = 50
    c[1] = 1j
    return _values(z), _values(c)


def _add(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj()
    n[0] = 50
    c.add_(1)
    return _values(z), _values(c)


def _view_of_conj(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj()
    n[2] = 7
    c[0].mul_(2)
    return _values(z), _values(c)


def _imag_of_conj(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj()
    n[1] = 7
    c.imag[0] = 3.0
    return _values(z), _values(c)


def _from_numpy(m: Any) -> Any:
    a = np.array([1 + 2j, 3 - 4j, 5j])
    c = m.from_numpy(a).conj()
    a[2] = 9
    c[:2].sub_(1j)
    return a.tolist(), _values(c)


def _conj_of_conj(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj().conj()
    n[0] = 8
    c[1] = 0
    return _values(z), _values(c)


def _slice_of_conj_filled(m: Any) -> Any:
    z, n = _host_written(m)
    h = z.conj()[1:]
    n[0] = 8
    h.fill_(2)
    return _values(z), _values(h)


def _conj_of_a_slice(m: Any) -> Any:
    z, n = _host_written(m)
    c = z[1:].conj()
    n[2] = 6
    c[0] = 2j
    return _values(z), _values(c)


def _adjoint(m: Any) -> Any:
    z = m.tensor([[1 + 2j, 3 - 4j], [5j, 1]], dtype=m.complex128)
    n = z.numpy()
    c = z.mH
    n[0, 1] = 8
    c[0, 0] = 1j
    return [_values(r) for r in z], [_values(r) for r in c]


def _leaf_under_no_grad(m: Any) -> Any:
    a = np.array([1 + 2j, 3 - 4j])
    w = m.from_numpy(a).requires_grad_()
    c = w.conj()
    a[0] = 7
    with m.no_grad():
        c.mul_(2)
    return a.tolist(), _values(w.detach()), c._version


def _versions(m: Any) -> Any:
    a = np.array([1 + 2j, 3 - 4j])
    w = m.from_numpy(a)
    c = w.conj()
    y = c * 2
    a[1] = 5
    c.add_(1)
    return a.tolist(), _values(c), _values(y), c._version, w._version


def _imag_of_conj_scaled(m: Any) -> Any:
    z, n = _host_written(m)
    c = z.conj()
    n[0] = 3
    c.imag.mul_(2)
    return _values(z), n.tolist()


_HOST_WRITES = [
    _write_element,
    _add,
    _view_of_conj,
    _imag_of_conj,
    _from_numpy,
    _conj_of_conj,
    _slice_of_conj_filled,
    _conj_of_a_slice,
    _adjoint,
    _leaf_under_no_grad,
    _versions,
    _imag_of_conj_scaled,
]


@pytest.mark.parametrize("program", _HOST_WRITES, ids=lambda f: f.__name__.strip("_"))
def test_a_write_through_a_conj_view_keeps_the_hosts_writes(backend: str, program: Any) -> None:
    # before: the write started from the view's copy made before the host wrote, and its
    # write-back put that copy's old values over the host's
    _like_torch(program)


# -- the negative bit --------------------------------------------------------------------------


def _neg(m: Any) -> Any:
    return _z(m).conj().imag


_NEGATIVE = {
    "numpy": lambda m: _neg(m).numpy().tolist(),
    "numpy_of_a_slice": lambda m: _neg(m)[1:].numpy().tolist(),
    "numpy_of_detach": lambda m: _neg(m).detach().numpy().tolist(),
    "numpy_force": lambda m: _neg(m).numpy(force=True).tolist(),
    "resolve_neg": lambda m: [_neg(m).resolve_neg().is_neg(), _neg(m).resolve_neg().tolist()],
    "resolve_neg_then_numpy": lambda m: _neg(m).resolve_neg().numpy().tolist(),
    "resolve_neg_is_a_copy": lambda m: (lambda i: i.resolve_neg() is i)(_neg(m)),
    "resolve_neg_of_others": lambda m: [
        (lambda t: m.resolve_neg(t) is t)(t) for t in (_z(m), _z(m).conj(), _z(m).imag)
    ],
    "resolve_neg_keeps_grad": lambda m: (
        m.tensor([1 + 2j], requires_grad=True).conj().imag.resolve_neg().requires_grad
    ),
    "resolved_does_not_write_back": lambda m: (
        lambda z: (z.conj().imag.resolve_neg().add_(1), _values(z))[1]
    )(_z(m)),
    "numpy_requires_grad_first": lambda m: (
        m.tensor([1 + 2j], requires_grad=True).conj().imag.numpy()
    ),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("case", list(_NEGATIVE))
def test_the_negative_bit_as_torch(backend: str, case: str) -> None:
    _like_torch(_NEGATIVE[case])


# -- as_strided of a conj of a strided view ----------------------------------------------------


def _strided_conj(m: Any, requires_grad: bool = False) -> tuple:
    z = m.tensor([[1 + 2j, 3 - 4j, 5j], [1, 2, 3]], dtype=m.complex128, requires_grad=requires_grad)
    return z, z[:, 1:].conj()


_AS_STRIDED = {
    "from_the_storage_start": lambda m: _values(_strided_conj(m)[1].as_strided((2,), (3,), 0)),
    "default_offset": lambda m: [
        _values(r) for r in _strided_conj(m)[1].as_strided((2, 2), (1, 3))
    ],
    "keeps_the_bit": lambda m: _strided_conj(m)[1].as_strided((2,), (3,), 0).is_conj(),
    "writes_through": lambda m: (
        lambda z, v: (v.as_strided((2,), (3,), 0).mul_(2), [_values(r) for r in z])[1]
    )(*_strided_conj(m)),
    "gradient": lambda m: (
        lambda z, v: (
            (v.as_strided((2, 2), (1, 3), 1) * m.tensor([1 + 1j, 2 - 1j], dtype=m.complex128))
            .real.sum()
            .backward(),
            [_values(r) for r in z.grad],
        )[1]
    )(*_strided_conj(m, requires_grad=True)),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("case", list(_AS_STRIDED))
def test_as_strided_of_a_conj_of_a_strided_view(backend: str, case: str) -> None:
    # before: z[:, 1:].conj().as_strided((2,), (3,), 0) read [3+4j, 2], from the view's offset
    _like_torch(_AS_STRIDED[case])


# -- in-place writes into host memory that repeats elements -----------------------------------


def _repeated(m: Any) -> tuple:
    base = np.zeros(1, np.float32)
    return base, m.from_numpy(np.lib.stride_tricks.as_strided(base, (4,), (0,)))


_REPEATED_WRITES = {
    "add_": lambda m, p: p.add_(m.ones(4)),
    "add_number": lambda m, p: p.add_(1),
    "mul_": lambda m, p: p.mul_(2),
    "copy_": lambda m, p: p.copy_(m.ones(4)),
    "setitem_one": lambda m, p: p.__setitem__(0, 1.0),
    "setitem_all": lambda m, p: p.__setitem__(slice(None), 2.0),
    "setitem_two": lambda m, p: p.__setitem__(slice(0, 2), 2.0),
    "fill_": lambda m, p: p.fill_(3),
    "zero_": lambda m, p: p.zero_(),
    "masked_fill_": lambda m, p: p.masked_fill_(m.tensor([True, False, False, False]), 5.0),
    "element_add_": lambda m, p: p[0].add_(1),
    "one_element_view_add_": lambda m, p: p[:1].add_(1),
    "repeating_view_add_": lambda m, p: p[1:].add_(1),
}


@pytest.mark.parametrize("case", list(_REPEATED_WRITES))
def test_writes_into_repeated_host_memory_as_torch(backend: str, case: str) -> None:
    # before: each write gave the tensor an array of its own, which NumPy no longer saw
    def program(m: Any) -> Any:
        base, p = _repeated(m)
        try:
            _REPEATED_WRITES[case](m, p)
        finally:
            done = base.tolist(), p.tolist()
        base[0] = 9  # and it still shares the memory
        return done, p.tolist()

    _like_torch(program)


def test_a_masked_setitem_into_repeated_host_memory_as_torch(backend: str) -> None:
    def program(m: Any) -> Any:
        base, p = _repeated(m)
        p[m.tensor([True, True, False, False])] = 2.0
        return base.tolist(), p.tolist()

    _like_torch(program)


def test_a_write_into_read_only_repeated_host_memory_is_refused(backend: str) -> None:
    def program(m: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch warns that the array is read-only)
            p = m.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3)))
        p.add_(1)
        return p.tolist()

    _like_torch(program)
