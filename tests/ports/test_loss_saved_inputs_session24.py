"""Losses whose PyTorch node saves their inputs refuse a backward once one changed in place,
and a leaf's AccumulateGrad hooks run where PyTorch's do; each program against torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _changed(m: Any, loss: str, which: int, **kwargs: Any) -> Any:
    """``a.grad`` after the loss of ``a * 1`` and a target, one of them then changed in
    place (``which``: 0 the input, 1 the target)."""
    a = m.tensor([0.2, 0.5, 0.7], dtype=m.float64, requires_grad=True)
    operands = [a * 1, m.tensor([0.1, 0.9, 0.4], dtype=m.float64)]
    out = getattr(m.nn.functional, loss)(*operands, **kwargs)
    operands[which].add_(0.01)
    out.backward()
    return a.grad


def _changed_each(losses: dict[str, dict]) -> dict[str, Program]:
    return {
        f"{name} {'input' if which == 0 else 'target'}": (
            lambda m, name=name, which=which: _changed(
                m, losses[name]["fn"], which, **losses[name]["kwargs"]
            )
        )
        for name in losses
        for which in (0, 1)
    }


SAVING = {
    "huber": {"fn": "huber_loss", "kwargs": {}},
    "huber sum": {"fn": "huber_loss", "kwargs": {"reduction": "sum"}},
    "bce with logits": {"fn": "binary_cross_entropy_with_logits", "kwargs": {}},
    "smooth_l1 beta 0": {"fn": "smooth_l1_loss", "kwargs": {"beta": 0.0}},  # (l1: none saved)
    "l1": {"fn": "l1_loss", "kwargs": {}},
    "kl_div": {"fn": "kl_div", "kwargs": {"reduction": "batchmean"}},
}


def test_losses_refuse_saved_inputs_changed_in_place(spec: str) -> None:
    same_each(_changed_each(SAVING), spec)


def test_soft_margin_loss_refuses_its_input_changed_in_place(spec: str) -> None:
    same_each(_changed_each({"soft_margin": {"fn": "soft_margin_loss", "kwargs": {}}}), spec)


def _accumulate_hooks(m: Any, how: str) -> Any:
    a = m.arange(1.0, 4.0, dtype=m.float64).requires_grad_()
    out = a * 2
    node = out.grad_fn.next_functions[0][0]
    seen: list = []
    node.register_prehook(lambda go: (seen.append(("pre", go)), tuple(2 * g for g in go))[1])
    node.register_hook(lambda gi, go: seen.append(("hook", gi, go)))
    a.register_hook(lambda g: seen.append(("tensor hook", g)))
    a.register_post_accumulate_grad_hook(lambda t: seen.append(("post", t.grad)))
    if how == "inputs":
        out.sum().backward(inputs=[a])
    elif how == "grad":
        seen.append(m.autograd.grad(out.sum(), [a]))
    else:
        a.requires_grad_(False)
        out.sum().backward()
    return a.grad, seen


def _inputs_never_requiring_grad(m: Any) -> Any:
    a, c = m.ones(3, requires_grad=True), m.ones(3)
    (a * 2).sum().backward(inputs=[a, c])
    return a.grad, c.grad


def test_accumulate_grad_hooks_and_inputs(spec: str) -> None:
    same_each(
        {
            **{how: lambda m, how=how: _accumulate_hooks(m, how) for how in ("inputs", "grad")},
            "unset": lambda m: _accumulate_hooks(m, "unset"),
            "inputs= never requiring grad": _inputs_never_requiring_grad,
        },
        spec,
    )
