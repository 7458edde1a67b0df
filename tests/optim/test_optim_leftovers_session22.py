"""Sparse gradients as PyTorch reports them: ``nn.Embedding(sparse=True)`` and
``EmbeddingBag(sparse=True)`` give ``.grad.is_sparse`` gradients (stored dense), which stay
sparse when sparse ones are summed (two lookups, two backwards, ``zero_grad`` to zeros) and
turn dense when a dense one is added; ``optim.SparseAdam`` steps them as torch's and
refuses a dense one with torch's RuntimeError. Each program runs on torch and on tw."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.compiler import CompileWarning

torch = pytest.importorskip("torch")

WEIGHTS = np.random.default_rng(22).standard_normal((7, 3))


def _both(program: Any) -> tuple[Any, Any]:
    return program(torch), program(tw)


def _embedding(m: Any) -> Any:
    return m.nn.Embedding.from_pretrained(m.tensor(WEIGHTS), freeze=False, sparse=True)


def test_sparse_embedding_trains_with_sparse_adam_as_torch() -> None:
    def program(m: Any) -> Any:
        emb = _embedding(m)
        opt = m.optim.SparseAdam(emb.parameters(), lr=0.1, betas=(0.8, 0.95))
        seen = []
        for step in range(4):
            opt.zero_grad(set_to_none=step % 2 == 0)
            # Two lookups of one table in a forward, and a second backward: sparse sums.
            (emb(m.tensor([1, 2, 2])).sum() + emb(m.tensor([[4, step]])).pow(2).sum()).backward()
            seen.append(emb.weight.grad.is_sparse)
            (emb(m.tensor([3])) * 2).sum().backward()
            seen.append(emb.weight.grad.is_sparse)
            opt.step()
        state = opt.state[emb.weight]
        return seen, emb.weight.detach().numpy(), state["exp_avg"].numpy(), state["step"]

    (seen, *theirs), (ours_seen, *ours) = _both(program)
    assert ours_seen == seen == [True] * 8
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    assert ours[2] == theirs[2]


def test_a_dense_gradient_added_makes_it_dense_and_sparse_adam_refuses_it() -> None:
    def program(m: Any) -> Any:
        emb = _embedding(m)
        opt = m.optim.SparseAdam(emb.parameters())
        emb(m.tensor([1])).sum().backward()
        seen = [emb.weight.grad.is_sparse]
        emb.weight.sum().backward()  # a dense gradient added to the sparse .grad
        seen.append(emb.weight.grad.is_sparse)
        with pytest.raises(RuntimeError) as caught:
            opt.step()
        return seen, str(caught.value), emb.weight.detach().numpy()

    theirs, ours = _both(program)
    assert ours[:2] == theirs[:2] and theirs[0] == [True, False]
    assert "does not support dense gradients" in ours[1]
    np.testing.assert_array_equal(ours[2], WEIGHTS)  # nothing stepped


def test_sparse_and_dense_lookups_in_one_backward_give_a_dense_gradient() -> None:
    def program(m: Any) -> Any:
        emb = _embedding(m)
        (
            emb(m.tensor([1])).sum() + m.nn.functional.embedding(m.tensor([2]), emb.weight).sum()
        ).backward()
        return emb.weight.grad.is_sparse, emb.weight.grad.to_dense().numpy()

    (theirs, their_grad), (ours, our_grad) = _both(program)
    assert ours is theirs is False
    np.testing.assert_array_equal(our_grad, their_grad)


@pytest.mark.parametrize("sparse", [False, True])
def test_embedding_bag_and_functional_embedding_report_is_sparse_as_torch(sparse: bool) -> None:
    def program(m: Any) -> Any:
        bag = m.nn.EmbeddingBag(5, 2, mode="sum", sparse=sparse)
        bag(m.tensor([[1, 2]])).sum().backward()
        w = m.tensor(WEIGHTS, requires_grad=True)
        m.nn.functional.embedding(m.tensor([0, 6]), w, sparse=sparse).sum().backward()
        return bag.weight.grad.is_sparse, w.grad.is_sparse, w.grad.to_dense().numpy()

    theirs, ours = _both(program)
    assert ours[:2] == theirs[:2] == (sparse, sparse)
    np.testing.assert_array_equal(ours[2], theirs[2])


# -- compiled ASGD whose averaging starts during the run (t0 small) ---------------------------


def _asgd(m: Any, t0: float, options: dict) -> tuple[Any, Any, Any]:
    w = m.nn.Parameter(m.tensor(WEIGHTS[:, 0], dtype=m.float64))
    opt = m.optim.ASGD([w], lr=0.05, t0=t0, **options)

    def step() -> Any:
        opt.zero_grad()
        (w * w * w).sum().backward()
        opt.step()
        return w.detach().sum()

    return w, opt, step


@pytest.mark.parametrize("t0", [1.0, 2.5, 4.0])
@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1, "maximize": True, "lambd": 0.3}])
@pytest.mark.parametrize("state_dtype", ["float64", "float32"])
def test_compiled_asgd_replays_across_t0_as_eager_and_torch(
    t0: float, options: dict, state_dtype: str
) -> None:
    # max(1, step - t0) and mu != 1 change outcome at steps t0 + 1 and t0 + 2: recomputed as
    # data, the replay goes on (it ran eagerly after them before), bit for bit as eager tw.
    # (The scalar state takes the default dtype; conftest.py restores it.)
    torch.set_default_dtype(getattr(torch, state_dtype))
    tw.set_default_dtype(getattr(tw, state_dtype))
    theirs, their_opt, their_step = _asgd(torch, t0, options)
    eager, eager_opt, eager_step = _asgd(tw, t0, options)
    ours, our_opt, our_step = _asgd(tw, t0, options)
    run = tw.compile(our_step, backend="tensorweaver")
    for _ in range(8):
        their_step()
        eager_step()
        run()
        np.testing.assert_array_equal(ours.detach().numpy(), eager.detach().numpy())
        ax = our_opt.state[ours]["ax"].numpy()
        np.testing.assert_array_equal(ax, eager_opt.state[eager]["ax"].numpy())
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-13)
        np.testing.assert_allclose(ax, their_opt.state[theirs]["ax"].numpy(), rtol=1e-13)
        for key in ("step", "eta", "mu"):
            assert our_opt.state[ours][key].item() == their_opt.state[theirs][key].item()
    assert run.traces == 3  # (state appears, then two equal traces: replayed from then on)


# -- tw.compile: checks hoisted past writes into memory shared with NumPy --------------------


def _logged_loop(compiled: bool, shift: bool) -> list[np.ndarray]:
    """Losses and weights of an SGD loop whose parameters and gradients are logged with
    ``.numpy()`` (sharing their memory: the step writes into it); with ``shift`` the class
    targets, shared with NumPy too, are moved in place before the loss reads them."""
    tw.manual_seed(0)
    net = tw.nn.Sequential(tw.nn.Linear(4, 6), tw.nn.BatchNorm1d(6), tw.nn.Linear(6, 3))
    opt = tw.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=False)
        if shift:
            y.sub_(1)
        loss = tw.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    run = tw.compile(step, backend="tensorweaver") if compiled else step
    rng = np.random.default_rng(5)
    seen = []
    for call in range(5):
        x = tw.tensor(rng.standard_normal((5, 4)), dtype=tw.get_default_dtype())
        targets = rng.integers(0, 3, 5) + (1 if shift else 0)
        if shift and call == 4:
            targets[0] = 0  # -1 after the shift: cross_entropy's check must see it
        try:
            seen.append(run(x, tw.from_numpy(targets)).detach().numpy().copy())
        except IndexError as error:
            seen.append(np.array(str(error)))
        seen += [p.detach().numpy().copy() for p in net.parameters()]
        seen += [p.grad.numpy().copy() for p in net.parameters()]
    return seen


@pytest.mark.parametrize("shift", [False, True], ids=["logged", "targets_written_first"])
def test_logged_loop_replays_as_eager(shift: bool) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _logged_loop(True, shift)
    want = _logged_loop(False, shift)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"value {k}")
    warned = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    # (The targets' write comes before the check that reads them: that step runs eagerly.)
    assert warned == [] if not shift else len(warned) == 1
