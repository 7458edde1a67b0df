"""Views that follow their base, the cases a review found (spurious in-place errors in
recurrences, host-shared expands, compiled steps, fills through views of expands, reshape
copies, ``.data`` replaced, old views after an optimizer step, ...): each compared with
torch on the same inputs. The strict xfails name what is still left."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch, grads_like_torch, like_torch, uniform

X = uniform((3, 4), seed=5)


# -- spurious "modified by an inplace operation" errors (new with views that follow) --------


@pytest.mark.parametrize(
    "make",
    [
        lambda v: v * 3,  # MulBackward0 by a number saves nothing in PyTorch
        lambda v: v / 2,
        lambda v: v.exp(),  # exp, tanh, sigmoid save their output, not their input
        lambda v: v.tanh(),
        lambda v: v.sigmoid(),
    ],
    ids=["mul-number", "div-number", "exp", "tanh", "sigmoid"],
)
def test_a_row_computed_from_another_row_then_written_back(backend: str, make) -> None:
    """``y[t + 1] = f(y[t])``: PyTorch's backward does not read ``y[t]`` for these ``f``,
    so the later writes into ``y`` do not trip its version check."""

    def fn(m, x):
        y = x * 1
        for t in range(2):
            y[t + 1] = make(y[t])
        return y

    grads_like_torch(fn, X)


# -- tw.compile: replayed steps do not bring views and aliases up to date -------------------


def _train_and_keep_views(m, compiled: bool) -> tuple:
    lin = m.nn.Linear(3, 2).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(X[:2, :3]))
        lin.bias.zero_()
    opt = m.optim.SGD(lin.parameters(), lr=0.05)
    x = m.tensor(X[:, 1:])
    kept = (lin.state_dict()["weight"], lin.weight.T, lin.weight[0])

    def step():
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = m.compile(step)
    for _ in range(6):  # traces, then replays
        step()
    return (lin.weight.detach(), *(t.detach() for t in kept))


def test_views_of_parameters_follow_compiled_steps(backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _train_and_keep_views(tw, compiled=True)
    assert_like_torch(ours, _train_and_keep_views(torch, compiled=False))


# -- fill_/zero_ through a view of an expand(): spurious errors ----------------------------


@pytest.mark.parametrize(
    "fill",
    [
        lambda e: e.T.fill_(1.5),
        lambda e: e.mT.zero_(),
        lambda e: e.transpose(0, 1).zero_(),
        lambda e: e.movedim(0, 1).fill_(1.5),
        lambda e: e.unsqueeze(0).fill_(1.5),
        lambda e: e.view(1, 3, 4).zero_(),
        lambda e: e.expand(2, 3, 4).fill_(1.5),
    ],
    ids=["T", "mT", "transpose", "movedim", "unsqueeze", "view", "expand"],
)
def test_fill_through_a_view_of_an_expanded_tensor_like_torch(backend: str, fill) -> None:
    def fn(m, x):
        b = x[:1].clone()
        e = b.expand(3, 4)
        fill(e)
        return b, e

    like_torch(fn, X)


# -- reshape of a tensor it cannot view: PyTorch copies ------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda f: f.add_(1),
        lambda f: f.__setitem__(0, 5.0),
    ],
    ids=["add_", "setitem"],
)
def test_reshape_of_an_expanded_tensor_is_a_copy_like_torch(backend: str, write) -> None:
    def fn(m, x):
        f = x[:1].expand(3, 4).reshape(12)
        g = x[:1].expand(3, 4).flatten()
        write(f)
        write(g)
        return x, f, g

    like_torch(fn, X)


def test_reshape_of_a_transposed_tensor_does_not_follow_like_torch(backend: str) -> None:
    def fn(m, x):
        f = x.t().reshape(12)  # a copy in PyTorch: not contiguous
        r = x.mT.ravel()
        x.add_(1)
        return f, r

    like_torch(fn, X)


# -- views that do not follow --------------------------------------------------------------


def test_diagonal_follows_its_base_like_torch(backend: str) -> None:
    def fn(m, x):
        d = x.diagonal()
        e = x.diagonal(offset=1)
        x.mul_(2)
        return d, e

    like_torch(fn, X)


# -- .data = ...: old views and aliases keep the old memory ---------------------------------


def test_writes_through_old_views_skip_new_data_like_torch(backend: str) -> None:
    def fn(m, x):
        v, d = x[0], x.detach()
        x.data = m.zeros(3, 4, dtype=x.dtype)
        v.fill_(7.0)  # into the memory x had, not into x
        d.add_(1)
        return x, v, d

    like_torch(fn, X)


def test_a_state_dict_tensor_after_data_replaced_like_torch(backend: str) -> None:
    def fn(m, x):
        lin = m.nn.Linear(4, 3).double()
        kept = lin.state_dict()["weight"]
        lin.weight.data = x.clone()
        kept.fill_(7.0)
        return lin.weight.detach()

    like_torch(fn, X)


def test_data_of_an_alias_replaced_like_torch(backend: str) -> None:
    def fn(m, x):
        d = x.detach()
        d.data = m.zeros(3, 4, dtype=x.dtype)
        d.add_(1)
        return x, d

    like_torch(fn, X)


# -- a view of a parameter used again after an optimizer step ------------------------------


@pytest.mark.parametrize("take", [lambda p: p[0], lambda p: p.T, lambda p: p.view(12)])
def test_backward_through_an_old_view_after_a_step_like_torch(backend: str, take) -> None:
    def fn(m, x):
        p = m.nn.Parameter(x.clone())
        v = take(p)  # as a module that keeps a view of its parameter from __init__
        grads = []
        for _ in range(2):
            p.grad = None
            (v * v).sum().backward()
            grads.append(p.grad.clone())
            with m.no_grad():
                p.sub_(0.1 * p.grad)
        return tuple(grads), v.detach()

    like_torch(fn, X)


# -- deep chains of views -------------------------------------------------------------------


def test_a_write_through_a_chain_of_300_views_like_torch(backend: str) -> None:
    def fn(m, x):
        v = x
        for _ in range(300):
            v = v[1:]
        v.add_(1)
        x.mul_(2)
        return x, v

    like_torch(fn, np.zeros(310))


# -- expand(): writes PyTorch allows --------------------------------------------------------


def test_in_place_on_an_empty_expand_like_torch(backend: str) -> None:
    def fn(m, x):
        e = x.expand(0, 4)
        e.add_(1)
        return x, e

    like_torch(fn, X[:1])


@pytest.mark.parametrize(
    "write",
    [
        lambda m, e: e.masked_fill_(e < 0, -5.0),
        lambda m, e: e.index_fill_(1, m.tensor([0, 2]), 4.0),
        lambda m, e: e.index_put_((m.tensor([1]),), m.full((4,), 3.0, dtype=e.dtype)),
        lambda m, e: e.index_put_(
            (m.tensor([0, 2]), m.tensor([1, 3])), m.tensor([7.0, 8.0], dtype=e.dtype)
        ),
        lambda m, e: e.T.masked_fill_(e.T > 0, 5.0),
    ],
    ids=["masked_fill_", "index_fill_", "index_put_", "index_put_-two", "masked_fill_-T"],
)
def test_a_masked_fill_of_an_expanded_tensor_like_torch(backend: str, write) -> None:
    """PyTorch allows it (deprecated, with its warning): one value through every copy."""

    def fn(m, x):
        b = x[:1].clone()
        e = b.expand(3, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write(m, e)
        return b, e

    like_torch(fn, X)


def test_a_masked_fill_of_an_expanded_tensor_warns_like_torch(backend: str) -> None:
    for m in (torch, tw):
        e = m.zeros(1, 3).expand(2, 3)
        with pytest.warns(UserWarning, match="masked_fill_ on expanded tensors is deprecated"):
            e.masked_fill_(m.tensor([True, False, True]), 1.0)


def test_a_masked_setitem_of_an_expanded_tensor_like_torch(backend: str) -> None:
    # (it raised the repeated-element error: PyTorch writes masks and index tensors, warning)
    def fn(m, x):
        b = x[:1].clone()
        e = b.expand(3, 4)
        with pytest.warns(UserWarning, match="masked_fill_ on expanded tensors is deprecated"):
            e[e > 0] = 5.0
        with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
            e[m.tensor([0, 2])] = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=x.dtype)
        return b

    like_torch(fn, X)


# -- autograd flags -------------------------------------------------------------------------


@pytest.mark.parametrize("grad_on_change", [True, False])
def test_a_view_made_under_no_grad_then_its_base_changed_like_torch(
    backend: str, grad_on_change: bool
) -> None:
    """PyTorch raises when the view is next used in autograd (here: at backward)."""

    def fn(m, x):
        x = x.requires_grad_()
        y = x * 1
        with m.no_grad():
            v = y[0]
        with m.set_grad_enabled(grad_on_change):
            y.mul_(2)
        (v * 2).sum().backward()

    for m in (torch, tw):
        with pytest.raises(RuntimeError, match="created in no_grad mode and its base"):
            fn(m, m.tensor(X))


def test_a_view_made_under_no_grad_then_changed_with_grad_like_torch(backend: str) -> None:
    def fn(m, x):
        y = x.requires_grad_() * 1
        with m.no_grad():
            v = y[0]
        v.mul_(2)

    for m in (torch, tw):
        with pytest.raises(RuntimeError, match="created in no_grad mode and is being modified"):
            fn(m, m.tensor(X))


def test_views_made_under_no_grad_stay_usable_like_torch(backend: str) -> None:
    """No base change, or a base without a graph: no error, same values and gradients."""

    def fn(m, x):
        x = x.requires_grad_()
        y = x * 1
        with m.no_grad():
            v = y[0]
            w = x.detach()[1]
        w.mul_(3)
        with m.no_grad():
            v.add_(1)  # under no_grad, as PyTorch allows
        (y * y).sum().backward()
        return v, w, y.detach(), x.grad

    like_torch(fn, X)


def test_detach_in_place_of_a_view_like_torch(backend: str) -> None:
    def fn(m, x):
        v = x.clone()[1]
        v.detach_()

    with pytest.raises(RuntimeError, match="detach"):
        fn(torch, torch.tensor(X))
    with pytest.raises(RuntimeError, match="detach"):
        fn(tw, tw.tensor(X))


# -- nn.Parameter shares its data's memory --------------------------------------------------


def test_a_parameter_shares_the_tensor_it_was_made_from_like_torch(backend: str) -> None:
    def fn(m, x):
        v = x[0]
        p = m.nn.Parameter(x)
        with m.no_grad():
            p.mul_(2)
        return x, v

    like_torch(fn, X)


def test_a_parameter_follows_the_tensor_it_was_made_from_like_torch(backend: str) -> None:
    def fn(m, x):
        p = m.nn.Parameter(x)
        b = m.nn.Buffer(x[1])
        r = p[2]
        x.add_(1)
        x[1].mul_(3)
        b.sub_(0.5)
        p.data = m.zeros(3, 4, dtype=x.dtype)
        x.add_(10)  # p's memory is new now
        return p.detach(), r, b, x

    like_torch(fn, X)


# -- memory shared with NumPy ---------------------------------------------------------------


def test_an_expand_of_a_numpy_tensor_keeps_sharing_after_a_change(backend: str) -> None:
    """After an in-place change of its base, an ``expand()`` of a ``from_numpy`` tensor
    still sees NumPy's writes, as PyTorch's does (its read-only broadcast memory made the
    refresh give it a private copy)."""

    def fn(m, a):
        t = m.from_numpy(a)
        e = t.expand(3, 4)
        t.add_(1)
        a[0, 1] = 7.0
        return e.clone()

    assert_like_torch(fn(tw, X[:1].copy()), fn(torch, X[:1].copy()))


def test_a_refused_write_onto_repeated_elements_changes_nothing(backend: str) -> None:
    """PyTorch refuses before writing; here the view kept the refused values."""

    def fn(m, x):
        b = x[:1].clone()
        e = b.expand(3, 4)
        r = e[:, 0]
        with pytest.raises(RuntimeError, match="more than one element"):
            r.add_(1)
        return r, b

    like_torch(fn, X)
