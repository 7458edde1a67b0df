"""Snippets a demanding PyTorch user writes against the autograd API (node hooks, custom
Functions, saved-tensor hooks, grad modes, ``autograd.grad``'s corners), run on torch 2.13
and on tensorweaver with only the import changed (``fn(torch)`` and ``fn(tw)`` inside the
device), on every backend.

Each test named after a defect failed before the twentieth session's fix; the strict xfails
are divergences found there in files other than autograd's (each reason says what differs,
where, and the proposed fix); the rest keep corners of that hunt that matched.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_user_hunt_session18 import CUNUMERIC, _check, _check_raises
from tw_backends import FAST


@pytest.fixture(params=[*FAST, *CUNUMERIC])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


def _t(m: Any, values: Any, requires_grad: bool = True) -> Any:
    return m.tensor(values, dtype=m.float64, requires_grad=requires_grad)


# -- grad_fn.register_prehook / register_hook ----------------------------------------------


# before: a grad_fn had no register_hook nor register_prehook (AttributeError)
def test_node_hooks_run_after_tensor_hooks_and_retain_grad(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        y = x * 3
        seen: list = []
        y.grad_fn.register_prehook(lambda go: seen.append(("pre", go[0].tolist())) or (go[0] * 10,))
        y.register_hook(lambda g: seen.append(("tensor", g.tolist())) or g + 1)
        y.retain_grad()

        def post(grad_inputs: tuple, grad_outputs: tuple) -> None:
            seen.append(("post", [None if g is None else g.tolist() for g in grad_inputs]))
            seen.append(("outputs", [g.tolist() for g in grad_outputs]))

        y.grad_fn.register_hook(post)
        (y * y).sum().backward()
        return [x.grad, y.grad, seen]

    _check(spec, fn)


def test_node_hook_replaces_the_inputs_gradients(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [[1.0, 2.0], [0.5, -1.0]])
        w = _t(m, [3.0, -2.0])
        y = (x * w).exp()  # broadcast: the hook sees w's gradient summed to w's shape
        shapes: list = []
        y.grad_fn.next_functions[0][0].register_hook(
            lambda gi, go: shapes.append([list(g.shape) for g in gi]) or (gi[0] * 2, gi[1] - 1)
        )
        y.sum().backward()
        return [x.grad, w.grad, shapes]

    _check(spec, fn)


def test_node_hooks_of_a_function(spec: str) -> None:
    def fn(m: Any) -> Any:
        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, k: float, y: Any) -> Any:
                return x * k * y

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2, None, g * 3

        seen: list = []
        x = _t(m, [1.0, 2.0])
        z = F.apply(x, 3.0, _t(m, [1.0, 1.0], requires_grad=False))
        z.grad_fn.register_prehook(lambda go: seen.append([g.tolist() for g in go]))
        # (every tensor input's gradient that backward returned, as PyTorch shows it)
        z.grad_fn.register_hook(lambda gi, go: seen.append([g.tolist() for g in gi]))
        z.sum().backward()
        return [seen, x.grad]

    _check(spec, fn)


def test_node_hook_of_a_node_of_several_outputs(spec: str) -> None:
    def fn(m: Any) -> Any:
        seen: list = []
        x = _t(m, [[1.0, 2.0], [3.0, 4.0]])
        a, b = x.unbind(0)
        a.grad_fn.register_hook(lambda gi, go: seen.append([g.tolist() for g in go]))
        (a * 2 + b * 3).sum().backward()
        return seen

    _check(spec, fn)


def test_linear_node_edges_like_torch(spec: str) -> None:
    def fn(m: Any) -> Any:
        layer = m.nn.Linear(2, 1).double()
        y = layer(m.ones(1, 2, dtype=m.float64, requires_grad=True))
        return [None if f is None else f.name() for f, _ in y.grad_fn.next_functions]

    _check(spec, fn)


def test_node_prehook_removed_no_longer_runs(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        y = x.sin()
        handle = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        y.sum().backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        x.grad = None
        y.sum().backward()
        return [first, x.grad]

    _check(spec, fn)


@pytest.mark.parametrize(
    "hook",
    ["pre_two_values", "pre_int", "post_int", "post_wrong_size", "post_one_of_two"],
)
def test_node_hook_results_torch_refuses(spec: str, hook: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        y = x.exp() if hook != "post_one_of_two" else x * 3
        node = y.grad_fn
        if hook == "pre_two_values":
            node.register_prehook(lambda go: (go[0], go[0]))
        elif hook == "pre_int":
            node.register_prehook(lambda go: 3)
        elif hook == "post_int":
            node.register_hook(lambda gi, go: 5)
        elif hook == "post_wrong_size":
            node.register_hook(lambda gi, go: (gi[0].sum(),))
        else:  # x * 3 has two inputs (the number is one): one value is too few
            node.register_hook(lambda gi, go: (gi[0] * 10,))
        y.sum().backward()

    _check_raises(spec, fn)


# -- autograd.Function ----------------------------------------------------------------------


# before: Function.apply took no keyword arguments (TypeError), and a setup_context-style
# Function's omitted defaults were not inputs (setup_context saw fewer of them)
@pytest.mark.parametrize("style", ["ctx", "setup_context"])
def test_function_apply_takes_keywords_as_inputs(spec: str, style: str) -> None:
    def fn(m: Any) -> Any:
        seen: list = []
        if style == "ctx":

            class F(m.autograd.Function):
                @staticmethod
                def forward(ctx: Any, x: Any, k: Any = 2.0) -> Any:
                    seen.append(ctx.needs_input_grad)
                    return x * k

                @staticmethod
                def backward(ctx: Any, g: Any) -> Any:
                    return g * 2, None

        else:

            class F(m.autograd.Function):  # type: ignore[no-redef]
                @staticmethod
                def forward(x: Any, k: Any = 2.0) -> Any:
                    return x * k

                @staticmethod
                def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
                    seen.append((len(inputs), ctx.needs_input_grad))

                @staticmethod
                def backward(ctx: Any, g: Any) -> Any:
                    return g * 2, None

        x = _t(m, [1.0, 2.0])
        a = F.apply(x, k=3.0)
        a.sum().backward()
        b = F.apply(x)
        return [a, b, x.grad, seen]

    _check(spec, fn)


# before: ctx.save_for_forward did not exist (AttributeError), so a Function written for
# forward mode too (with a jvp staticmethod) failed in its forward
def test_function_with_save_for_forward(spec: str) -> None:
    def fn(m: Any) -> Any:
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(x: Any) -> Any:
                return x**3

            @staticmethod
            def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
                ctx.save_for_backward(inputs[0])
                ctx.save_for_forward(inputs[0])

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return 3 * x * x * g

            @staticmethod
            def jvp(ctx: Any, t: Any) -> Any:
                (x,) = ctx.saved_tensors
                return 3 * x * x * t

        x = _t(m, [1.0, 2.0])
        y = Cube.apply(x)
        y.sum().backward()
        return [y, x.grad]

    _check(spec, fn)


def test_function_save_for_forward_refuses_a_number(spec: str) -> None:
    def fn(m: Any) -> Any:
        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_forward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        F.apply(_t(m, [1.0]))

    _check_raises(spec, fn)


# before: calling an instance of a Function raised TypeError ('F' object is not callable);
# PyTorch raises RuntimeError (the legacy non-static forward)
def test_calling_a_function_instance_raises_runtime_error(spec: str) -> None:
    def fn(m: Any) -> Any:
        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        F()(_t(m, [1.0]))

    _check_raises(spec, fn)


# -- torch.autograd.graph: saved-tensor hooks ----------------------------------------------


# before: tw.autograd.graph did not exist (AttributeError), so neither saved_tensors_hooks
# nor save_on_cpu nor disable_saved_tensors_hooks
def test_saved_tensors_hooks_unpack_is_what_backward_reads(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        w = _t(m, [3.0, 5.0])
        packed: list = []

        def pack(t: Any) -> Any:
            packed.append(tuple(t.shape))
            return t * 1

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 2):
            y = (x.sin() * w).sum()
        y.backward()
        return [x.grad, w.grad, packed]

    _check(spec, fn)


def test_saved_tensors_hooks_pack_to_anything(spec: str) -> None:
    def fn(m: Any) -> Any:
        store: list = []

        def pack(t: Any) -> int:
            store.append(t.detach().clone())
            return len(store) - 1

        x = _t(m, [[1.0, 2.0], [0.5, 1.0]])
        w = _t(m, [[3.0], [5.0]])
        with m.autograd.graph.saved_tensors_hooks(pack, lambda i: store[i]):
            y = (x @ w).sin().sum()
        y.backward()
        return [x.grad, w.grad]

    _check(spec, fn)


def test_saved_tensors_hooks_second_derivative(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        h = x * x
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (x.sin() * h).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (g2,) = m.autograd.grad(g.sum(), x)
        return [g, g2]

    _check(spec, fn)


def test_saved_tensors_hooks_innermost_and_each_backward(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        w = _t(m, [3.0, 5.0])
        unpacked: list = []
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 3):
            with m.autograd.graph.saved_tensors_hooks(
                lambda t: t, lambda t: unpacked.append(1) or t * 2
            ):
                y = (x * w).sum()
        y.backward(retain_graph=True)
        y.backward()
        return [x.grad, w.grad, len(unpacked)]

    _check(spec, fn)


def test_saved_tensors_hooks_later_in_place_change_is_no_error(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        h = x * 2
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = h.sin().sum()
        h.add_(1)
        y.backward()
        return x.grad

    _check(spec, fn)


@pytest.mark.parametrize("case", ["unpack_not_a_tensor", "disabled"])
def test_saved_tensors_hooks_refusals(spec: str, case: str) -> None:
    def fn(m: Any) -> Any:
        graph = m.autograd.graph
        if case == "disabled":
            with graph.disable_saved_tensors_hooks("no hooks here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        x = _t(m, [1.0, 2.0])
        with graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
            y = x.sin().sum()
        y.backward()

    _check_raises(spec, fn)


def test_save_on_cpu(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [[1.0, 2.0]])
        w = _t(m, [[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]])
        with m.autograd.graph.save_on_cpu(pin_memory=False):
            y = (x @ w).tanh().sum()
        y.backward()
        return [x.grad, w.grad]

    _check(spec, fn)


# before: tw.autograd.graph had no Node (isinstance(y.grad_fn, graph.Node) is what graph
# walkers test) nor register_multi_grad_hook
def test_grad_fns_are_graph_nodes(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0])
        y = x * 2
        node = m.autograd.graph.Node
        return [isinstance(y.grad_fn, node), isinstance(y.grad_fn.next_functions[0][0], node)]

    _check(spec, fn)


def test_multi_grad_hook(spec: str) -> None:
    def fn(m: Any) -> Any:
        def listed(grads: tuple) -> list:
            return [None if g is None else g.tolist() for g in grads]

        every: list = []
        first: list = []
        x = _t(m, [1.0])
        w = _t(m, [2.0])
        graph = m.autograd.graph
        handle = graph.register_multi_grad_hook((x, w), lambda gs: every.append(listed(gs)))
        (x * 3).sum().backward()
        (x * w).sum().backward()
        handle.remove()
        (x * 3).sum().backward()
        handle = graph.register_multi_grad_hook(
            (x, w), lambda g: first.append(g.tolist()), mode="any"
        )
        (x * w).sum().backward()
        handle.remove()
        y = x * 2
        graph.register_multi_grad_hook((x, y), lambda gs: every.append(listed(gs)))
        (y * y).sum().backward()
        return [every, first, x.grad, w.grad]

    _check(spec, fn)


def test_multi_grad_hook_refuses_a_tensor_without_grad(spec: str) -> None:
    _check_raises(
        spec,
        lambda m: m.autograd.graph.register_multi_grad_hook(
            (_t(m, [1.0]), m.ones(1)), lambda gs: None
        ),
    )


# -- divergences elsewhere (strict xfails: the lead routes them) ----------------------------


@pytest.mark.parametrize(
    "case",
    [
        "is_inference",
        "requires_grad_",
        "saved",
        "in_place",
        "enable_grad_inside",
    ],
)
def test_inference_tensors_like_torch(spec: str, case: str) -> None:
    def fn(m: Any) -> Any:
        with m.inference_mode():
            y = m.ones(2, dtype=m.float64)
        if case == "is_inference":
            return y.is_inference()
        if case == "enable_grad_inside":  # inference mode records no graph even so
            with m.inference_mode(), m.enable_grad():
                return (_t(m, [1.0]) * 2).requires_grad
        if case == "requires_grad_":
            y.requires_grad_()
        elif case == "saved":
            x = _t(m, [1.0, 2.0])
            (x * y).sum().backward()
        else:
            y.add_(1)
        return None

    if case in ("is_inference", "enable_grad_inside"):
        _check(spec, fn)
    else:
        _check_raises(spec, fn)


# -- corners of the hunt that matched --------------------------------------------------------


def test_grad_corners(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0, 3.0])
        z = _t(m, [2.0, 3.0])
        unused = m.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
        (batched,) = m.autograd.grad(
            x**3,
            x,
            grad_outputs=m.eye(3, dtype=m.float64),
            is_grads_batched=True,
            create_graph=True,
        )
        (second,) = m.autograd.grad(batched.sum(), x)
        (as_float32,) = m.autograd.grad(x**2, x, grad_outputs=m.ones(3, dtype=m.float32))
        y = x * 2
        y.retain_grad()
        (y * y).sum().backward(inputs=[x])
        return [*unused, batched, second, as_float32, x.grad, y.grad]

    _check(spec, fn)


@pytest.mark.parametrize("case", ["second_backward", "modified_through_view", "leaf_view"])
def test_autograd_errors_like_torch(spec: str, case: str) -> None:
    def fn(m: Any) -> Any:
        x = _t(m, [1.0, 2.0])
        if case == "second_backward":
            y = (x.exp() * x).sum()
            y.backward()
            y.backward()
        elif case == "modified_through_view":
            y = x.exp()
            z = y.sin()
            y[0:1].mul_(2)
            z.sum().backward()
        else:
            x[0] = 3.0

    _check_raises(spec, fn)
