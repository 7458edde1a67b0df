"""``tw.autograd.functional``: Jacobians, Hessians and their products with vectors.

Same names, keywords, result structures (a tensor where PyTorch returns one, tuples where
it returns tuples) and errors as ``torch.autograd.functional``. Everything is reverse mode:
``jvp`` and ``hvp`` use the double-backward trick, as PyTorch's do, and
``strategy="forward-mode"`` (which PyTorch allows only with ``vectorize=True``) and
``vectorize=True`` compute the same values one vector-Jacobian product per row.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.engine import grad
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled, set_grad_enabled
from tensorweaver.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _as_tuple(value: Any, what: str, function: str) -> tuple[bool, tuple]:
    """Whether ``value`` was a tuple, and it as a tuple of tensors."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {what}"
            raise TypeError(
                f"The {what} given to {function} must be either a Tensor or a tuple of Tensors "
                f"but {where} has type {type(v)}."
            )
    return is_tuple, values


def _unpack(result: Any, was_tuple: Any) -> Any:
    """Undo :func:`_as_tuple`: ``was_tuple`` is one flag, or (outer, inner) for nested tuples."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(r[0] for r in result)
        return result if outer else result[0]
    return result if was_tuple else result[0]


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensor objects for ``func`` to differentiate against: still attached to the
    caller's graph under ``create_graph``, detached otherwise."""
    return tuple(
        t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
        for t in tensors
    )


def _finish(result: tuple, create_graph: bool) -> tuple:
    """Results without history unless the caller asked for a differentiable result."""
    if create_graph:
        return result
    return tuple(r.detach() if isinstance(r, Tensor) else _finish(r, False) for r in result)


def _validate_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(
                f"{where}v has invalid size: should be {b.size()} but got {a.size()}."
            )


def _vector(
    v: Any, other: tuple, other_is_tuple: bool, create_graph: bool, function: str, what: str
) -> Any:
    if v is None:
        if len(other) != 1 or other[0].numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if {what} a single Tensor with a single element."
            )
        return None
    _, v = _as_tuple(v, "v", function)
    v = _prepare(v, create_graph, need_graph=False)
    _validate_v(v, other, other_is_tuple)
    return v


# What ``_vector``'s error says ``v`` must match: the function's outputs or its inputs.
_OUTPUTS_ARE = "the user-provided function returns"
_INPUTS_ARE = "the input to the user-provided function is"


def _differentiable_inputs(inputs: Any, create_graph: bool, function: str) -> tuple[bool, tuple]:
    """Whether ``inputs`` was a tuple, and fresh tensors of it for ``func`` to differentiate
    against."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", function)
    return inputs_tuple, _prepare(inputs, create_graph, need_graph=True)


def _outputs(func: Callable, inputs: tuple, strict: bool, function: str) -> tuple[bool, tuple]:
    """Whether ``func(*inputs)`` is a tuple, and it as a tuple checked for strict mode."""
    outputs_tuple, outputs = _as_tuple(
        func(*inputs), "outputs of the user-provided function", function
    )
    _check_requires_grad(outputs, "outputs", strict)
    return outputs_tuple, outputs


_NOT_DIFFERENTIABLE = {
    "outputs": (
        "Output {i} of the user-provided function does not require gradients. The outputs "
        "must be computed in a differentiable manner from the input when running in strict "
        "mode."
    ),
    "grad_inputs": (
        "The gradient with respect to input {i} is independent of the inputs of the "
        "user-provided function. This is not allowed in strict mode."
    ),
    "jacobian": (
        "While computing the hessian, found that the jacobian of the user-provided function "
        "with respect to input {i} is independent of the input. This is not allowed in strict "
        "mode. You should ensure that your function is twice differentiable and that the "
        "jacobian depends on the inputs (this would be violated by a linear function for "
        "example)."
    ),
    "hessian": (
        "The hessian of the user-provided function with respect to input {i} is independent "
        "of the input. This is not allowed in strict mode. You should ensure that your "
        "function is thrice differentiable and that the hessian depends on the inputs."
    ),
}


def _check_requires_grad(tensors: tuple, kind: str, strict: bool) -> None:
    """In strict mode, each of ``tensors`` must exist and depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


