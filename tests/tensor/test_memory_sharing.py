"""Memory shared with NumPy, as PyTorch's CPU tensors share it: ``tw.from_numpy`` and
``Tensor.numpy()`` both ways, every family of in-place method, optimizer steps, autograd's
version check after a write into shared memory, views and detached tensors, and what stays
private (clones, copies, read-only arrays). Each case runs the same code on a tensor and on
a torch tensor over identical arrays and compares the arrays afterwards.
"""

from __future__ import annotations

import gc
import sys
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import uniform

SHARES = ("numpy", "torch:cpu")


def pair(values: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray, torch.Tensor]:
    """Two copies of ``values`` and a tensor over each: ours, then PyTorch's."""
    ours, theirs = values.copy(), values.copy()
    return ours, tw.from_numpy(ours), theirs, torch.from_numpy(theirs)


def other(m: Any, shape: tuple[int, ...], seed: int = 1) -> Any:
    return m.from_numpy(uniform(shape, seed=seed))


#: In-place methods by family, each written once for ``m`` = tw or torch.
INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "add_": lambda m, t: t.add_(other(m, t.shape), alpha=3.0),
    "sub_": lambda m, t: t.sub_(2.5),
    "mul_": lambda m, t: t.mul_(other(m, t.shape)),
    "div_": lambda m, t: t.div_(4.0),
    "copy_": lambda m, t: t.copy_(other(m, t.shape)),
    "copy_broadcast": lambda m, t: t.copy_(other(m, t.shape[1:])),
    "zero_": lambda m, t: t.zero_(),
    "fill_": lambda m, t: t.fill_(1.5),
    "clamp_": lambda m, t: t.clamp_(min=-0.5, max=0.75),
    "neg_": lambda m, t: t.neg_(),
    "sqrt_": lambda m, t: t.mul_(t).sqrt_(),
    "addcmul_": lambda m, t: t.addcmul_(other(m, t.shape), other(m, t.shape, 2), value=0.5),
    "lerp_": lambda m, t: t.lerp_(other(m, t.shape), 0.25),
    "masked_fill_": lambda m, t: t.masked_fill_(t > 0, -7.0),
    "setitem_row": lambda m, t: t.__setitem__(0, 5.0),
    "setitem_column": lambda m, t: t.__setitem__((slice(None), 1), other(m, (t.shape[0],))),
    "setitem_mask": lambda m, t: t.__setitem__(t < 0, 0.0),
    "iadd": lambda m, t: t.__iadd__(1.0),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_methods_write_into_the_array_like_torch(backend: str, name: str) -> None:
    ours, t, theirs, tt = pair(uniform((3, 4)))
    INPLACE[name](tw, t)
    INPLACE[name](torch, tt)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(t.numpy(), ours)
    assert not np.array_equal(ours, uniform((3, 4)))


def test_from_numpy_shares_memory_both_ways(backend: str) -> None:
    a = uniform((2, 3))
    t = tw.from_numpy(a)
    assert t.dtype is tw.float64 and t.data_ptr() == a.ctypes.data
    a[1, 2] = 42.0
    assert t[1, 2].item() == 42.0
    n = t.numpy()
    assert np.shares_memory(n, a)
    n[0, 0] = -3.0
    assert t[0, 0].item() == -3.0 and a[0, 0] == -3.0


