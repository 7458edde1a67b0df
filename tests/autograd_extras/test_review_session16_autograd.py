"""Review of session 16's autograd change (saved outputs and versions), against torch 2.13: a
pass for chosen inputs (``autograd.grad``, ``backward(inputs=)``) runs only the nodes behind
those inputs, as torch's engine does, so a node off that path whose saved output or input
changed in place is neither run nor checked (it raised before: a false refusal)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

VALUES = np.array([[0.5, -1.2, 0.3], [2.0, -0.1, 0.7]])


def _leaf(m: Any) -> Any:
    return m.tensor(VALUES, dtype=m.float64, requires_grad=True)


def _saved_output_changed(m: Any) -> tuple:
    x, a = _leaf(m), _leaf(m)
    y = x.exp()  # ExpBackward0 saves y
    z = y + a
    y.add_(1)
    return z.sum(), a, x


def _saved_input_changed(m: Any) -> tuple:
    x, a = _leaf(m), _leaf(m)
    b = x * 1
    y = b * b  # MulBackward0 saves b
    b.add_(1)
    return (y + a).sum(), a, x


CASES: dict[str, Callable[[Any], tuple]] = {
    "saved output changed": _saved_output_changed,
    "saved input changed": _saved_input_changed,
}


def _grad_of_other_input(m: Any, make: Callable[[Any], tuple]) -> Any:
    loss, a, _ = make(m)
    return m.autograd.grad(loss, a)[0]


def _backward_inputs(m: Any, make: Callable[[Any], tuple]) -> Any:
    loss, a, x = make(m)
    loss.backward(inputs=[a])
    assert x.grad is None
    return a.grad


@pytest.mark.parametrize("call", [_grad_of_other_input, _backward_inputs])
@pytest.mark.parametrize("name", list(CASES))
def test_a_changed_node_off_the_inputs_path_is_not_run(backend: str, name: str, call) -> None:
    expected = call(torch, CASES[name])
    got = call(tw, CASES[name])
    np.testing.assert_allclose(got.detach().numpy(), expected.numpy())


@pytest.mark.parametrize("name", list(CASES))
def test_a_changed_node_on_the_inputs_path_still_raises(backend: str, name: str) -> None:
    for m in (torch, tw):
        loss, _, x = CASES[name](m)
        with pytest.raises(RuntimeError, match="modified by an inplace operation|in-place"):
            m.autograd.grad(loss, x)


def test_a_skipped_node_keeps_what_it_saved(backend: str) -> None:
    # torch's pass for ``a`` leaves ExpBackward0 unrun: a later backward through it works
    results = []
    for m in (torch, tw):
        x, a = _leaf(m), _leaf(m)
        y = x.exp()
        z = (y + a).sum()
        m.autograd.grad(z, a)
        y.sum().backward()
        results.append(x.grad)
    np.testing.assert_allclose(results[1].detach().numpy(), results[0].numpy())


def _exp_then_data_of_a_view(m: Any) -> Any:
    x = _leaf(m)
    y = x.exp()
    y[0].data.mul_(2)  # unseen by autograd, but ExpBackward0 reads the memory it changed
    y.sum().backward()
    return x.grad


def _relu_then_data(m: Any) -> Any:
    x = _leaf(m)
    y = m.relu(x)
    y.data.mul_(0)  # ReluBackward0 reads its output's memory: no gradient passes any more
    y.sum().backward()
    return x.grad


@pytest.mark.parametrize("program", [_exp_then_data_of_a_view, _relu_then_data])
def test_a_data_write_reaches_the_saved_output(backend: str, program) -> None:
    # a silent difference before: the write through a view's .data (or, on torch:cpu, into
    # relu's memory beside its fused kernel's mask) left the node's old values
    np.testing.assert_allclose(program(tw).numpy(), program(torch).numpy())


def _saving_function(m: Any) -> Any:
    class Scaled(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx: Any, g: Any) -> tuple:
            x, w = ctx.saved_tensors
            return g * w, g * x

    return Scaled


def test_a_function_that_saves_a_parameter_runs_backward(backend: str) -> None:
    # the version check took a saved nn.Parameter (a Tensor subclass) for a weak reference
    # and called it: TypeError "'Parameter' object is not callable"
    grads = []
    for m in (torch, tw):
        w = m.nn.Parameter(m.tensor(VALUES, dtype=m.float64))
        x = _leaf(m)
        _saving_function(m).apply(x, w).sum().backward()
        grads.append((x.grad, w.grad))
    for got, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got.numpy(), expected.numpy())


def _function_view_of_a_constant(m: Any) -> Any:
    class Same(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x.view_as(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g

    x = m.ones(2, 3, dtype=m.float64)  # no graph: the Function records no node
    Same.apply(x).add_(1)  # torch's output is a view of x: x changes too
    return x


def test_a_function_output_viewing_an_input_shares_its_memory_without_a_graph(
    backend: str,
) -> None:
    # the output was a new tensor over a copy where no node was recorded: x stayed at 1
    np.testing.assert_array_equal(
        _function_view_of_a_constant(tw).numpy(), _function_view_of_a_constant(torch).numpy()
    )


def test_a_function_view_made_under_no_grad_refuses_an_in_place_change_with_grad() -> None:
    # (it went through as a new tensor; torch refuses as for an ordinary view made so)
    for m in (torch, tw):

        class Same(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x.view_as(x)

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        x = _leaf(m) * 1
        with m.no_grad():
            y = Same.apply(x)
        with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
            y.add_(1)


def test_a_hook_off_the_inputs_path_does_not_run(backend: str) -> None:
    # it ran: the pass went through every node, whatever the inputs asked for
    counts = []
    for m in (torch, tw):
        x, a = _leaf(m), _leaf(m)
        calls: list[int] = []
        h = x.exp()
        h.register_hook(lambda g, calls=calls: calls.append(1))
        m.autograd.grad((h + a).sum(), a)
        counts.append(len(calls))
    assert counts[1] == counts[0] == 0


def test_a_retained_non_leaf_input_of_backward_gets_its_gradient_once(backend: str) -> None:
    # retain_grad filled h.grad in the pass and backward(inputs=) added it again (twice)
    grads = []
    for m in (torch, tw):
        h = _leaf(m) * 2
        h.retain_grad()
        h.exp().sum().backward(inputs=[h])
        grads.append(h.grad)
    np.testing.assert_allclose(grads[1].numpy(), grads[0].numpy())


# -- found in review, left as strict xfails (outside this file's reach, or refusals only) --


def test_an_lstm_output_changed_in_place_on_torch_cpu() -> None:
    results = []
    for m, spec in ((torch, None), (tw, "torch:cpu")):
        with tw.device(spec) if spec else _no_scope():
            m.manual_seed(0)
            lstm = m.nn.LSTM(3, 4, batch_first=True).double()
            with m.no_grad():
                for p in lstm.parameters():
                    p.copy_(m.linspace(-0.5, 0.5, p.numel(), dtype=m.float64).reshape(p.shape))
            out, (h, c) = lstm(_leaf(m).unsqueeze(0))
            out.mul_(2)
            h.add_(1)
            (out.sum() + h.sum() + c.sum()).backward()
            results.append(lstm.weight_ih_l0.grad)
    np.testing.assert_allclose(results[1].numpy(), results[0].numpy())


class _no_scope:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _function_returning(m: Any, make: Callable[[Any], Any]) -> Any:
    class Made(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return make(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g.expand(2, 3) * 3 if g.ndim == 1 else g * 2

    return Made


def test_an_in_place_change_of_a_function_s_view_of_an_inner_tensor_raises() -> None:
    for m in (torch, tw):
        y = _function_returning(m, lambda x: (x * 3)[0]).apply(_leaf(m))
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            y.add_(1)


def test_a_function_view_output_changed_through_detach_raises_in_backward() -> None:
    for m in (torch, tw):
        y = _function_returning(m, lambda x: x.view_as(x)).apply(_leaf(m) * 1)
        y.detach().add_(1)
        with pytest.raises(RuntimeError, match="view and its base"):
            y.sum().backward()


def test_a_multi_view_function_output_used_after_its_base_changed_raises() -> None:
    for m in (torch, tw):

        class Rows(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, buf: Any) -> tuple:
                return x[0], buf[1]

            @staticmethod
            def backward(ctx: Any, g: Any, g2: Any) -> tuple:
                return g.unsqueeze(0).expand(2, 3) * 1.0, None  # (values unchecked)

        buf = m.ones(2, 3, dtype=m.float64)
        a, b = Rows.apply(_leaf(m) * 1, buf)
        buf.add_(1)
        with pytest.raises(RuntimeError, match="view and its base"):
            (a.sum() + b.sum()).backward()
