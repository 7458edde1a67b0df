"""Reader r3's findings (session 29): strict xfails compared with eager tw / torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from snippet_outcomes import same


def _dict_entry_read_by_a_key_argument(m):
    hp = {"lr": 1.0, "wd": 2.0}

    def step(x, key):
        return x * hp[key]  # (the key is an argument, not a constant of the code)

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(5):  # two traces, then replays
        if i == 3:
            hp["lr"] = 100.0
        got.append(f(m.ones(2, dtype=m.float64), "lr"))
    return got


def _dict_entry_read_by_a_closure_key(m):
    hp = {"lr": 1.0, "wd": 2.0}
    key = "lr"

    def step(x):
        return x * hp[key]  # (the key is a closure cell's string)

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(5):
        if i == 3:
            hp["lr"] = 100.0
        got.append(f(m.ones(2, dtype=m.float64)))
    return got


def _wide_dict_entry_read_by_a_computed_key(m):
    hp = {f"k{i}": float(i) for i in range(100)}

    def step(x, i):
        return x * hp["k" + str(i)]

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(5):
        if i == 3:
            hp["k9"] = 1000.0
        got.append(f(m.ones(2, dtype=m.float64), 9))
    return got


@pytest.mark.parametrize(
    "program",
    [
        _dict_entry_read_by_a_key_argument,
        _dict_entry_read_by_a_closure_key,
        _wide_dict_entry_read_by_a_computed_key,
    ],
)
def test_a_dict_entry_read_by_a_key_the_code_does_not_spell(program):
    same(program, "numpy")


def _radam_tensor_betas(m):
    ps = [
        m.tensor(np.random.RandomState(i).randn(*s), dtype=m.float32, requires_grad=True)
        for i, s in enumerate([(4, 3), (3,)])
    ]
    opt = m.optim.RAdam(ps, lr=0.01, betas=(m.tensor(0.9), m.tensor(0.999)))
    for i in range(4):
        opt.zero_grad()
        sum((p * p * (i + 1) + p.sin()).sum() for p in ps).backward()
        opt.step()
    return [p.detach() for p in ps]


def test_radam_with_tensor_betas_in_float32():
    same(_radam_tensor_betas, "numpy", decimals=None)