def test_reshaping_the_array_in_place_leaves_the_tensor_alone(backend: str) -> None:
    a = uniform((2, 3))
    t = tw.from_numpy(a)
    n = t.numpy()
    a.shape = n.shape = (3, 2)
    assert t.shape == (2, 3) and t.numpy().shape == (2, 3)
    t.add_(1.0)
    np.testing.assert_array_equal(a.reshape(2, 3), t.numpy())


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "int64", "int32", "int16", "uint8", "bool"]
)
def test_from_numpy_keeps_dtype_and_shares(backend: str, dtype: str) -> None:
    a = (uniform((4,)) * 3).astype(dtype)
    t = tw.from_numpy(a)
    assert str(t.dtype).rsplit(".", 1)[-1] == str(torch.from_numpy(a).dtype).rsplit(".", 1)[-1]
    t.fill_(1)
    np.testing.assert_array_equal(a, np.ones(4, dtype))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a: m.as_tensor(a),
        lambda m, a: m.as_tensor(a, dtype=m.float64),
        lambda m, a: m.as_tensor(a, dtype=m.float32),
        lambda m, a: m.as_tensor(a[:, ::-1]),
    ],
    ids=["own_dtype", "same_dtype", "other_dtype", "negative_stride"],
)
def test_as_tensor_shares_like_torch(backend: str, call: Any) -> None:
    ours, theirs = uniform((2, 3)), uniform((2, 3))
    outcomes = []
    for m, a in ((tw, ours), (torch, theirs)):
        try:
            call(m, a).mul_(2.0)
        except ValueError as exc:  # PyTorch refuses a negative stride here too
            outcomes.append(type(exc))
    assert outcomes in ([], [ValueError, ValueError])
    np.testing.assert_array_equal(ours, theirs)


def test_numpy_shares_memory_with_the_tensor(backend: str) -> None:
    t = tw.tensor(uniform((3,)))
    n = t.numpy()
    t.mul_(2.0)
    np.testing.assert_array_equal(n, t.numpy())
    assert np.shares_memory(n, t.numpy())
    n[1] = 9.0
    assert t[1].item() == 9.0


def test_numpy_of_a_scalar_shares_like_torch(backend: str) -> None:
    results = []
    for m in (tw, torch):
        s = m.from_numpy(uniform((4,))).sum()
        n = s.numpy()
        s.add_(1.0)
        assert n.shape == () and float(n) == s.item()
        results.append(s.item())
    assert results[0] == pytest.approx(results[1], rel=1e-15)


def test_data_assignment_shares_like_torch(backend: str) -> None:
    ours, t, theirs, tt = pair(uniform((3,)))
    for m, shared in ((tw, t), (torch, tt)):
        p = m.zeros(3, dtype=m.float64)
        p.data = shared
        p.mul_(3.0)
    np.testing.assert_array_equal(ours, theirs)
    assert not np.array_equal(ours, uniform((3,)))


def test_parameter_over_a_shared_tensor_writes_into_the_array(backend: str) -> None:
    ours, t, theirs, tt = pair(uniform((3,)))
    for m, shared in ((tw, t), (torch, tt)):
        with m.no_grad():
            m.nn.Parameter(shared).mul_(3.0)
    np.testing.assert_array_equal(ours, theirs)


def test_numpy_of_a_result_leaves_its_inputs_alone(backend: str) -> None:
    a = uniform((3,))
    x = tw.from_numpy(a)
    y = x * 2.0
    n = y.numpy()
    y.add_(1.0)
    n[0] = 100.0
    np.testing.assert_array_equal(a, uniform((3,)))
    assert y[0].item() == 100.0


def test_views_and_detached_tensors_see_writes_like_torch(backend: str) -> None:
    ours, t, theirs, tt = pair(uniform((3, 4)))

    def views(x: Any) -> list:
        return [x[1], x.t(), x.reshape(-1), x.detach(), x.data, x[:, ::2], x.unsqueeze(0)]

    mine, torchs = views(t), views(tt)
    t.add_(1.0)
    tt.add_(1.0)
    for written in (mine[0], torchs[0], mine[1], torchs[1]):  # a view written keeps up too
        written.mul_(2.0)
    t.sub_(0.5)
    tt.sub_(0.5)
    ours[0, 0] = theirs[0, 0] = -8.0
    for v, w in zip(mine, torchs):
        np.testing.assert_array_equal(v.numpy(), w.numpy())


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x[0].zero_(),
        lambda x: x.t()[1].fill_(3.0),
        lambda x: x.detach().mul_(2.0),
        lambda x: x.data.sub_(1.0),
        lambda x: [row.mul_(2.0) for row in x],
        lambda x: x.view(-1).__setitem__(5, 11.0),
    ],
    ids=["row_zero_", "transposed_fill_", "detach_mul_", "data_sub_", "rows_mul_", "view_setitem"],
)
def test_writes_through_views_reach_the_array_like_torch(backend: str, write: Any) -> None:
    ours, t, theirs, tt = pair(uniform((3, 4)))
    write(t)
    write(tt)
    np.testing.assert_array_equal(ours, theirs)


