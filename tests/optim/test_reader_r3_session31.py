"""Reader r3, session 31: optimizer findings (strict xfails), each compared with torch 2.13."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from snippet_outcomes import same


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_sgd_foreach_listed_twice_with_a_new_buffer(device: str) -> None:
    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        d = m.nn.Parameter(m.tensor([3.0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (both warn of the duplicate)
            opt = m.optim.SGD([p, d, p], lr=0.1, momentum=0.9, foreach=True)
        out = []
        for i in range(2):
            p.grad = m.tensor([1.0, -1.0]) * (i + 1)
            d.grad = None if i == 0 else m.tensor([1.0])  # d's buffer starts at step 2
            opt.step()
            out += [p.clone(), opt.state[p]["momentum_buffer"].clone()]
        return out

    same(program, device, decimals=9)


@pytest.mark.parametrize("name", ["RMSprop", "Adam", "Adagrad"])
def test_compiled_step_with_a_parameter_listed_twice(name: str) -> None:
    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.tensor([1.0, 2.0, 3.0]))
        q = m.nn.Parameter(m.tensor([1.0, -1.0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = getattr(m.optim, name)([p, q, p], lr=0.1, foreach=False)

        def step() -> None:
            opt.step()

        run = m.compile(step) if m.__name__ == "tensorweaver" else step
        for i in range(3):
            p.grad = m.tensor([1.0, 0.5, -1.0]) * (i + 1)
            q.grad = m.tensor([0.25, 1.0])
            run()
        return p, q

    same(program, "numpy", decimals=9)


def test_sgd_listed_twice_makes_no_state() -> None:
    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.ones(2))
        q = m.nn.Parameter(m.ones(2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = m.optim.SGD([p, q, p], lr=0.1)
        p.grad, q.grad = m.ones(2), m.ones(2)
        opt.step()
        return len(opt.state), len(opt.state_dict()["state"]), p, q

    same(program, "numpy")
