"""``tw.autograd.gradcheck`` and ``gradgradcheck``: gradients from the tape against finite
differences, with PyTorch's keywords, checks and messages.

The numerical Jacobian of each output with respect to each input that requires grad is
built column by column from central differences, the analytical one row by row from
vector-Jacobian products with unit vectors (twice, to catch a backward that is not
reproducible). Both are ``(input numel, output numel)`` matrices, as in PyTorch. Complex
numbers are checked as PyTorch checks them: a complex output as its real and imaginary
parts in turn (cotangents 1 and 1j), and a complex input z = x + iy by perturbing x and y
separately, its numerical entry being d/dx + i d/dy, the gradient convention of the tape. Inputs
are perturbed in place without a version bump, as PyTorch perturbs ``input.data``, so a
``func`` that closes over an input sees the perturbation too. The Jacobians are assembled
on the host: this is a debugging tool, not a hot path.

``check_forward_ad`` builds the analytical Jacobian one input element at a time (a unit
tangent each) with :mod:`~tensorweaver.autograd.forward_ad` (real inputs only, as forward AD
here); ``gradgradcheck``'s ``check_fwd_over_rev`` is that check of the gradients. Not
implemented, so rejected when asked for: vmap (``check_batched_grad``,
``check_batched_forward_grad``).
``fast_mode=True`` runs the full (slow) check, which is stricter. ``masked`` and
``gen_non_contig_grad_outputs`` have nothing to act on (no sparse tensors, no strides), and
``check_undefined_grad`` nothing to check: the engine hands every rule a gradient tensor.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from tensorweaver.autograd.engine import grad
from tensorweaver.contract.dtypes import complex128, float64
from tensorweaver.tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]

_NONDETERMINISM_HINT = (
    "\n\nNOTE: if your backward relies on non-deterministic operations this failure might be "
    "expected: call gradcheck/gradgradcheck with `nondet_tol=<tol>`."
)


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    return tuple(x) if isinstance(x, list) else (x,)


def _differentiable(tensors: tuple) -> tuple:
    return tuple(t for t in tensors if isinstance(t, Tensor) and t.requires_grad)


def _reject(function: str, **flags: bool) -> None:
    for name, value in flags.items():
        if value:
            raise NotImplementedError(
                f"{function}: {name}=True is not supported: TensorWeaver does not check "
                f"batched gradients (vmap); leave {name} at False"
            )


def _check_inputs(inputs: tuple) -> None:
    found = False
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad:
            found = True
            if t.dtype not in (float64, complex128):
                warnings.warn(
                    f"Input #{i} requires gradient and is not a double precision floating point "
                    "or complex. This check will likely fail if all the inputs are not of double "
                    "precision floating point or complex. ",
                    stacklevel=4,
                )
    if not found:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of "
            "them have requires_grad=True."
        )


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach())


def _on_device(values: np.ndarray, like: Tensor) -> Tensor:
    from tensorweaver.ops.creation import tensor

    return tensor(values, dtype=like.dtype, device=like.device)


def _parts(output: Tensor) -> tuple[str, ...]:
    """The parts of ``output`` checked one at a time: a complex one's real and imaginary."""
    return ("real", "imaginary") if output.is_complex() else ("real",)


def _numerical(func: Callable, inputs: tuple, outputs: tuple, eps: float) -> list[dict]:
    """Per differentiable input, ``{(output index, part): Jacobian}`` by central differences,
    for every floating or complex output; a complex input's entries are d/dx + i d/dy."""
    floating = [
        i
        for i, o in enumerate(outputs)
        if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())
    ]
    result = []
    for x in _differentiable(inputs):
        base = _host(x)
        flat = base.reshape(-1)
        # A complex input moves along its real and its imaginary axis in turn.
        steps = (eps, 1j * eps) if np.iscomplexobj(flat) else (eps,)
        jacobians = {
            (i, part): np.zeros((flat.size, outputs[i].numel()), flat.dtype)
            for i in floating
            for part in _parts(outputs[i])
        }
        original = x.native
        try:
            for e in range(flat.size):
                for step in steps:
                    ends = []
                    for sign in (-1, 1):
                        moved = flat.copy()
                        moved[e] = flat[e] + sign * step
                        x.native = _on_device(moved.reshape(base.shape), x).native
                        out = _as_tuple(func(*inputs))
                        ends.append({i: _host(out[i]) for i in floating})
                    low, high = ends
                    for (i, part), jacobian in jacobians.items():
                        slope = (high[i] - low[i]) / (2 * eps)
                        slope = slope.imag if part == "imaginary" else slope.real
                        jacobian[e] += slope.reshape(-1) * (step / eps)
        finally:
            x.native = original
        result.append(jacobians)
    return result