def test_copies_do_not_follow_the_array(backend: str) -> None:
    a = uniform((3,))
    t = tw.from_numpy(a)
    copied = tw.zeros(3, dtype=tw.float64).copy_(t)
    made = tw.tensor(a)
    t.fill_(5.0)
    a[0] = 6.0
    np.testing.assert_array_equal(copied.numpy(), uniform((3,)))
    np.testing.assert_array_equal(made.numpy(), uniform((3,)))
    copied.zero_()
    np.testing.assert_array_equal(a, [6.0, 5.0, 5.0])


def test_clone_does_not_follow_the_array(backend: str) -> None:
    a = uniform((3,))
    t = tw.from_numpy(a)
    c = t.clone()
    t.fill_(5.0)
    np.testing.assert_array_equal(c.numpy(), uniform((3,)))


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_optimizer_steps_write_into_the_array_like_torch(backend: str, optimizer: str) -> None:
    ours, p, theirs, pt = pair(uniform((4, 3)))
    x = uniform((5, 4), seed=2)
    kwargs = {"lr": 0.1, "momentum": 0.9} if optimizer == "SGD" else {"lr": 0.01}
    for m, param, opt_param in ((tw, p, p), (torch, pt, pt)):
        param.requires_grad_()
        opt = getattr(m.optim, optimizer)([opt_param], **kwargs)
        for _ in range(3):
            opt.zero_grad()
            ((m.from_numpy(x) @ param) ** 2).sum().backward()
            opt.step()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert not np.array_equal(ours, uniform((4, 3)))


def test_no_grad_updates_write_into_the_array_like_torch(backend: str) -> None:
    ours, p, theirs, pt = pair(uniform((3,)))
    for m, param in ((tw, p), (torch, pt)):
        param.requires_grad_()
        (param * param).sum().backward()
        with m.no_grad():
            param -= 0.5 * param.grad
            param.sub_(param.grad, alpha=0.25)
    np.testing.assert_array_equal(ours, theirs)


def version_error(m: Any, setup: Callable[[Any, Any, Any], Any], write: Callable) -> type | None:
    """The exception type a backward raises after ``write`` changed a tensor it needs."""
    x = m.from_numpy(uniform((2, 3)))
    w = m.from_numpy(uniform((2, 3), seed=4)).requires_grad_()
    y = setup(x, w, m)
    write(x)
    try:
        y.backward()
    except Exception as exc:  # noqa: BLE001 (the type is what is compared)
        return type(exc)
    return None


@pytest.mark.parametrize(
    "setup",
    [
        lambda x, w, m: (x * w).sum(),
        lambda x, w, m: (x[0] * w[1]).sum(),
        lambda x, w, m: (x.detach().t() @ w).sum(),
        lambda x, w, m: (x.reshape(-1) * w.reshape(-1)).sum(),
    ],
    ids=["saved_input", "saved_view", "saved_detached_transpose", "saved_reshape"],
)
@pytest.mark.parametrize(
    "write",
    [lambda x: x.add_(1.0), lambda x: x.__setitem__(0, 0.0), lambda x: x.detach().zero_()],
    ids=["add_", "setitem", "detach_zero_"],
)
def test_overwriting_a_saved_tensor_raises_like_torch(backend: str, setup: Any, write: Any) -> None:
    ours = version_error(tw, setup, write)
    assert ours is version_error(torch, setup, write) is RuntimeError


def test_backward_never_reads_values_written_later(backend: str) -> None:
    # As PyTorch: exp saved its output, which changed through a detach() alias and numpy().
    w = tw.from_numpy(uniform((3,))).requires_grad_()
    y = w.exp()
    d = y.detach()
    n = d.numpy()
    d.add_(1.0)
    n[0] = 50.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_with_a_grad_operand_keeps_the_old_value_as_torch(backend: str) -> None:
    # PyTorch saves a copy of self for w's gradient; before session 17 TensorWeaver saved
    # self itself (when self does not require grad), so backward refused.
    grads = []
    for m in (tw, torch):
        a = uniform((3,))
        x = m.from_numpy(a)
        w = m.from_numpy(uniform((3,), seed=2)).requires_grad_()
        x.mul_(w)
        x.sum().backward()
        grads.append((w.grad.tolist(), a.tolist()))
    assert grads[0] == grads[1]


