"""Review of the twentieth session's commits (9513c09..8142f93): the defects found, each a
strict xfail naming its cause and the proposed fix, compared with PyTorch 2.13.

Conj views (ops/views.py ``conj``) hold the conjugated values in an array of their own; the
cases below are where that array parts from the base's memory in ways PyTorch's conjugate
bit never does, plus an error type that a new loss refusal changed.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _values(t: object) -> list:
    return np.asarray(t.tolist(), dtype=complex).tolist()


def test_conj_view_write_keeps_a_host_write_to_its_base(spec: str) -> None:
    def program(m: object) -> list:
        z = m.tensor([1 + 2j, 3 - 4j], dtype=m.complex128)
        c = z.conj()
        z.numpy()[0] = 50  # the host writes element 0 of the base's memory
        c[1] = 1j  # a write through the conj view to element 1 only
        return _values(z)

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


def test_conj_of_a_strided_view_keeps_its_layout(spec: str) -> None:
    def program(m: object) -> tuple:
        z = m.tensor([[1 + 2j, 3 - 4j, 5j], [1, 2, 3]], dtype=m.complex64)
        v = z[:, 1:].conj()
        return tuple(v.stride()), v.is_contiguous(), v.storage_offset()

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


def test_reshape_of_conj_of_a_strided_view_copies(spec: str) -> None:
    def program(m: object) -> list:
        z = m.tensor([[1 + 2j, 3 - 4j, 5j], [1, 2, 3]], dtype=m.complex64)
        flat = z[:, 1:].conj().reshape(-1)
        flat[0] = 100j
        return _values(z)

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


@pytest.mark.parametrize("chain", ["conj().conj()", "mH.mH", "conj().real"])
def test_numpy_of_an_unconjugated_view_chain_shares_the_base(spec: str, chain: str) -> None:
    def program(m: object) -> list:
        z = m.tensor([[1 + 2j, 3 - 4j], [1j, 2]], dtype=m.complex128)
        view = {
            "conj().conj()": lambda: z.conj().conj(),
            "mH.mH": lambda: z.mH.mH,
            "conj().real": lambda: z.conj().real,
        }[chain]()
        view.numpy()[0, 0] = 100
        return _values(z)

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


def test_dlpack_of_a_conj_view_is_refused(spec: str) -> None:
    with pytest.raises(BufferError):
        np.from_dlpack(torch.tensor([1 + 2j, 3 - 4j]).conj())
    with entered(spec):
        c = tw.tensor([1 + 2j, 3 - 4j], dtype=tw.complex128).conj()
        with pytest.raises(BufferError):
            np.from_dlpack(c)


def test_bce_with_logits_integer_input_and_target_error_type(spec: str) -> None:
    def error(m: object) -> type:
        x = m.tensor([[1, 0, 2]], dtype=m.int64)
        try:
            m.nn.functional.binary_cross_entropy_with_logits(x, x.clone())
        except Exception as e:  # the exception class is what is compared
            return type(e)
        return type(None)

    want = error(torch)
    with entered(spec):
        assert error(tw).__name__ == want.__name__


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="serialization: tw.save of a conj view stores its values but not the conjugate "
    "bit, so the loaded tensor's is_conj() is False where PyTorch's load keeps it True (its "
    "values agree). Fix: save a conj view as its base's values plus the bit (or mark the "
    "loaded tensor as tw.conj of the stored conjugate) in serialization/",
)
def test_saved_conj_view_loads_with_the_bit(spec: str, tmp_path: object) -> None:
    path = str(tmp_path / "c.pt")
    torch.save(torch.tensor([1 + 2j]).conj(), path)
    want = torch.load(path).is_conj()
    with entered(spec):
        tw.save(tw.tensor([1 + 2j], dtype=tw.complex128).conj(), path)
        assert tw.load(path).is_conj() == want


def test_grad_fn_hook_of_a_composite_sees_its_inputs_gradients(spec: str) -> None:
    def program(m: object) -> list:
        x = m.tensor([[1.0, 4.0, 2.0], [3.0, 0.0, 5.0]], requires_grad=True)
        values, _ = x.topk(2, 1)
        seen: list = []
        values.grad_fn.register_hook(lambda gi, go: seen.append(gi[0].tolist()))
        (values * m.tensor([1.0, 2.0])).sum().backward()
        return seen

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


def test_grad_fn_prehook_of_unbind_sees_every_output(spec: str) -> None:
    def program(m: object) -> list:
        x = m.tensor([[1.0, 4.0, 2.0], [3.0, 0.0, 5.0]], requires_grad=True)
        rows = x.unbind(0)
        rows[0].grad_fn.register_prehook(
            lambda go: tuple(None if g is None else g * 10 for g in go)
        )
        (rows[0].sum() + rows[1].sum()).backward()
        return x.grad.tolist()

    want = program(torch)
    with entered(spec):
        assert program(tw) == want


@pytest.mark.parametrize("scalar", [np.str_("1"), np.bytes_(b"1")], ids=["str_", "bytes_"])
@pytest.mark.parametrize("op", ["add", "mul", "result_type"])
def test_numpy_string_scalar_is_no_number(spec: str, scalar: object, op: str) -> None:
    def program(m: object) -> object:
        x = m.ones(2)
        return {"add": lambda: x + scalar, "mul": lambda: x * scalar}.get(
            op, lambda: m.result_type(x, scalar)
        )()

    with pytest.raises(TypeError):
        program(torch)
    with entered(spec), pytest.raises(TypeError):
        program(tw)
