"""Every gradient rule, in one table keyed by op name.

A rule takes the node and the gradient of its output and returns one gradient per input
(None where that input needs none: check ``node.parents[i]``). Rules are written with tensor
ops, so they run on every backend and, under ``create_graph=True``, are differentiated again.
They may return gradients of the broadcast shape or computation dtype: the engine sums and
casts them back to each input's shape and dtype (the one place that un-broadcasts).
Complex inputs follow PyTorch's convention: a rule multiplies by the *conjugate* of the
derivative (``_c``, the identity on real tensors), so dL/dz for a real loss L is
dL/dx + i dL/dy.
The rules of the optional special and linear-algebra primitives are written in
``special_rules.py`` and ``linalg_rules.py`` and join this table when first looked up.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import views
from tensorweaver.ops.apply import apply, labelled
from tensorweaver.ops.complex import conj_physical
from tensorweaver.ops.complex import imag as _imag
from tensorweaver.ops.complex import real as _real
from tensorweaver.ops.complex import sgn as _sgn
from tensorweaver.ops.composite import FromOutput
from tensorweaver.ops.creation import zeros_like_shape
from tensorweaver.tensor import Tensor

#: The half-precision dtypes whose rules compute in float32 where PyTorch's kernels do.
_HALF = frozenset((dtypes.float16, dtypes.bfloat16))

Rule = Callable[[Any, Tensor], tuple]


def _c(t: Tensor) -> Tensor:
    """The conjugate of a complex tensor; a real one itself (the common case, kept cheap)."""
    return t if t.dtype.kind != "c" else conj_physical(t)


def _needs(node: Any, i: int) -> bool:
    return node.parents[i] is not None


#: For the rules that read an input's values only in some cases: whether ``node``'s rule
#: reads input ``i``. Backward checks that no input it reads changed in place since the
#: forward (the rest of an op's inputs it may leave changed, as PyTorch's saved variables).
#: Rules that read their output instead of their input (``node.output``) read no input.
def _fused_reads(node: Any, i: int) -> bool:
    """A fused ``linear`` reads its input for the weight's gradient and its weight for the
    input's, never its bias, as PyTorch's addmm saves them (a weight changed in place between
    forward and backward is no error when only it wants a gradient; PyTorch's convolutions
    save both always, and no bias either). Its decomposition, which create_graph
    differentiates, reads the same.
    A node whose gradient is written from its output (softmax's) reads no input, as
    PyTorch's SoftmaxBackward0 saves only its result."""
    if type(node.saved[1]) is FromOutput:
        return False
    name = node.saved[0]
    if name == "scaled_dot_product_attention":
        return _attention_reads(node, i)
    if name == "cross_entropy" or name == "cross_entropy_nd":
        # PyTorch's log_softmax saves its output, nll_loss the targets: the kernel's rule
        # reads what the forward kept; create_graph's reference recomputes from the input.
        return i == 1 or is_grad_enabled()
    if name in _CONVOLUTIONS:  # (input, weight, bias: ConvolutionBackward0 saves no bias)
        return i < 2
    if name != "linear":
        return True
    return (i == 0 and _needs(node, 1)) or (i == 1 and _needs(node, 0))


#: The fused convolutions (the 1-D ones run as 2-D): their bias's gradient is the output's
#: summed, which reads no value of it.
_CONVOLUTIONS = frozenset(("conv2d", "conv3d", "conv_transpose"))


def _attention_reads(node: Any, i: int) -> bool:
    """Which inputs ``(query, key, value[, mask])`` of a fused attention PyTorch's CPU kernels
    save. Its flash kernel (chosen for 4-d non-empty inputs of one batch, head count and
    feature size, and a 2-d or 4-d mask) saves them all, a bool mask as a float copy; its
    math path saves scaled copies of query and key, and the value for their gradients."""
    q, k, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    qs, ks, vs = q.shape, k.shape, v.shape
    flash = (
        len(qs) == len(ks) == len(vs) == 4
        and qs[0] == ks[0] == vs[0]
        and qs[1] == ks[1] == vs[1]
        and qs[3] == ks[3] == vs[3]
        and 0 not in qs
        and 0 not in ks
        and (mask is None or mask.dim() in (2, 4))
    )
    if flash:
        return i < 3 or mask.dtype is not dtypes.bool
    return i == 2 and (_needs(node, 0) or _needs(node, 1))


#: The solves' nodes as PyTorch saves them: A (LinalgSolveExBackward0 its LU too) and the
#: result, never the right side B, so B written in place before backward is no error.
_RIGHT_SIDE_UNSAVED = frozenset(("LinalgSolveExBackward0", "LinalgSolveTriangularBackward0"))


def _matrix_alone(node: Any, i: int) -> bool:
    return i == 0


READS_INPUT: dict[str, Callable[[Any, int], bool]] = {
    "fused": _fused_reads,
    "linalg_solve": _matrix_alone,
    "linalg_solve_triangular": _matrix_alone,
    # (the backend's kernel: torch:cpu)
    "linalg_function": lambda node, i: i != 1 or node.label not in _RIGHT_SIDE_UNSAVED,
    # An autograd.Function checks what it saved when its backward reads ctx.saved_tensors,
    # as PyTorch does (autograd/function.py): a backward that never reads them cannot fail.
    "function": lambda node, i: False,
    "mul": lambda node, i: _needs(node, 1 - i),  # each operand for the other's gradient
    "matmul": lambda node, i: _needs(node, 1 - i),  # as PyTorch's mm saves them
    "div": lambda node, i: i == 1 or _needs(node, 1),
    **dict.fromkeys(
        ("exp", "exp2", "tanh", "sqrt", "sigmoid", "expm1", "reciprocal", "rsqrt"),
        lambda node, i: False,
    ),
    "where": lambda node, i: i == 0,  # the condition alone
    "polar": lambda node, i: False,  # (its result alone)
    "hypot": _needs,  # each operand for its own gradient
    "cut_source": lambda node, i: False,  # (PyTorch's scatter nodes save no src)
    "remainder": lambda node, i: _needs(node, 1),  # both, for the divisor's gradient only
    "zeta": lambda node, i: _needs(node, 1),  # both, for q's gradient only (a's: none)
}


# -- elementwise ------------------------------------------------------------------------------


def _add(node: Any, g: Tensor) -> tuple:
    alpha = node.saved  # (add(a, b, alpha=): the node applies alpha, as PyTorch's)
    if alpha is None:
        return g, g
    return g, (ew.mul(g, alpha.conjugate()) if _needs(node, 1) else None)


def _sub(node: Any, g: Tensor) -> tuple:
    if not _needs(node, 1):
        return g, None
    alpha = node.saved
    return g, (ew.neg(g) if alpha is None else ew.mul(g, -alpha.conjugate()))


def _mul(node: Any, g: Tensor) -> tuple:
    a, b = node.inputs
    return (
        ew.mul(g, _c(b)) if _needs(node, 0) else None,
        ew.mul(g, _c(a)) if _needs(node, 1) else None,
    )


def _div(node: Any, g: Tensor) -> tuple:
    a, b = node.inputs
    ga = ew.div(g, _c(b)) if _needs(node, 0) else None
    # -g * conj((a / b) / b), in PyTorch's order (softsign's half backward rounds as its)
    return ga, (ew.neg(ew.mul(g, _c(ew.div(ew.div(a, b), b)))) if _needs(node, 1) else None)


def _pow(node: Any, g: Tensor) -> tuple:
    """PyTorch's first derivatives, in its order of operations: d/da is 0 wherever b == 0
    (even at a NaN or infinite a); d/db is 0 where a == 0 and b is real and >= 0, else
    out * log(a) with a in the result's dtype (a real a < 0 has a complex log for a complex
    b; 0 ** -1 gives inf * -inf = -inf, not NaN)."""
    a, b = node.inputs
    ga = gb = None
    # A number exponent (PowBackward0), else the result's array (ops/elementwise.py pow)
    saved = node.saved
    p = saved[1] if type(saved) is tuple else None
    if _needs(node, 0) and p is not None:
        # As PyTorch's: zeros for a 0 exponent, else a ** (p - 1) with p - 1 a number, whose
        # 0 gives ones (0j ** tensor(0) is NaN)
        if p == 0:
            ga = zeros_like_shape(g, g.shape)
        else:  # (a product by a number: PyTorch's MulBackward1 under create_graph)
            powered = ew.pow(a, p - 1)
            ga = ew.mul(g, _c(labelled(ew.mul(powered, p), "MulBackward1", powered)))
    elif _needs(node, 0):
        ga = ew.mul(g, _c(ew.mul(b, ew.pow(a, ew.sub(b, 1)))))
        ga = ew.where(ew.eq(b, 0), 0.0, ga)
    if _needs(node, 1):
        # The result PyTorch's node saved (a .data write changes it; a number base of 1 gives
        # 1, not NaN at z = NaN), attached to this node for create_graph, as PyTorch's
        out = _saved_result(node, saved, g.dtype)
        real_and_nonnegative = ew.ge(_real(b), 0)
        if b.dtype.is_complex:
            real_and_nonnegative = ew.logical_and(ew.eq(_imag(b), 0), real_and_nonnegative)
        zero = ew.logical_and(ew.eq(a, 0), real_and_nonnegative)
        # log(a) unmasked, as PyTorch's: at a zero base the second derivative is NaN (the
        # masked 0 times log(0) = -inf in the product's backward)
        log_a = ew.log(ew.cast(a, out.dtype))
        # g times the masked derivative (not the mask of g * it): -0.0 where g < 0, as PyTorch
        gb = ew.mul(g, ew.where(zero, 0.0, _c(ew.mul(out, log_a))))
    return ga, gb


def _saved_result(node: Any, native: Any, dtype: Any) -> Tensor:
    """The output array ``native`` that ``node`` kept (its ``dtype``: the output's, which may
    not be its first input's), attached to ``node`` as PyTorch's unpacked saved result is:
    :meth:`Node.output`, which under ``create_graph`` registers it so that a write through
    the output's ``.data`` reaches the graph recorded on it (node.py ``output_rewritten``)."""
    return node.output(native, dtype)


def _reduction_result(node: Any, g: Tensor) -> tuple[Tensor, Tensor]:
    """The result that the node of a reduction kept with its reduced dims (ops/reduce.py
    ``_saving_result``), attached to ``node``, and ``g`` in its shape: where the node's
    output is the result without them (made so inside ``saved_tensors_hooks``), both are
    reshaped from that output's shape, so that a gradient through the result reaches the
    node in the shape of its output."""
    native = node.saved
    out = _saved_result(node, native, g.dtype)
    if g.ndim == out.ndim:
        return out, g
    squeezed = _saved_result(node, out.backend.reshape(native, g.shape), g.dtype)
    return mv.reshape(squeezed, out.shape), mv.reshape(g, out.shape)


def _extremum(node: Any, g: Tensor) -> tuple:
    """maximum/minimum: the gradient goes to the winner; ties split it evenly (PyTorch)."""
    a, b = node.inputs
    pick = ew.gt if node.op == "maximum" else ew.lt
    half = ew.mul(g, 0.5)
    tie = ew.eq(a, b)
    ga = ew.where(tie, half, ew.where(pick(a, b), g, 0.0)) if _needs(node, 0) else None
    gb = ew.where(tie, half, ew.where(pick(b, a), g, 0.0)) if _needs(node, 1) else None
    return ga, gb


def _hypot(node: Any, g: Tensor) -> tuple:
    """g a / result, g b / result, from the result the node kept (ops/numeric.py hypot), as
    PyTorch's HypotBackward0 reads its saved result."""
    a, b = node.inputs
    out = _saved_result(node, node.saved, g.dtype)
    return (
        ew.div(ew.mul(g, a), out) if _needs(node, 0) else None,
        ew.div(ew.mul(g, b), out) if _needs(node, 1) else None,
    )


def _remainder(node: Any, g: Tensor) -> tuple:
    a, b = node.inputs
    return g, (ew.mul(ew.neg(g), ew.floor_divide(a, b)) if _needs(node, 1) else None)


def _zero(node: Any, g: Tensor) -> tuple:
    # Zeros that do not depend on g, as PyTorch's: they need no grad under create_graph.
    return tuple(zeros_like_shape(g, g.shape) if p is not None else None for p in node.parents)


def _neg(node: Any, g: Tensor) -> tuple:
    return (ew.neg(g),)


def _abs(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, _sgn(node.inputs[0])),)


