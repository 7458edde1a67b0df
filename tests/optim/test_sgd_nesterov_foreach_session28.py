"""SGD with Nesterov momentum and ``foreach=True`` adds ``momentum * buf`` into the ``.grad``
tensors themselves, as torch 2.13's ``_multi_tensor_sgd`` does while the gradients it steps
along are still ``.grad`` (no ``maximize``, no weight decay); a gradient accumulated over
the step (no ``zero_grad``) sees it. Other settings leave ``.grad`` alone (reader I)."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
from snippet_outcomes import grid, same

OPTIONS = {
    "foreach": {"foreach": True},
    "foreach_default": {"foreach": None},
    "single_tensor": {"foreach": False},
    "foreach_maximize": {"foreach": True, "maximize": True},
    "foreach_weight_decay": {"foreach": True, "weight_decay": 0.1},
}


def _net(m: Any, width: int) -> Any:
    net = m.nn.Sequential(m.nn.Linear(3, width), m.nn.Tanh(), m.nn.Linear(width, 1)).double()
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.linspace(-1, 1, p.numel(), dtype=m.float64).reshape(p.shape))
    return net


def _two_steps(m: Any, options: dict, width: int = 4) -> list:
    net = _net(m, width)
    opt = m.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, **options)
    x = grid(m, 5, 3) / 10
    kept = []
    for _ in range(2):
        net(x).pow(2).sum().backward()  # (no zero_grad: the second adds to the first's .grad)
        kept = [p.grad for p in net.parameters()]
        opt.step()
    same_objects = [g is p.grad for g, p in zip(kept, net.parameters())]
    return [p.grad for p in net.parameters()], list(net.parameters()), same_objects


@pytest.mark.parametrize("name", list(OPTIONS))
def test_nesterov_grads_after_two_steps(name: str, spec: str) -> None:
    options = OPTIONS[name]

    def program(m: Any) -> list:
        return _two_steps(m, options)

    same(program, spec)


def test_nesterov_foreach_grads_written_in_place_when_large(spec: str) -> None:
    # A 3 x 2**15 weight is large enough for the foreach step to write its array in place.
    def program(m: Any) -> list:
        grads, params, same_objects = _two_steps(m, {"foreach": True}, width=1 << 15)
        # (samples, no sums: a sum's rounding depends on the summation order)
        return [t.reshape(-1)[::1021] for t in grads + params], same_objects

    same(program, spec, decimals=3)  # (values up to ~1e5: their last bits are BLAS's)


def _complex_parameter(m: Any) -> list:
    # A complex parameter takes tw's one-parameter path under foreach=True.
    p = m.nn.Parameter(m.linspace(-1, 1, 4, dtype=m.float64) * (1 + 2j))
    opt = m.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    for i in range(2):
        (p * p.conj() * (i + 1)).real.sum().backward()
        opt.step()
    return p.grad, p


def test_nesterov_foreach_complex_parameter(spec: str) -> None:
    same(_complex_parameter, spec)


def _compiled_steps(m: Any) -> list:
    # The same steps through tw.compile (torch's eager steps are what torch.compile gives):
    # its replays write the .grad tensors too.
    net = _net(m, 4)
    opt = m.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True, foreach=True)
    x = grid(m, 5, 3) / 10

    def step() -> Any:
        loss = net(x).pow(2).sum()
        loss.backward()  # (no zero_grad: .grad keeps what the last step added into it)
        opt.step()
        return loss

    run = tw.compile(step, backend="tensorweaver") if m is tw else step  # (no inductor)
    losses = [run() for _ in range(6)]
    return losses, [p.grad for p in net.parameters()], list(net.parameters())


def test_nesterov_foreach_in_a_compiled_step(spec: str) -> None:
    same(_compiled_steps, spec)