def _vjp_rows(output: Tensor, inputs: tuple, part: str) -> tuple[list[np.ndarray], bool, bool]:
    """Per input, the analytical Jacobian of ``output``'s ``part``, and whether every
    gradient had the input's dtype and size."""
    dtypes_ok = sizes_ok = True
    jacobians = [np.zeros((x.numel(), output.numel()), _host(x).dtype) for x in inputs]
    unit = np.zeros(output.numel(), _host(output).dtype)
    for row in range(output.numel()):
        unit[:] = 0
        # The cotangent 1j picks the imaginary part: a VJP with v gives the gradient of Re(v* o).
        unit[row] = 1j if part == "imaginary" else 1
        direction = _on_device(unit.reshape(output.shape), output)
        grads = grad(output, inputs, direction, retain_graph=True, allow_unused=True)
        for x, g, jacobian in zip(inputs, grads, jacobians):
            if g is None:
                continue
            if g.shape != x.shape:
                sizes_ok = False
                continue
            dtypes_ok = dtypes_ok and g.dtype is x.dtype
            jacobian[:, row] = _host(g).reshape(-1)
    return jacobians, dtypes_ok, sizes_ok


def _analytical(
    inputs: tuple, output: Tensor, part: str, nondet_tol: float, check_grad_dtypes: bool
) -> list[np.ndarray]:
    first, dtypes_ok, sizes_ok = _vjp_rows(output, inputs, part)
    second, _, _ = _vjp_rows(output, inputs, part)
    if not dtypes_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    for a, b in zip(first, second):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}." + _NONDETERMINISM_HINT
            )
    return first


def _forward_rows(func: Callable, inputs: tuple, index: list[int]) -> list[list[np.ndarray]]:
    """Per differentiable input, per output in ``index``, the analytical Jacobian from
    forward AD: one tangent per input element (a unit one), as PyTorch builds it."""
    from tensorweaver.autograd import forward_ad
    from tensorweaver.ops.creation import zeros_like

    result = []
    for j, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        unit = np.zeros(x.numel(), _host(x).dtype)
        rows: list[np.ndarray] = []
        for e in range(x.numel()):
            unit[:] = 0
            unit[e] = 1
            with forward_ad.dual_level():
                dual = forward_ad.make_dual(x.detach(), _on_device(unit.reshape(x.shape), x))
                args = tuple(
                    dual if k == j else (t.detach() if isinstance(t, Tensor) else t)
                    for k, t in enumerate(inputs)
                )
                outputs = _as_tuple(func(*args))
                tangents = [forward_ad.unpack_dual(outputs[i]).tangent for i in index]
                if not rows:
                    rows = [np.zeros((x.numel(), outputs[i].numel()), unit.dtype) for i in index]
                for row, i, tangent in zip(rows, index, tangents):
                    found = zeros_like(outputs[i]) if tangent is None else tangent
                    row[e] = _host(found).reshape(-1)
        result.append(rows)
    return result


def _mismatch(
    a: Tensor, n: Tensor, output: int, input: int, part: str | None, forward: bool = False
) -> str:
    prefix = "" if part is None else f"While considering the {part} part of complex outputs only, "
    mode = "computed with forward mode " if forward else ""
    return (
        prefix + f"Jacobian {mode}mismatch for output {output:d} with respect to input "
        f"{input:d},\nnumerical:{n}\nanalytical:{a}\n"
    )


def _close(a: np.ndarray, n: np.ndarray, atol: float, rtol: float) -> bool:
    # torch.allclose: |a - n| <= atol + rtol * |n|, NaN never close.
    return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))