def _exp(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, _c(node.output(node.saved))),)


def _log(node: Any, g: Tensor) -> tuple:
    return (ew.div(g, _c(node.inputs[0])),)


def _sin(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, _c(ew.cos(node.inputs[0]))),)


def _cos(node: Any, g: Tensor) -> tuple:
    return (ew.neg(ew.mul(g, _c(ew.sin(node.inputs[0])))),)


def _tanh(node: Any, g: Tensor) -> tuple:
    y = node.output(node.saved)
    if y.dtype.kind == "c":
        return (ew.mul(g, _c(ew.sub(1, ew.mul(y, y)))),)
    return (of_result("tanh", g, y),)


def _sqrt(node: Any, g: Tensor) -> tuple:
    return (ew.div(g, ew.mul(_c(node.output(node.saved)), 2)),)


def _reciprocal(node: Any, g: Tensor) -> tuple:
    """PyTorch's ReciprocalBackward0: -g * (r * r) of the result r, each step rounded."""
    r = node.output(node.saved)
    return (ew.neg(ew.mul(g, _c(ew.mul(r, r)))),)


def _rsqrt(node: Any, g: Tensor) -> tuple:
    """PyTorch's RsqrtBackward0: (-0.5 * g) * r ** 3 of the result r, each step rounded."""
    return (ew.mul(ew.mul(g, -0.5), _c(ew.pow(node.output(node.saved), 3))),)


