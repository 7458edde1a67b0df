"""``p.data.add_(p.grad, alpha=-lr)`` (word_language_model's hand-written SGD) writes into the
parameter's memory at every size, as torch's add_ does, where the ``.data`` alias is the one
tensor following the parameter (ops/in_place_writes.py ``add_scaled``); everything else that
must see the write, or make the core rebind, behaves as torch's: views and aliases, version
counters, graphs that saved the values, NumPy memory, tw.compile's recorder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from snippet_outcomes import exp_saving_its_output, grid, same_each

DEVICES = ["numpy", "torch:cpu"]


def _param(m: Any, n: int = 5) -> Any:
    p = m.nn.Parameter(grid(m, n).clone())  # (as a module's: of a tensor nobody holds)
    p.grad = grid(m, n) * 0.5
    return p


def _small_update_keeps_the_memory(m: Any) -> Any:
    p = _param(m)
    address = p.data_ptr()
    p.data.add_(p.grad, alpha=-0.1)
    return p.data_ptr() == address, p, p._version


def _repeated_updates_count_on_the_alias(m: Any) -> Any:
    p = _param(m)
    d = p.data
    d.add_(p.grad, alpha=-0.1)
    d.add_(p.grad, alpha=-0.1)
    return d._version, p._version, p


def _detached_alias_shares_the_count(m: Any) -> Any:
    p = _param(m)
    address = p.data_ptr()
    with m.no_grad():
        d = p.detach()
        d.add_(p.grad, alpha=-0.1)
    return d._version, p._version, p.data_ptr() == address, p


def _live_view_follows(m: Any) -> Any:
    p = _param(m)
    v = p[1:3]
    p.data.add_(p.grad, alpha=-0.1)
    return v.detach(), p


def _live_alias_follows(m: Any) -> Any:
    p = _param(m)
    d = p.detach()
    p.data.add_(p.grad, alpha=-0.1)
    return d, d._version, p._version


def _alias_of_an_alias(m: Any) -> Any:
    p = _param(m)
    d = p.data
    e = d.data
    e.add_(p.grad, alpha=-0.1)
    return d, p, e._version, d._version, p._version


def _graph_saved_the_parameter(m: Any) -> Any:
    p = _param(m)
    y = (p * p).sum()
    p.data.add_(p.grad, alpha=-0.1)  # unseen by the version check: backward reads it
    p.grad = None
    y.backward()
    return p.grad


def _saved_output_written_through_data(m: Any) -> Any:
    x = grid(m, 4).requires_grad_()
    out = exp_saving_its_output(m).apply(x)
    out.data.add_(m.ones(4, dtype=m.float64), alpha=1.0)
    out.sum().backward()
    return x.grad, out


def _numpy_memory(m: Any) -> Any:
    a = np.arange(5.0)
    t = m.from_numpy(a)
    t.data.add_(m.ones(5, dtype=m.float64), alpha=2.0)
    return m.tensor(a.copy()), t


def _update_with_itself(m: Any) -> Any:
    p = _param(m)
    p.data.add_(p, alpha=1.0)
    return p


def _update_then_backward_of_a_later_graph(m: Any) -> Any:
    p = _param(m)
    p.data.add_(p.grad, alpha=-0.1)
    p.grad = None
    (p**2).sum().backward()
    return p.grad, p._version


def _inference_parameter(m: Any) -> Any:
    with m.inference_mode():
        p = grid(m, 5)
    d = p.data
    try:
        d.add_(grid(m, 5), alpha=1.0)
    except RuntimeError as e:
        return "refused", type(e).__name__
    return d


def _sgd_step_keeps_the_memory(**options: Any) -> Any:
    def program(m: Any) -> Any:
        params = [_param(m), _param(m, 3)]
        opt = m.optim.SGD(params, lr=0.1, foreach=True, **options)
        addresses = [p.data_ptr() for p in params]
        for _ in range(2):
            opt.step()
        buffers = [opt.state[p].get("momentum_buffer") for p in params]
        return [p.data_ptr() == a for p, a in zip(params, addresses)], params, buffers

    return program


PROGRAMS = {
    "sgd step keeps the memory": _sgd_step_keeps_the_memory(),
    "sgd momentum step keeps the memory": _sgd_step_keeps_the_memory(momentum=0.9),
    "sgd nesterov step keeps the memory": _sgd_step_keeps_the_memory(
        momentum=0.9, nesterov=True, weight_decay=0.1
    ),
    "small update keeps the memory": _small_update_keeps_the_memory,
    "repeated updates count on the alias": _repeated_updates_count_on_the_alias,
    "detached alias shares the count": _detached_alias_shares_the_count,
    "live view follows": _live_view_follows,
    "live alias follows": _live_alias_follows,
    "alias of an alias": _alias_of_an_alias,
    "graph saved the parameter": _graph_saved_the_parameter,
    "saved output written through data": _saved_output_written_through_data,
    "numpy memory": _numpy_memory,
    "update with itself": _update_with_itself,
    "update then a later graph": _update_then_backward_of_a_later_graph,
    "inference parameter": _inference_parameter,
}


@pytest.mark.parametrize("device", DEVICES)
def test_data_add_as_torch(device: str) -> None:
    same_each(PROGRAMS, device, decimals=12)  # (numpy rounds a Nesterov step otherwise)


@pytest.mark.parametrize("device", DEVICES)
def test_many_live_views_see_every_update(device: str) -> None:
    """64 live views of one parameter: each update reaches all of them (the rebind path)."""
    with tw.device(device):
        p = tw.nn.Parameter(tw.arange(128.0))
        views = [p[i : i + 2] for i in range(64)]
        for _ in range(3):
            p.data.add_(tw.ones(128), alpha=1.0)
    for i, v in enumerate(views):
        np.testing.assert_array_equal(v.detach().numpy(), [i + 3.0, i + 4.0])


def test_a_compiled_hand_written_sgd_loop_steps_as_eager() -> None:
    """tw.compile's recorder shadows foreach_inplace: the traced update is the out-of-place
    primitive, and replays step as the eager loop does."""
    tw.manual_seed(0)
    eager = tw.nn.Linear(4, 3, device="torch:cpu", dtype=tw.float64)
    compiled = tw.nn.Linear(4, 3, device="torch:cpu", dtype=tw.float64)
    compiled.load_state_dict(eager.state_dict())
    x = tw.linspace(-1, 1, 8, dtype=tw.float64, device="torch:cpu").reshape(2, 4)

    def step(model: Any) -> Any:
        model.zero_grad()
        loss = (model(x) ** 2).sum()
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-0.1)
        return loss

    fast = tw.compile(step, backend="tensorweaver")  # (the core's replay: no inductor)
    for _ in range(5):
        assert step(eager).item() == fast(compiled).item()
    assert fast.traces < 5  # (the later steps replayed)
    for p, q in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