def test_inplace_on_a_shared_tensor_that_requires_grad_like_torch(backend: str) -> None:
    arrays, grads = [], []
    for m in (tw, torch):
        a = uniform((3,))
        s = m.from_numpy(a)
        w = m.from_numpy(uniform((3,), seed=2)).requires_grad_()
        v = m.from_numpy(uniform((3,), seed=3)).requires_grad_()
        s.add_(w)  # s now requires grad, and its memory is still a's
        s.mul_(v)  # v's gradient needs s as it was before this write
        (s * s).sum().backward()
        arrays.append(a)
        grads.append((w.grad.numpy().copy(), v.grad.numpy().copy()))
    np.testing.assert_allclose(arrays[0], arrays[1], rtol=1e-15)
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_read_only_array_warns_like_torch_and_is_never_written(backend: str) -> None:
    a = uniform((3,))
    a.flags.writeable = False
    # PyTorch warns with a UserWarning too, but only once per process.
    with pytest.warns(UserWarning, match="not writable"):
        tw.from_numpy(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = tw.from_numpy(a)
    t.add_(1.0)
    np.testing.assert_array_equal(a, uniform((3,)))
    np.testing.assert_array_equal(t.numpy(), uniform((3,)) + 1.0)


@pytest.mark.parametrize(
    "array, error",
    [
        (np.arange(3, dtype=">i4"), ValueError),
        (np.arange(6.0)[::-1], ValueError),
        (np.array(["a", "b"]), TypeError),
        (np.zeros(2, dtype=[("a", "i4")]), TypeError),
        (np.zeros((2, 3))[:, ::-2], ValueError),
    ],
    ids=["byte_order", "negative_stride", "str", "structured", "negative_inner_stride"],
)
def test_bad_arrays_raise_like_torch(backend: str, array: np.ndarray, error: type) -> None:
    with pytest.raises(error):
        torch.from_numpy(array)
    with pytest.raises(error, match="from_numpy"):
        tw.from_numpy(array)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "clongdouble"])
def test_dtypes_tensorweaver_lacks_are_a_type_error(backend: str, dtype: str) -> None:
    # PyTorch has these dtypes; TensorWeaver does not, so it refuses them and names the fix.
    with pytest.raises(TypeError, match="astype"):
        tw.from_numpy(np.zeros(2, dtype))


@pytest.mark.cunumeric
def test_sharing_where_the_backend_can_and_copies_elsewhere(backend: str) -> None:
    a = uniform((3,))
    t = tw.from_numpy(a)
    t.add_(1.0)
    a[0] = 7.0
    n = t.numpy()
    n[1] = 8.0
    shared = backend in SHARES
    assert np.shares_memory(n, a) is shared
    expected = uniform((3,)) + 1.0
    if shared:
        expected[:2] = 7.0, 8.0
        np.testing.assert_array_equal(a, expected)
    else:
        np.testing.assert_array_equal(a, [7.0, *uniform((3,))[1:]])
    np.testing.assert_array_equal(t.numpy(), expected)


def test_sharing_state_is_released_with_the_memory(backend: str) -> None:
    state = sys.modules["tensorweaver.tensor"]
    tables = (state._HOST_SHARED, state._SHARED_STORAGES, state._WRITES)
    # What earlier tests left for the collector stays where it is, frozen, so no collection
    # here changes the counts but this test's own; the collections then walk only this test's
    # objects, where a whole collection of a worker's heap late in the suite costs seconds.
    gc.freeze()
    try:
        before = [len(table) for table in tables]
        a = uniform((3,))
        t = tw.from_numpy(a)
        views = [t[0], t.detach(), t.numpy()]
        t.add_(1.0)
        assert all(len(table) > n for table, n in zip(tables, before))
        del t, views, a
        gc.collect()
        assert [len(table) for table in tables] == before
    finally:
        gc.unfreeze()