def _erf(node: Any, g: Tensor) -> tuple:
    x = node.inputs[0]
    return (ew.mul(g, ew.mul(ew.exp(ew.neg(ew.mul(x, x))), 2 / math.sqrt(math.pi))),)


def _sigmoid(node: Any, g: Tensor) -> tuple:
    y = node.output(node.saved)
    # complex sigmoid is composed (ops/elementwise.py): real dtypes only here.
    # (g * (1 - y)) * y, PyTorch's order: bfloat16 in float32 rounded once, float16 in half
    if y.dtype is dtypes.bfloat16:
        wide = ew.cast(y, dtypes.float32)
        grad = ew.mul(ew.mul(ew.cast(g, dtypes.float32), ew.sub(1, wide)), wide)
        return (ew.cast(grad, g.dtype),)
    return (of_result("sigmoid", g, y),)


def _tanh_backward(g: Tensor, y: Tensor, axis: Any) -> Tensor:
    if y.dtype in _HALF:  # in float32, rounded once, as PyTorch's CPU kernel
        wide = ew.cast(y, dtypes.float32)
        return ew.cast(ew.mul(ew.cast(g, dtypes.float32), ew.sub(1, ew.mul(wide, wide))), g.dtype)
    return ew.mul(g, ew.sub(1, ew.mul(y, y)))


def _sigmoid_backward(g: Tensor, y: Tensor, axis: Any) -> Tensor:
    return ew.mul(ew.mul(g, ew.sub(1, y)), y)


def _softmax_backward(g: Tensor, y: Tensor, axis: Any) -> Tensor:
    if y.dtype in _HALF:  # in float32, rounded once, as PyTorch's CPU kernel
        wide = _softmax_backward(ew.cast(g, dtypes.float32), ew.cast(y, dtypes.float32), axis)
        return ew.cast(wide, g.dtype)
    return ew.mul(y, ew.sub(g, rd.sum(ew.mul(g, y), axis, keepdim=True)))


def _log_softmax_backward(g: Tensor, y: Tensor, axis: Any) -> Tensor:
    if y.dtype in _HALF:  # (as softmax's)
        wide = _log_softmax_backward(ew.cast(g, dtypes.float32), ew.cast(y, dtypes.float32), axis)
        return ew.cast(wide, g.dtype)
    return ew.sub(g, ew.mul(ew.exp(y), rd.sum(g, axis, keepdim=True)))


def _tanh_backward_of_result(gg: Tensor, g: Tensor, y: Tensor, axis: Any) -> Tensor:
    return ew.mul(gg, ew.mul(ew.mul(y, -2), g))  # d/dy g (1 - y^2), PyTorch's order


def _sigmoid_backward_of_result(gg: Tensor, g: Tensor, y: Tensor, axis: Any) -> Tensor:
    return ew.mul(ew.mul(gg, g), ew.sub(1, ew.mul(y, 2)))  # d/dy g (1 - y) y


def _softmax_backward_of_result(gg: Tensor, g: Tensor, y: Tensor, axis: Any) -> Tensor:
    # d/dy y (g - sum(g y)): gg (g - sum(g y)) - g sum(gg y)
    inner = ew.mul(gg, ew.sub(g, rd.sum(ew.mul(g, y), axis, keepdim=True)))
    return ew.sub(inner, ew.mul(g, rd.sum(ew.mul(gg, y), axis, keepdim=True)))


def _log_softmax_backward_of_result(gg: Tensor, g: Tensor, y: Tensor, axis: Any) -> Tensor:
    # d/dy (g - exp(y) sum(g)): -gg exp(y) sum(g)
    return ew.neg(ew.mul(ew.mul(gg, ew.exp(y)), rd.sum(g, axis, keepdim=True)))


