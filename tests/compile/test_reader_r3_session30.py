"""Reader r3's session-30 findings: tw.compile's walk of Python values (keys it reads,
classes and modules) and torch's error texts for select and inference views, as strict xfails."""

from __future__ import annotations

import warnings
from typing import Any

import tensorweaver as tw
from compiled_calls import compiled_calls
from snippet_outcomes import same_each

#: A vocabulary wider than the walk's _WIDTH (64 entries), read by the step at a constant key.
VOCAB = {**{f"w{i}": i for i in range(100)}, "pad": 0}


def test_a_tensor_indexed_by_a_variable_beside_a_wide_vocabulary_replays() -> None:
    emb = tw.arange(30.0, dtype=tw.float64).reshape(10, 3)

    def step(i):
        return emb[i] + VOCAB["pad"]

    f = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.compiler.CompileWarning)
        got = [f(2).tolist() for _ in range(5)]
    assert got == [step(2).tolist()] * 5
    assert 1 <= f.traces <= 3


def test_an_argument_indexed_by_a_variable_beside_a_wide_vocabulary_replays() -> None:
    def step(x, i):
        return x[i] + VOCAB["pad"]

    x = tw.arange(6.0, dtype=tw.float64).reshape(3, 2)
    f = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.compiler.CompileWarning)
        got = [f(x, 1).tolist() for _ in range(4)]
    assert got == [step(x, 1).tolist()] * 4
    assert 1 <= f.traces <= 3


def test_a_callers_counter_beside_a_setting_does_not_retrace_an_indexing_step() -> None:
    state = {"scale": 2.0, "count": 0}
    data = tw.arange(6.0, dtype=tw.float64).reshape(3, 2)

    def step(i):
        return data[i] * state["scale"]

    f = tw.compile(step)
    got = []
    for k in range(6):
        state["count"] = k
        got.append(f(1).tolist())
    assert got == [step(1).tolist()] * 6
    assert f.traces <= 3


def _by_get_of_a_concatenated_key(m: Any) -> list:
    hp = {"lr_a": 1.0, "lr_b": 2.0}

    def step(x, name="b"):
        return x * hp.get("lr_" + name, 0.0)

    return compiled_calls(m, step, lambda: hp.update(lr_b=100.0))


def _by_get_of_an_f_string_with_a_constant_head(m: Any) -> list:
    hp = {"lr_a": 1.0, "lr_b": 2.0}

    def step(x, name="b"):
        return x * hp.get(f"lr_{name}")

    return compiled_calls(m, step, lambda: hp.update(lr_b=100.0))


def test_get_at_a_key_computed_from_a_constant_head() -> None:
    same_each(
        {
            "concatenated": _by_get_of_a_concatenated_key,
            "f_string": _by_get_of_an_f_string_with_a_constant_head,
        },
        "numpy",
    )


class _Tokens:
    """A user's class of many constants (more than the walk's _WIDTH)."""


for _i in range(70):
    setattr(_Tokens, f"T{_i}", _i)
_Tokens.PAD = 0


def test_keyword_unpacking_beside_a_wide_class_of_constants_replays() -> None:
    model = tw.nn.Linear(3, 3).double()

    def forward(input):
        return model(input)

    def step(batch):
        return forward(**batch) + _Tokens.PAD

    f = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.compiler.CompileWarning)
        for _ in range(4):
            f({"input": tw.ones(2, 3, dtype=tw.float64)})
    assert 1 <= f.traces <= 3


def _a_modules_class_attribute(m: Any) -> list:
    class Net(m.nn.Module):
        scale = 1.0

        def forward(self, x):
            return x * self.scale

    net = Net()

    def change() -> None:
        Net.scale = 3.0

    return compiled_calls(m, lambda x: net(x) + 1, change)


def test_a_modules_class_attribute_changed_after_the_replay() -> None:
    same_each({"class attribute": _a_modules_class_attribute}, "numpy")


def _message(fn: Any) -> Any:
    def program(m: Any) -> str:
        try:
            fn(m)
        except Exception as e:  # noqa: BLE001  (the text is the answer)
            return f"{type(e).__name__}: {e}"
        return "no error"

    return program


def test_select_out_of_range_says_what_torch_says() -> None:
    same_each(
        {
            "past the end": _message(lambda m: m.select(m.zeros(3, 4), 0, 3)),
            "negative": _message(lambda m: m.zeros(3, 4).select(1, -5)),
        },
        "numpy",
    )


def _inference_view_written_in_normal_mode(m: Any) -> None:
    x = m.zeros(3, 4)
    with m.inference_mode():
        v = x[1]
    x.requires_grad_()
    v.add_(1)


def test_an_inference_views_write_refusal_names_inference_mode() -> None:
    same_each({"refusal": _message(_inference_view_written_in_normal_mode)}, "numpy")


def test_a_callers_step_counter_does_not_retrace_a_step_calling_opt_step() -> None:
    w = tw.ones(2, dtype=tw.float64, requires_grad=True)
    opt = tw.optim.SGD([w], lr=0.1)
    state = {"scale": 2.0, "step": 0}

    def step(x):
        loss = (x * w).sum() * state["scale"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = tw.compile(step)
    for k in range(6):
        state["step"] = k
        f(tw.ones(2, dtype=tw.float64))
    assert f.traces <= 3
