"""Reader r5, session 36 (wave 3 review: saved_tensors_hooks packs, sign, norm(p=1),
cholesky/inv result-alone, torch plugin owns_memory, add_scaled): older defects found, each
compared with torch 2.13 (no regression of wave 3 was found)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same, same_each

SPECS = ["numpy", "torch:cpu"]


def _packed(op: Callable, n: int = 2) -> Callable:
    """``op(m, *operands)`` under a pack hook noting what it is given and an unpack hook
    that doubles it; what was packed and the leaves' gradients."""

    def program(m: Any) -> Any:
        seen = []
        leaves = [
            (m.arange(-2.0, 4.0, dtype=m.float64).reshape(2, 3) / 4 + 0.3 * k).requires_grad_()
            for k in range(n)
        ]
        with m.autograd.graph.saved_tensors_hooks(
            lambda t: seen.append(t.detach().clone()) or t, lambda t: t * 2
        ):
            y = op(m, *[v * 1 for v in leaves])
        return tuple(seen), m.autograd.grad((y * y).sum(), leaves)

    return program


@pytest.mark.parametrize("target", ["factor", "input"])
def test_cholesky_create_graph_after_data_write(target: str) -> None:
    def program(m: Any) -> Any:
        x = m.tensor([[2.0, 0.5], [0.3, 3.0]], dtype=m.float64, requires_grad=True)
        a = x @ x.mT
        factor = m.linalg.cholesky(a)
        (factor if target == "factor" else a).data.mul_(2)
        weights = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)
        (g,) = m.autograd.grad((factor * weights).sum(), x, create_graph=True)
        return g, m.autograd.grad(g.sum(), x)

    same(program, "torch:cpu", decimals=8)


@pytest.mark.parametrize("spec", SPECS)
def test_fmax_fmin_under_unpack_hook(spec: str) -> None:
    same_each(
        {
            "fmax": _packed(lambda m, x, y: m.fmax(x, y)),
            "fmin": _packed(lambda m, x, y: m.fmin(x, y)),
        },
        spec,
        decimals=10,
    )


@pytest.mark.xfail(
    strict=True,
    reason="linalg.cholesky(upper=True) packs the lower factor L (linalg/primitives.py "
    "_wrap, linalg/fused.py _PACKS_RESULT: the node's output before the transpose), "
    "PyTorch's LinalgCholeskyExBackward0 packs the result U the caller gets. Fix: pack "
    "the returned (transposed) result and transpose back on unpack for upper=True",
)
@pytest.mark.parametrize("spec", SPECS)
def test_cholesky_upper_packs_its_result(spec: str) -> None:
    eye = lambda m: m.eye(2, dtype=m.float64)  # noqa: E731
    same(
        _packed(lambda m, x: m.linalg.cholesky(x @ x.mT + eye(m), upper=True), 1),
        spec,
        decimals=10,
    )


@pytest.mark.xfail(
    strict=True,
    reason="packs as PyTorch's, older: vdot packs self first (ops/spellings.py vdot goes "
    "through dot's SelfFirst; VdotBackward0 packs other first); square packs x twice "
    "(mul(x, x); PowBackward0 packs self once); outer/inner pack their reshaped (1, n)/"
    "(n, 1) views, not the vectors; addcmul/addcdiv with value != 1 pack tensor1 * value, "
    "not tensor1 (ops/elementwise.py addcmul: mul(mul(tensor1, value), tensor2)); "
    "mse_loss packs the difference twice, not (self, target); maximum with a 0-d tensor "
    "operand skips it as a Python number (autograd/node.py _constant_number)",
)
@pytest.mark.parametrize("spec", SPECS)
def test_composites_pack_as_torch(spec: str) -> None:
    same_each(
        {
            "vdot": _packed(lambda m, x, y: m.vdot(x[0], y[1])),
            "square": _packed(lambda m, x: m.square(x), 1),
            "outer": _packed(lambda m, x, y: m.outer(x[0], y[1])),
            "inner": _packed(lambda m, x, y: m.inner(x[0], y[1])),
            "addcmul value": _packed(lambda m, x, y: m.addcmul(x, x, y, value=0.5)),
            "addcdiv value": _packed(lambda m, x, y: m.addcdiv(x, x, y + 3, value=0.5)),
            "mse_loss": _packed(lambda m, x, y: m.nn.functional.mse_loss(x, y)),
            "maximum 0-d": _packed(lambda m, x: m.maximum(x, m.tensor(0.1, dtype=m.float64)), 1),
        },
        spec,
        decimals=10,
    )


@pytest.mark.xfail(
    strict=True,
    reason="div(rounding_mode='floor'/'trunc') with a graph: grad_fn FloorDivideBackward0/"
    "TruncBackward0 and (floor) nothing packed, where PyTorch's DivBackward2 packs other "
    "then self; gradients (zeros) agree. Fix: label the rounding div DivBackward2 and pack "
    "its operands (other first) as div's node",
)
@pytest.mark.parametrize("spec", SPECS)
def test_rounding_div_node(spec: str) -> None:
    def program(mode: str) -> Callable:
        def run(m: Any) -> Any:
            seen = []
            x = (m.arange(-2.0, 4.0, dtype=m.float64) / 4).requires_grad_()
            y = (m.arange(1.0, 7.0, dtype=m.float64) + 2).requires_grad_()
            with m.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
                z = m.div(x * 1, y * 1, rounding_mode=mode)
            return type(z.grad_fn).__name__, tuple(seen)

        return run

    same_each({"floor": program("floor"), "trunc": program("trunc")}, spec, decimals=10)


@pytest.mark.xfail(
    strict=True,
    reason="float16/bfloat16 addcmul/addcdiv compute in float32 (ops/elementwise.py "
    "addcmul/addcdiv _HALF branch) and so pack float32 copies of tensor1/tensor2; PyTorch "
    "packs the half tensors themselves. Fix: under SAVED_TENSORS_HOOKS, one node for the "
    "half path (the float32 arithmetic inside, the half operands packed)",
)
@pytest.mark.parametrize("spec", SPECS)
def test_half_addcmul_packs_half_operands(spec: str) -> None:
    def program(m: Any) -> Any:
        seen = []
        x = m.arange(1.0, 7.0).reshape(2, 3).half().requires_grad_()
        with m.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
            m.addcmul(x * 1, x * 1, x * 2)
        return tuple(seen)

    same(program, spec)