def _log_softmax_backward_of_grad(gg: Tensor, y: Tensor, axis: Any) -> Tensor:
    # d/dg (g - exp(y) sum(g)): gg - sum(gg exp(y)), broadcast back
    return ew.sub(gg, rd.sum(ew.mul(gg, ew.exp(y)), axis, keepdim=True))


#: The ops whose input gradient PyTorch computes from the output ``y`` by one op
#: (``tanh_backward(g, y)``...): that gradient's formula ``(g, y, axis)``, the formulas of
#: its own gradients of ``g`` ``(gg, y, axis)`` and of ``y`` ``(gg, g, y, axis)``, and the name
#: of PyTorch's double-backward node.
_OF_RESULT: dict[str, tuple[Callable, Callable, Callable, str]] = {
    "tanh": (
        _tanh_backward, _tanh_backward, _tanh_backward_of_result, "TanhBackwardBackward0"
    ),
    "sigmoid": (
        _sigmoid_backward, _sigmoid_backward, _sigmoid_backward_of_result,
        "SigmoidBackwardBackward0",
    ),
    "softmax": (
        _softmax_backward, _softmax_backward, _softmax_backward_of_result,
        "SoftmaxBackwardDataBackward0",
    ),
    "log_softmax": (
        _log_softmax_backward, _log_softmax_backward_of_grad, _log_softmax_backward_of_result,
        "LogSoftmaxBackwardDataBackward0",
    ),
}  # fmt: skip


def of_result(op: str, g: Tensor, y: Tensor, axis: int | None = None) -> Tensor:
    """The input gradient of ``op`` (a key of :data:`_OF_RESULT`) from its output ``y`` and
    output gradient ``g`` (along ``axis`` for softmax's), recorded under ``create_graph`` as
    one node saving ``(g, y)``, as PyTorch's double-backward node: a write through the
    output's ``.data`` (node.py output_rewritten rebinds ``y``) then reaches every term of
    its gradient, where a composition's intermediates would keep the old values."""
    if not is_grad_enabled():
        return _OF_RESULT[op][0](g, y, axis)
    out = _OfResult.apply(g, y, op, axis)
    if out._node is not None:
        out._node.label = _OF_RESULT[op][3]
    return out


class _OfResult(Function):
    """:func:`of_result`'s node under ``create_graph``."""

    @staticmethod
    def forward(ctx: Any, g: Tensor, y: Tensor, op: str, axis: Any) -> Tensor:
        ctx.op, ctx.axis = op, axis
        ctx.save_for_backward(g, y)
        return _OF_RESULT[op][0](g, y, axis)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple:
        g, y = ctx.saved_tensors
        _, of_grad, of_y, _ = _OF_RESULT[ctx.op]
        gg_g = of_grad(gg, y, ctx.axis) if ctx.needs_input_grad[0] else None
        gg_y = of_y(gg, g, y, ctx.axis) if ctx.needs_input_grad[1] else None
        return gg_g, gg_y, None, None


def _relu(node: Any, g: Tensor) -> tuple:
    y, fused = node.saved
    if not is_grad_enabled():
        if fused is not None:
            backend = g.backend
            (grad,) = backend.fused_relu_backward(fused, g.native, (True,))
            return (Tensor(grad, backend, g.dtype),)
        # zero where the output is <= 0, as torch's threshold_backward: a NaN passes g on
        return (ew.where(ew.le(node.output(y), 0), 0.0, g),)
    result = node.output(y)
    alive = ew.logical_not(ew.le(result, 0))
    return (_slope_backward(g, alive, result, "ThresholdBackwardBackward0"),)


def _masked(g: Tensor, slope: Tensor | tuple[Tensor, float]) -> Tensor:
    """g where a bool ``slope`` is True and 0 elsewhere (a NaN in g too, as PyTorch's
    kernels); for a pair (mask, rate), g where mask is True and g * rate elsewhere (rate a
    number, so a half g is multiplied in float as PyTorch's leaky_relu_backward, not by a
    rate rounded to half first)."""
    if isinstance(slope, tuple):
        mask, rate = slope
        return ew.where(mask, g, ew.mul(g, rate))
    return ew.where(slope, g, 0.0)


def _slope_backward(
    g: Tensor, slope: Tensor | tuple[Tensor, float], read: Tensor, label: str
) -> Tensor:
    """The gradient of a piecewise linear op (relu, leaky_relu, hardtanh, ...): g masked or
    scaled by ``slope`` (see ``_masked``), which carries no graph. Under create_graph it is
    one node of g and of ``read``, the tensor PyTorch's backward formula reads (the input or
    the output), with zero derivative there: so it requires grad like PyTorch's even where
    g does not, and a penalty on it can be differentiated."""
    if not is_grad_enabled():
        return _masked(g, slope)
    with no_grad():
        grad = _masked(g, slope)
    out = apply("slope_backward", grad.native, g.dtype, (g, read), slope)
    return labelled(out, label, g, read)


def _slope_backward_rule(node: Any, g: Tensor) -> tuple:
    slope = node.saved
    return (
        _masked(g, slope) if _needs(node, 0) else None,
        zeros_like_shape(g, g.shape) if _needs(node, 1) else None,
    )


def _piecewise_linear(node: Any, g: Tensor) -> tuple:
    """The node nn.functional's leaky_relu, hardtanh, threshold and the shrinks record
    (``activation._piecewise_linear``): saved, the slope and PyTorch's name of the node."""
    slope, label = node.saved
    return (_slope_backward(g, slope, node.inputs[0], label),)


def _log1p(node: Any, g: Tensor) -> tuple:
    return (ew.div(g, _c(ew.add(node.inputs[0], 1))),)


def _expm1(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, _c(ew.add(node.output(node.saved), 1))),)


def _clamp(node: Any, g: Tensor) -> tuple:
    x = node.inputs[0]
    low, high = node.saved
    keep = None
    if low is not None:
        keep = ew.ge(x, low)
    if high is not None:
        below = ew.le(x, high)
        keep = below if keep is None else ew.logical_and(keep, below)
    return (ew.where(keep, g, 0.0),)