def _grad(
    outputs: tuple,
    inputs: tuple,
    grad_outputs: Any = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple:
    """``grad`` over the outputs that require grad; None for an input none of them reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad(
        [o for o, _ in pairs],
        inputs,
        [g for _, g in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _last_backward(
    outputs: tuple,
    against: tuple,
    v: Any,
    refs: tuple,
    create_graph: bool,
    strict: bool,
    stage: str,
) -> tuple:
    """A product's last backward pass: ``v`` through ``outputs`` back to ``against``, with a
    graph only where the caller asked for one (or grad mode was on), and zeros shaped as
    ``refs`` for what ``v`` does not reach (strict mode's error in ``stage`` instead)."""
    with set_grad_enabled(bool(create_graph or is_grad_enabled())):
        found = _grad(outputs, against, v, create_graph=create_graph)
        return _fill_in_zeros(found, refs, strict, create_graph, stage)


def _returned(result: tuple, create_graph: bool, was_tuple: Any) -> Any:
    """``result`` as the caller gets it: detached unless ``create_graph``, unpacked as the
    caller's argument was (:func:`_unpack`)."""
    return _unpack(_finish(result, create_graph), was_tuple)


def _fill_in_zeros(
    grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str
) -> tuple:
    """``grads`` with zeros (shaped as ``refs``) for the None entries, or strict mode's error."""
    from tensorweaver.ops.creation import zeros_like

    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def vjp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product, shaped like ``inputs``."""
    with enable_grad():
        inputs_tuple, inputs = _differentiable_inputs(inputs, create_graph, "vjp")
        outputs_tuple, outputs = _outputs(func, inputs, strict, "vjp")
        v = _vector(v, outputs, outputs_tuple, create_graph, "vjp", _OUTPUTS_ARE)
    result = _last_backward(outputs, inputs, v, inputs, create_graph, strict, "back")
    return (
        _returned(outputs, create_graph, outputs_tuple),
        _returned(result, create_graph, inputs_tuple),
    )


def jvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), J v)``: the Jacobian-vector product, shaped like the outputs (by the
    double-backward trick: the vector-Jacobian product is linear in its vector, so
    differentiating it with respect to that vector gives ``J v``)."""
    from tensorweaver.ops.creation import zeros_like

    with enable_grad():
        inputs_tuple, inputs = _differentiable_inputs(inputs, create_graph, "jvp")
        v = _vector(v, inputs, inputs_tuple, create_graph, "jvp", _INPUTS_ARE)
        outputs_tuple, outputs = _outputs(func, inputs, strict, "jvp")
        # Any finite value would do: it does not appear in the double-backward graph.
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    result = _last_backward(grad_inputs, dummies, v, outputs, create_graph, strict, "back_trick")
    return (
        _returned(outputs, create_graph, outputs_tuple),
        _returned(result, create_graph, outputs_tuple),
    )


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` of shape ``output i's shape +
    input j's shape``, a single tensor when both the input and the output are."""
    from tensorweaver.ops.creation import zeros_like
    from tensorweaver.ops.movement import stack

    if strategy not in _STRATEGIES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "tensorweaver.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                "tensorweaver.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`strict=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                "implemented for `vectorize=True`."
            )
    with enable_grad():
        inputs_tuple, inputs = _differentiable_inputs(inputs, create_graph, "jacobian")
        outputs_tuple, outputs = _outputs(func, inputs, strict, "jacobian")
        if vectorize and strict:
            raise RuntimeError(
                "tensorweaver.autograd.functional.jacobian: `strict=True` and "
                "`vectorized=True` are not supported together. Please either set "
                "`strict=False` or `vectorize=False`."
            )
        result = []
        for i, out in enumerate(outputs):
            rows: list[list[Tensor]] = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                found = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, x) in enumerate(zip(found, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        g = zeros_like(x)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of input "
                            f"{i}. This is not allowed in strict mode when create_graph=True."
                        )
                    rows[j].append(g)
            result.append(
                tuple(
                    stack(r, 0).reshape(tuple(out.shape) + tuple(x.shape))
                    for r, x in zip(rows, inputs)
                )
            )
        return _returned(tuple(result), create_graph, (outputs_tuple, inputs_tuple))


def hessian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of the scalar ``func`` at ``inputs``: ``H[i][j]`` of shape ``input i's
    shape + input j's shape``, a single tensor for a single input."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*args: Any) -> Tensor:
        return _scalar_output(func, args, strict, "hessian")[0].squeeze()

    def gradient(*args: Any) -> Any:
        found = jacobian(scalar, args, create_graph=True)
        _check_requires_grad(found, "jacobian", strict)
        return found

    result = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(result, (inputs_tuple, inputs_tuple))


def _scalar_output(func: Callable, inputs: tuple, strict: bool, function: str) -> tuple:
    """``func(*inputs)`` as a 1-tuple, which must hold a single-element tensor."""
    outputs_tuple, outputs = _outputs(func, inputs, strict, function)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {function} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {function} should contain a single "
            "element"
        )
    return outputs


def _hessian_vector_product(
    func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool, function: str
) -> tuple:
    """``vhp``'s ``v^T H`` (the gradient's vector-Jacobian product) or ``hvp``'s ``H v`` (by
    the double-backward trick, as in PyTorch), with ``func(*inputs)``."""
    from tensorweaver.ops.creation import zeros_like

    with enable_grad():
        inputs_tuple, inputs = _differentiable_inputs(inputs, create_graph, function)
        v = _vector(v, inputs, inputs_tuple, create_graph, function, _INPUTS_ARE)
        outputs = _scalar_output(func, inputs, strict, function)
        gradient = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(gradient, "jacobian", strict)
        if function == "hvp":
            dummies = tuple(zeros_like(x, requires_grad=True) for x in inputs)
            backward, against = _grad(gradient, inputs, dummies, create_graph=True), dummies
            _check_requires_grad(gradient, "hessian", strict)
            stage = "double_back_trick"
        else:
            backward, against, stage = gradient, inputs, "double_back"
    result = _last_backward(backward, against, v, inputs, create_graph, strict, stage)
    return _finish(outputs, create_graph)[0], _returned(result, create_graph, inputs_tuple)


def vhp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), v^T H)`` for a scalar ``func``, shaped like ``inputs``."""
    return _hessian_vector_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), H v)`` for a scalar ``func``, shaped like ``inputs`` (by the
    double-backward trick, as in PyTorch; equal to :func:`vhp` where H is symmetric)."""
    return _hessian_vector_product(func, inputs, v, create_graph, strict, "hvp")