def _check_multiplied_by_grad_output(outputs: tuple, inputs: tuple) -> None:
    """Backward with zero output gradients must give zero input gradients of the inputs'
    dtype, device and size."""
    from tensorweaver.ops.creation import zeros_like

    grads = grad(outputs, inputs, [zeros_like(o) for o in outputs], allow_unused=True)
    for g, x in zip(grads, inputs):
        if g is None:
            continue
        if not bool((g == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype is not x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


def _check_backward(
    inputs: tuple,
    outputs: tuple,
    numerical: list[dict],
    index: list[int],
    tolerances: tuple[float, float, float],
    check_grad_dtypes: bool,
) -> None:
    atol, rtol, nondet_tol = tolerances
    differentiable_inputs = _differentiable(inputs)
    # PyTorch's order: the imaginary parts of every complex output first, then the real ones.
    passes = ("imaginary", "real") if any(o.is_complex() for o in outputs) else ("real",)
    for turn in passes:
        for i, output in enumerate(outputs):
            if not output.is_complex() and turn != passes[0]:
                continue  # a real output is checked once
            part = turn if output.is_complex() else "real"
            analytical = _analytical(
                differentiable_inputs, output, part, nondet_tol, check_grad_dtypes
            )
            for j, (x, a) in enumerate(zip(differentiable_inputs, analytical)):
                n = numerical[j][index[i], part]
                if not _close(a, n, atol, rtol):
                    named = part if output.is_complex() else None
                    message = _mismatch(_on_device(a, x), _on_device(n, x), i, j, named)
                    raise GradcheckError(message)


def _check_forward(
    func: Callable,
    inputs: tuple,
    outputs: tuple,
    numerical: list[dict],
    index: list[int],
    atol: float,
    rtol: float,
) -> None:
    differentiable_inputs = _differentiable(inputs)
    if any(t.is_complex() for t in differentiable_inputs + outputs):
        raise NotImplementedError(
            "gradcheck: check_forward_ad=True with complex inputs or outputs is not supported "
            "(TensorWeaver's forward AD is real only); check them with check_backward_ad"
        )
    forward = _forward_rows(func, inputs, index)
    for j, (x, per_output) in enumerate(zip(differentiable_inputs, forward)):
        for i, a in enumerate(per_output):
            n = numerical[j][index[i], "real"]
            if not _close(a, n, atol, rtol):
                message = _mismatch(_on_device(a, x), _on_device(n, x), i, j, None, True)
                raise GradcheckError(message)


def _check(
    func: Callable,
    inputs: Any,
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float,
    check_grad_dtypes: bool,
    check_forward_ad: bool,
    check_backward_ad: bool,
) -> bool:
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    all_outputs = _as_tuple(func(*inputs))
    outputs = _differentiable(all_outputs)
    numerical = _numerical(func, inputs, all_outputs, eps)
    if not outputs:
        for per_input in numerical:
            if any(np.any(j != 0) for j in per_input.values()):
                raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    index = [i for i, o in enumerate(all_outputs) if isinstance(o, Tensor) and o.requires_grad]
    # PyTorch's order: reverse mode, forward mode, then backward with zero output gradients.
    if check_backward_ad:
        tolerances = (atol, rtol, nondet_tol)
        _check_backward(inputs, outputs, numerical, index, tolerances, check_grad_dtypes)
    if check_forward_ad:
        _check_forward(func, inputs, outputs, numerical, index, atol, rtol)
    if check_backward_ad:
        _check_multiplied_by_grad_output(outputs, _differentiable(inputs))
    return True


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-06,
    atol: float = 1e-05,
    rtol: float = 0.001,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` (a tensor or a tuple of them) against
    central finite differences, for every floating input with ``requires_grad=True``
    (double precision expected). Returns True; on a mismatch raises :class:`GradcheckError`
    naming the output and input and printing both Jacobians, or returns False when
    ``raise_exception=False``."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    _reject(
        "gradcheck",
        check_batched_grad=check_batched_grad,
        check_batched_forward_grad=check_batched_forward_grad,
    )
    try:
        return _check(
            func,
            inputs,
            eps,
            atol,
            rtol,
            nondet_tol,
            check_grad_dtypes,
            check_forward_ad,
            check_backward_ad,
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-06,
    atol: float = 1e-05,
    rtol: float = 0.001,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check the second derivatives of ``func``: :func:`gradcheck` of the map from
    ``(inputs, grad_outputs)`` to the gradients of ``func`` (built with ``create_graph=True``).
    Without ``grad_outputs``, random ones in [-1, 1) that require grad are used."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    for flag, value in (
        ("check_undefined_grad", check_undefined_grad),
        ("check_batched_grad", check_batched_grad),
    ):
        if value and not check_rev_over_rev:
            raise AssertionError(f"Setting {flag}=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        from tensorweaver.ops.creation import rand

        grad_outputs = tuple(
            (rand(o.shape, dtype=o.dtype, device=o.device) * 2 - 1).requires_grad_()
            for o in _differentiable(_as_tuple(func(*inputs)))
        )
    else:
        grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)
    # the forward-mode check passes detached inputs (and one dual): which ones require grad
    wanted = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def gradients(*args: Any) -> tuple:
        # gradcheck perturbs the very tensors it was given, so args are these inputs.
        for i in wanted:
            if not args[i].requires_grad:
                args[i].requires_grad_()
        outputs = _differentiable(_as_tuple(func(*args[:-count])))
        found = grad(
            outputs,
            [args[i] for i in wanted],
            list(args[-count:]),
            create_graph=True,
            allow_unused=True,
        )
        return tuple(g for g in found if g is not None)

    return gradcheck(
        gradients,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
    )