def _where(node: Any, g: Tensor) -> tuple:
    cond = node.inputs[0]
    if type(node.saved) is ix.Remade:  # (index_fill's mask, made again from its index)
        cond = node.saved.index(cond)
    return (
        None,
        ew.where(cond, g, 0.0) if _needs(node, 1) else None,
        ew.where(cond, 0.0, g) if _needs(node, 2) else None,
    )


def _identity(node: Any, g: Tensor) -> tuple:
    return (g,)


# -- reductions -------------------------------------------------------------------------------


def _spread(node: Any, g: Tensor) -> Tensor:
    """The reduced gradient back at the input's shape."""
    x = node.inputs[0]
    saved = node.saved
    axes, keepdim = saved[0], saved[1]  # (max/min keep their output third)
    if not is_grad_enabled():
        # A first-order backward records nothing: the two primitives alone, without the
        # ops' checks (the shapes are the forward's own), on every loss.sum().backward().
        backend = g.backend
        native = g.native if keepdim else backend.reshape(g.native, rd.kept_shape(x.shape, axes))
        return Tensor(backend.expand(native, x.shape), backend, g.dtype)
    if not keepdim:
        g = mv.reshape(g, rd.kept_shape(x.shape, axes))
    return mv.expand(g, x.shape)


def _sum(node: Any, g: Tensor) -> tuple:
    return (_spread(node, g),)


def _prod(node: Any, g: Tensor) -> tuple:
    """PyTorch's ProdBackward0/1: g * conj(result / x) where no element of x is 0 (one read
    of the values, as PyTorch's), from the result the node kept (reduced dims kept: ops/
    reduce.py ``_saving_result``; a write through ``.data`` reaches it); else from the
    product of the other elements of each reduced group."""
    from tensorweaver.ops.numeric import _compiling  # (numeric imports this module)

    x = node.inputs[0]
    out, g = _reduction_result(node, g)
    # (while tw.compile traces, the form with zeros, without reading the values)
    if not _compiling() and not rd.any(ew.eq(x, 0)).item():
        return (ew.mul(g, _c(ew.div(out, x))),)
    # The reduced axes: those the kept result has at size 1 (a size-1 axis of x, reduced or
    # not, groups the same elements)
    axes = tuple([d for d, size in enumerate(out.shape) if size == 1])
    g = mv.expand(g, x.shape)
    # PyTorch's prod_safe_zeros_backward: each element gets the product of the others (0 *
    # inf is NaN beside an infinity); its whole-tensor rule (ProdBackward0) gives 0 outright
    # where two or more elements are 0, first order only
    others = _product_of_others(x, axes)
    if node.label == "ProdBackward0" and not is_grad_enabled():
        others = ew.where(ew.gt(rd.sum(ew.eq(x, 0), axes, True), 1), 0.0, others)
    return (ew.mul(g, _c(others)),)


def _product_of_others(x: Tensor, axes: tuple[int, ...]) -> Tensor:
    """For each element, the product of the other elements of its reduced group: running
    products from both ends (no division), so its own derivative is right with zeros too
    (two scans: first-order backward keeps the cheaper division above)."""
    from tensorweaver.ops.numeric import cumprod  # numeric imports this module's neighbours

    keep = tuple(d for d in range(x.ndim) if d not in axes)
    perm = (*keep, *axes)
    moved = mv.permuted(x, perm)
    flat = mv.reshape(moved, (*moved.shape[: len(keep)], math.prod(x.shape[a] for a in axes)))
    if flat.shape[-1] == 0:
        return x
    edge = [(0, 0)] * (flat.ndim - 1)
    before = cumprod(mv.pad_dims(flat, [*edge, (1, -1)], 1), -1)  # x0 .. x(k-1)
    after = mv.flip(cumprod(mv.flip(mv.pad_dims(flat, [*edge, (-1, 1)], 1), -1), -1), -1)
    others = mv.reshape(ew.mul(before, after), moved.shape)
    return mv.permuted(others, tuple(perm.index(d) for d in range(x.ndim)))


def _logsumexp(node: Any, g: Tensor) -> tuple:
    """exp(x - result) g, with the result the node kept (reduced dims kept: ops/reduce.py
    ``_saving_result``), as PyTorch's LogsumexpBackward0 reads its saved result."""
    x = node.inputs[0]
    out, g = _reduction_result(node, g)
    return (ew.mul(g, _c(ew.exp(ew.sub(x, out)))),)


def _two_norm(node: Any, g: Tensor) -> tuple:
    """g x / result, 0 where the result is 0: PyTorch's 2-norm backward, from the result the
    node kept (as ``_logsumexp``'s). Under create_graph the mask is of x / result, as
    PyTorch's, so the second derivative at a zero slice is NaN (0 / 0 in the division's
    backward); a first-order backward masks g / result, a where over the reduced shape
    (one over x's costs ~20 us more; the two differ only for a NaN g at a zero slice)."""
    x = node.inputs[0]
    norm, g = _reduction_result(node, g)
    zero = ew.eq(norm, 0)
    if is_grad_enabled():
        return (ew.mul(g, ew.where(zero, 0.0, ew.div(x, norm))),)
    return (ew.mul(x, ew.where(zero, 0.0, ew.div(g, norm))),)


def _extreme(node: Any, g: Tensor) -> tuple:
    """amax/amin (max()/min() too): the gradient is shared evenly between the elements equal
    to the result."""
    x = node.inputs[0]
    axes, keepdim, native = node.saved
    # The output the node kept (PyTorch's node reads its saved result, which a write through
    # ``.data`` changes), at the kept shape
    if not keepdim:
        native = x.backend.reshape(native, rd.kept_shape(x.shape, axes))
    y = Tensor(native, x.backend, x.dtype)
    if node.label == "MaxBackward1" or node.label == "MinBackward1":
        # max()/min() of every element: PyTorch's CPU node gives g / count to the elements
        # equal to the result (the NaNs where it is NaN: one read of it, as PyTorch's), so 0
        # where none is (a count of 0 divides by 1: a where over x costs ~30 us more)
        from tensorweaver.ops.numeric import _compiling  # (numeric imports this module)

        if _compiling():  # (no read while tw.compile traces: both masks)
            hit = ew.logical_or(ew.eq(x, y), ew.logical_and(ew.isnan(x), ew.isnan(y)))
        else:
            hit = ew.isnan(x) if math.isnan(y.item()) else ew.eq(x, y)
        hit = hit.to(x.dtype)
        count = rd.sum(hit, axes, True).clamp(min=1.0)
        return (ew.div(ew.mul(_spread(node, g), hit), count),)
    hit = ew.eq(x, y).to(x.dtype)
    count = rd.sum(hit, axes, True)
    return (ew.div(ew.mul(_spread(node, g), hit), count),)


def _cumsum(node: Any, g: Tensor) -> tuple:
    axis = node.saved
    return (mv.flip(rd.cumsum(mv.flip(g, axis), axis), axis),)


# -- movement ---------------------------------------------------------------------------------


def _reshape(node: Any, g: Tensor) -> tuple:
    # Back to the input's shape, which holds as many elements: no size check needed.
    shape = node.inputs[0].shape
    if node.label in _SQUEEZES and is_grad_enabled():  # (create_graph: torch's nodes)
        back = _unsqueezed_back(node, g, shape)
        if back.shape == shape:  # (else a reshape stands for it, as before)
            return (back,)
    return (mv._reshape(g, shape, "reshape"),)


#: Labels of reshape nodes whose gradient torch records as its own squeeze or unsqueezes.
_SQUEEZES = frozenset(
    ("UnsqueezeBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2")
)


def _unsqueezed_back(node: Any, g: Tensor, shape: tuple) -> Tensor:
    """``g`` of an unsqueeze's node squeezed at its dim (SqueezeBackward1), or of a squeeze's
    node unsqueezed at each axis it dropped, lowest first (UnsqueezeBackward0 each), as
    torch 2.13's backward of them."""
    import weakref

    if node.label == "UnsqueezeBackward0":
        dim = mv.UNSQUEEZE_DIMS.get(weakref.ref(node))
        return g if dim is None else mv.squeeze(g, dim)
    kept, j = g.shape, 0
    for i, n in enumerate(shape):
        if j < len(kept) and kept[j] == n:
            j += 1
        else:  # (an axis of size 1 the squeeze dropped)
            g = mv.unsqueeze(g, i)
    return g


def _permute(node: Any, g: Tensor) -> tuple:
    perm = node.saved
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return (mv.permuted(g, tuple(inverse)),)


def _pad(node: Any, g: Tensor) -> tuple:
    widths = node.saved
    cut = mv.slice_dims(
        g,
        [lo for lo, _ in widths],
        [lo + n for (lo, _), n in zip(widths, node.inputs[0].shape)],
        [1] * g.ndim,
    )
    if is_grad_enabled():  # (create_graph: torch's constant_pad_nd of g by the widths negated)
        cut = labelled(cut, "ConstantPadNdBackward0", g)
    return (cut,)


def _slice(node: Any, g: Tensor) -> tuple:
    """Put the sliced gradient back in place: zeros elsewhere, strides by interleaving. A
    select (``x[i]``: ``saved`` is ``(axis, index)``, the axis dropped) puts it back at its
    index, one piece the engine joins with the other pieces of that axis by one cat."""
    from tensorweaver.autograd.engine import Piece

    shape = node.inputs[0].shape
    if len(node.saved) == 2:  # a select
        d, i = node.saved
        if d < 0:  # (select(-k, i) keeps its dim as given, as PyTorch's node)
            d += len(shape)
        kept = g.shape[:d] + (1,) + g.shape[d:]
        piece = Piece(mv._reshape(g, kept, "reshape"), d, i + shape[d] if i < 0 else i, shape)
        return (_recorded(node, g, piece.placed()) if _creates_graph(g) else piece,)
    starts, stops, steps = node.saved
    cut = [a for a, (s, e, n) in enumerate(zip(starts, stops, shape)) if s != 0 or e != n]
    if len(cut) == 1 and steps[cut[0]] == 1 and all(k == 1 for k in steps):
        # One axis, contiguous: the engine joins such pieces with one cat.
        piece = Piece(g, cut[0], starts[cut[0]], shape)
        return (_recorded(node, g, piece.placed()) if _creates_graph(g) else piece,)
    given = g
    for axis, (start, step, n) in enumerate(zip(starts, steps, shape)):
        m = g.shape[axis]
        if step > 1 and m:
            # Each element followed by step - 1 zeros, then merged: m * step long.
            # (before and along axis, the zeros, after): three dimensions whatever the rank.
            lead, rest = math.prod(g.shape[: axis + 1]), math.prod(g.shape[axis + 1 :])
            spread = mv.pad_dims(mv.reshape(g, (lead, 1, rest)), [(0, 0), (0, step - 1), (0, 0)])
            g = mv.reshape(spread, g.shape[:axis] + (m * step,) + g.shape[axis + 1 :])
        widths = [(0, 0)] * g.ndim
        widths[axis] = (start, n - start - g.shape[axis])
        g = mv.pad_dims(g, widths)
    return (_recorded(node, given, g) if _creates_graph(given) else g,)


def _creates_graph(g: Tensor) -> bool:
    """Whether a gradient made of ``g`` now is recorded (a backward with create_graph)."""
    return g.requires_grad and is_grad_enabled()


def _recorded(node: Any, g: Tensor, grad: Tensor) -> Tensor:
    """``grad``, the gradient a select or slice node made of ``g`` with create_graph, as
    PyTorch records it: one SelectBackwardBackward0 or SliceBackwardBackward0 node over
    ``g``'s, saving the select's or slice's arguments (autograd/grad_fn.py)."""
    from tensorweaver.autograd.grad_fn import note_backward_arguments

    name = node.name
    if name not in ("SelectBackward0", "SliceBackward0"):
        return grad
    out = labelled(apply("identity", grad.native, grad.dtype, (grad,)), name[:-1] + "Backward0", g)
    note_backward_arguments(out._node, node)
    return out


def _flip(node: Any, g: Tensor) -> tuple:
    return (mv.flip(g, node.saved),)


def _cat(node: Any, g: Tensor) -> tuple:
    axis, sizes = node.saved
    grads, start = [], 0
    for parent, size in zip(node.parents, sizes):
        grads.append(mv.narrow(g, axis, start, size) if parent is not None else None)
        start += size
    return tuple(grads)


# -- indexing ---------------------------------------------------------------------------------


def _take(node: Any, g: Tensor) -> tuple:
    x = node.inputs[0]
    dim, index = node.saved[0], ix.saved_index(node)
    if index.shape[0] != g.shape[dim]:  # (an index remade after a write through its .data)
        g = _fitted(node, g, dim, index.shape[0])
    grad = ix.index_add_unchecked(zeros_like_shape(g, x.shape), dim, index, g)
    if node.label == "IndexBackward0" and _creates_graph(g):  # (x[t]'s, as PyTorch records)
        from tensorweaver.autograd.grad_fn import note_backward_arguments

        grad = labelled(grad, "IndexPutImplBackward0", None, g)
        note_backward_arguments(grad._node, node)
    return (grad,)


def _fitted(node: Any, g: Tensor, dim: int, count: int) -> Tensor:
    """``g`` for a take's index remade with ``count`` positions (ops/index.py ``Remade``): its
    first ones where the index came from masked_select's mask, PyTorch's error otherwise."""
    have = g.shape[dim]
    if node.saved[2].prefix:
        if count > have:
            raise RuntimeError(
                f"masked_select backward: the mask, changed through its .data, now holds "
                f"{count} elements, more than the {have} of the gradient (Number of elements "
                "of source < number of ones in mask)"
            )
        return mv.narrow(g, dim, 0, count)
    shape = list(g.shape)
    raise RuntimeError(
        f"shape mismatch: value tensor of shape {shape} cannot be broadcast to indexing result "
        f"of shape {shape[:dim] + [count] + shape[dim + 1 :]} (an index tensor changed through "
        "its .data before backward)"
    )


#: The sort family's values, a gather whose indices a write through their ``.data`` may
#: repeat: PyTorch's nodes scatter the gradient there (the last write at an index wins).
_SCATTERED_BACK = frozenset(("SortBackward0", "SortBackward1", "TopkBackward0"))


def _gather(node: Any, g: Tensor) -> tuple:
    x = node.inputs[0]
    dim, index = node.saved[0], ix.saved_index(node)
    back = ix.scatter_unchecked if node.label in _SCATTERED_BACK else ix.scatter_add_unchecked
    return (back(zeros_like_shape(g, x.shape), dim, index, g),)


def _scatter(node: Any, g: Tensor) -> tuple:
    dim, index = node.saved[0], ix.saved_index(node)
    # The saved index was checked when the op ran: the rules skip the check.
    zeros = zeros_like_shape(g, index.shape)
    ga = ix.scatter_unchecked(g, dim, index, zeros) if _needs(node, 0) else None
    gb = ix.gather_unchecked(g, dim, index) if _needs(node, 1) else None
    if gb is not None and len(node.saved) == 3 and node.saved[2].prefix:
        gb = _source_prefix(node, gb)
    return ga, gb


def _source_prefix(node: Any, gb: Tensor) -> Tensor:
    """masked_scatter's source gradient ``gb`` after its mask changed through its ``.data``
    (ops/index.py ``Remade``): as many leading elements as the mask now holds, zeros after,
    as PyTorch's MaskedScatterBackward0 gives."""
    have, count = node.inputs[1].shape[0], gb.shape[0]
    if count > have:
        raise RuntimeError(
            f"masked_scatter backward: the mask, changed through its .data, now holds {count} "
            f"elements, more than the {have} of source (Number of elements of source < number "
            "of ones in mask)"
        )
    return mv.pad_dims(gb, [(0, have - count)])


def _scatter_add(node: Any, g: Tensor) -> tuple:
    dim, index = node.saved[0], ix.saved_index(node)
    return g, (ix.gather_unchecked(g, dim, index) if _needs(node, 1) else None)


def _cut_source(node: Any, g: Tensor) -> tuple:
    """A scatter's src larger than its index (ops/index.py ``cut_source``): PyTorch's error.
    Within a forward-AD level, whose tangents come from differentiating backward twice here
    (PyTorch computes them), the padded gradient."""
    shape = list(node.inputs[0].shape)
    from tensorweaver.autograd import forward_ad  # (it builds on the engine, which uses this)

    if forward_ad._current_level < 0:
        raise invalid_gradient(node.saved, g.shape, shape)
    return (mv.pad_dims(g, [(0, n - k) for n, k in zip(shape, g.shape)]),)


def invalid_gradient(name: str, got: tuple, src: tuple) -> RuntimeError:
    """PyTorch's engine's error where node ``name`` hands back a gradient of shape ``got`` (the
    index's) for a scatter's src of shape ``src``, larger."""
    return RuntimeError(
        f"Function {name} returned an invalid gradient at index 1 - got {list(got)} but "
        f"expected shape compatible with {list(src)}: src is larger than index; pass src cut "
        "to index's shape (src[:n, :m]) to get its gradient"
    )


def _reduced_by_index(node: Any, g: Tensor) -> tuple:
    """scatter_reduce's and index_reduce's node: its saved ``Recount`` (ops/numeric.py)."""
    return node.saved.gradients(node, g)


# -- linear algebra ---------------------------------------------------------------------------


def _matmul(node: Any, g: Tensor) -> tuple:
    a, b = node.inputs
    # Under create_graph the transposes are views of the inputs (ops/views.py), refreshed by
    # a write through an input's ``.data`` before the graph is differentiated again, as
    # PyTorch's ``mat1.t()`` shares the saved input's memory (a plain permute keeps the old
    # array); first order, the plain permute (no view to record)
    transpose = views.transpose if is_grad_enabled() else mv.transpose
    ga = g.matmul(transpose(_c(b), -2, -1)) if _needs(node, 0) else None
    gb = transpose(_c(a), -2, -1).matmul(g) if _needs(node, 1) else None
    return ga, gb


def _cast(node: Any, g: Tensor) -> tuple:
    return (g,)


# -- complex numbers --------------------------------------------------------------------------


def _real_part(node: Any, g: Tensor) -> tuple:
    return (g,)  # the engine makes it complex (imaginary part 0)


def _imag_part(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, 1j),)


def _conj(node: Any, g: Tensor) -> tuple:
    return (conj_physical(g),)


def _complex(node: Any, g: Tensor) -> tuple:
    return (_real(g) if _needs(node, 0) else None, _imag(g) if _needs(node, 1) else None)


def _polar(node: Any, g: Tensor) -> tuple:
    """PyTorch's PolarBackward0, from the result the node kept (ops/complex.py polar): the
    modulus's gradient real(conj(g) sgn(result)) (0 at a zero modulus, negated below one),
    the angle's real(conj(g) result i)."""
    out = _saved_result(node, node.saved, g.dtype)
    g = conj_physical(g)
    if is_grad_enabled():  # (create_graph: sgn's own backward, 0 at a zero modulus)
        return (
            _real(ew.mul(g, _sgn(out))) if _needs(node, 0) else None,
            _real(ew.mul(g, ew.mul(out, 1j))) if _needs(node, 1) else None,
        )
    # The same values from one complex product, divided by the modulus as a real (complex
    # arithmetic is the cost here: sgn's complex division took the rule from ~0.4 to ~1 ms
    # on (64, 128))
    product = ew.mul(g, out)
    modulus = ew.abs(out)
    zero = ew.eq(modulus, 0)
    return (
        ew.where(zero, 0.0, ew.div(_real(product), ew.where(zero, 1.0, modulus)))
        if _needs(node, 0)
        else None,
        ew.neg(_imag(product)) if _needs(node, 1) else None,
    )


def _to_device(node: Any, g: Tensor) -> tuple:
    return (g.to(node.inputs[0].backend),)


def _fused(node: Any, g: Tensor) -> tuple:
    from tensorweaver.ops.composite import fused_backward

    return fused_backward(node, g)


def _function(node: Any, g: Tensor) -> tuple:
    from tensorweaver.autograd.function import function_backward

    return function_backward(node, g)


def _nll_loss(node: Any, g: Tensor) -> tuple:
    from tensorweaver.nn.functional.loss import nll_loss_gradient  # (loaded: its node exists)

    return nll_loss_gradient(node, g)


class _RuleTable(dict):
    """The rule table. The rules of the optional special and linear-algebra primitives
    (``special_rules.SPECIAL_GRADIENTS``, ``linalg_rules.LINALG_GRADIENTS``) join it on the
    first lookup of an op it lacks: they import ``tw.linalg``, which ``import tensorweaver``
    must not load (issue 16). A node of theirs exists only once that code has run."""

    def __missing__(self, op: str) -> Rule:
        from tensorweaver.autograd.fft_rules import FFT_GRADIENTS
        from tensorweaver.autograd.linalg_rules import LINALG_GRADIENTS
        from tensorweaver.autograd.special_rules import SPECIAL_GRADIENTS

        self.update(SPECIAL_GRADIENTS)
        self.update(LINALG_GRADIENTS)
        self.update(FFT_GRADIENTS)
        if op not in self:  # __getitem__ would come back here: recursion, not a KeyError
            raise KeyError(op)
        return dict.__getitem__(self, op)


GRADIENTS: dict[str, Rule] = _RuleTable(
    {
        "add": _add,
        "sub": _sub,
        "mul": _mul,
        "div": _div,
        "pow": _pow,
        "maximum": _extremum,
        "minimum": _extremum,
        "remainder": _remainder,
        "hypot": _hypot,
        "floor_divide": _zero,
        "neg": _neg,
        "abs": _abs,
        "sign": _zero,
        "draw": _zero,  # (ops/sampling.py drawn: a random op's inputs get zeros, as PyTorch's)
        "floor": _zero,
        "ceil": _zero,
        "round": _zero,
        "trunc": _zero,
        "exp": _exp,
        "log": _log,
        "sin": _sin,
        "cos": _cos,
        "tanh": _tanh,
        "sqrt": _sqrt,
        "reciprocal": _reciprocal,
        "rsqrt": _rsqrt,
        "erf": _erf,
        "sigmoid": _sigmoid,
        "relu": _relu,
        "slope_backward": _slope_backward_rule,
        "piecewise_linear": _piecewise_linear,
        "log1p": _log1p,
        "expm1": _expm1,
        "clamp": _clamp,
        "where": _where,
        "identity": _identity,
        "sum": _sum,
        "prod": _prod,
        "logsumexp": _logsumexp,
        "linalg_vector_norm": _two_norm,
        "max": _extreme,
        "min": _extreme,
        "cumsum": _cumsum,
        "reshape": _reshape,
        "expand": _identity,  # the engine sums the gradient back to the input's shape
        "permute": _permute,
        "pad": _pad,
        "slice": _slice,
        "flip": _flip,
        "cat": _cat,
        "take": _take,
        "gather": _gather,
        "scatter": _scatter,
        "scatter_add": _scatter_add,
        "cut_source": _cut_source,
        "scatter_reduce": _reduced_by_index,
        "index_reduce": _reduced_by_index,
        "matmul": _matmul,
        "cast": _cast,
        "real": _real_part,
        "imag": _imag_part,
        "conj": _conj,
        "complex": _complex,
        "polar": _polar,
        "to_device": _to_device,
        "fused": _fused,
        "function": _function,
        "nll_loss": _nll_loss,
    }
)
