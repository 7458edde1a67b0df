"""``tw.autocast`` objects, the autocast state functions, ``custom_fwd``/``custom_bwd`` and
gradients under autocast, against PyTorch's CPU autocast on the same inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

A = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)


def _api(m: Any) -> Any:
    """Where the state functions live: ``torch.*``; ``tw.amp.*`` (also ``tw.*``)."""
    return tw.amp if m is tw else m


def _name(t: Any) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def test_one_autocast_object_serves_many_blocks_and_calls() -> None:
    # tw.autocast was a generator context manager: a second `with` on it raised
    # AttributeError ('_GeneratorContextManager' object has no attribute 'args').
    # (Not nested in itself: PyTorch's object then leaks its state past the outer block.)
    def run(m: Any) -> list:
        a, b = m.tensor(A), m.tensor(B)
        block = m.autocast("cpu", dtype=m.float16)
        seen = []
        for _ in range(2):
            with block:
                with m.autocast("cpu"):
                    seen.append(_name(a @ b))
                seen.append(_name(a @ b))
            seen.append(_name(a @ b))
        product = block(lambda: _name(a @ b))
        return [*seen, product(), product(), _name(a @ b)]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)


def test_state_functions_inside_and_outside_blocks_like_torch() -> None:
    def run(m: Any) -> list:
        api = _api(m)
        a = m.tensor(A)
        out = [api.is_autocast_enabled("cpu"), api.get_autocast_dtype("cpu")]
        out += [api.get_autocast_dtype("cuda"), api.is_autocast_cache_enabled()]
        with m.autocast("cpu", dtype=m.float16, cache_enabled=False):
            out += [api.is_autocast_enabled("cpu"), api.is_autocast_enabled("cuda")]
            out += [api.get_autocast_dtype("cpu"), api.is_autocast_cache_enabled()]
            with m.autocast("cpu", enabled=False):
                out += [api.is_autocast_enabled("cpu"), _name(a @ a.T)]
            out.append(api.is_autocast_enabled("cpu"))
        api.set_autocast_enabled("cpu", True)
        api.set_autocast_dtype("cpu", m.float16)
        out += [api.is_autocast_enabled("cpu"), _name(a @ a.T), api.get_autocast_dtype("cpu")]
        api.set_autocast_enabled("cpu", False)
        api.set_autocast_dtype("cpu", m.bfloat16)
        api.set_autocast_cache_enabled(True)
        api.clear_autocast_cache()
        out += [api.is_autocast_enabled("cpu"), _name(a @ a.T)]
        return [str(x).rsplit(".", 1)[-1] for x in out]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)


def test_state_functions_are_top_level_names_like_torch() -> None:
    # tw.is_autocast_enabled and the rest, and tw.cpu, raised AttributeError.
    names = (
        "autocast clear_autocast_cache get_autocast_dtype is_autocast_cache_enabled "
        "is_autocast_enabled set_autocast_cache_enabled set_autocast_dtype set_autocast_enabled"
    ).split()
    assert all(hasattr(torch, name) for name in names)
    assert [name for name in names if getattr(tw, name, None) is not getattr(tw.amp, name)] == []
    assert tw.cpu.amp.autocast is not None and "cpu" in dir(tw)


def _function(m: Any, log: list, **fwd: Any) -> Any:
    """A matrix product with its own gradient, decorated with custom_fwd/custom_bwd; ``log``
    gets the autocast state and dtypes its forward and backward see."""

    class Product(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", **fwd)
        def forward(ctx: Any, a: Any, b: Any) -> Any:
            ctx.save_for_backward(a, b)
            log.append((_api(m).is_autocast_enabled("cpu"), _name(a), _name(b)))
            return a @ b

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx: Any, g: Any) -> Any:
            a, b = ctx.saved_tensors
            log.append((_api(m).is_autocast_enabled("cpu"), _name(g), _name(g @ b.T)))
            return g @ b.T, a.T @ g

    return Product


@pytest.mark.parametrize("fwd", [{}, {"cast_inputs": "float32"}, {"cast_inputs": "float16"}])
def test_custom_fwd_and_custom_bwd_like_torch(fwd: dict) -> None:
    def run(m: Any) -> list:
        kwargs = {k: getattr(m, v) for k, v in fwd.items()}
        a = m.tensor(A, requires_grad=True)
        b = m.tensor(B, requires_grad=True)
        log: list = []
        with m.autocast("cpu"):
            out = _function(m, log, **kwargs).apply(a, b)
        out.float().sum().backward()
        return [*log, _name(out), _name(a.grad), _name(b.grad)]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)


def test_custom_fwd_needs_a_device_type_like_torch() -> None:
    for m in (tw, torch):
        with pytest.raises(TypeError, match="device_type"):
            m.amp.custom_fwd(lambda ctx, x: x)


def test_the_deprecated_spellings_warn_like_torch() -> None:
    def run(m: Any) -> list:
        a, b = m.tensor(A), m.tensor(B)
        with pytest.warns(FutureWarning, match=r"torch\.amp\.autocast\('cpu'"):
            block = m.cpu.amp.autocast()
        with block:
            low = _name(a @ b)
        with pytest.warns(FutureWarning, match=r"torch\.amp\.custom_fwd\(args\.\.\., device_type"):
            m.cuda.amp.custom_fwd(lambda ctx, x: x)
        with pytest.warns(FutureWarning, match=r"torch\.amp\.custom_bwd\(args\.\.\., device_type"):
            m.cuda.amp.custom_bwd(lambda ctx, x: x)
        return [low, _name(a @ b)]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_float32_parameters_get_float32_gradients_under_autocast_like_torch(low: str) -> None:
    rng = np.random.default_rng(2)
    x_host = rng.standard_normal((5, 8)).astype(np.float32)
    target = rng.standard_normal((5, 3)).astype(np.float32)

    def run(m: Any) -> list:
        m.manual_seed(0)
        lin = m.nn.Linear(8, 3)
        lin.load_state_dict({"weight": m.tensor(B.T.copy()), "bias": m.tensor(B[0].copy())})
        with m.autocast("cpu", dtype=getattr(m, low)):
            y = lin(m.tensor(x_host))
            loss = m.nn.functional.mse_loss(y.float(), m.tensor(target))
        loss.backward()
        return [y, loss, lin.weight.grad, lin.bias.grad]

    with tw.device("torch:cpu"):
        ours = run(tw)
    theirs = run(torch)
    for got, want in zip(ours, theirs):
        assert _name(got) == _name(want)
        np.testing.assert_allclose(
            got.detach().float().numpy(), want.detach().float().numpy(), rtol=2e-2, atol=2e-2
        )


def test_entering_gives_the_block_and_decorating_a_non_callable_raises_like_torch() -> None:
    # `with tw.autocast(...) as block` gave None; decorating a number returned a wrapper.
    def run(m: Any) -> list:
        made = m.autocast("cpu", dtype=m.float16)
        with made as entered:
            same = entered is made
        try:
            made(3)
        except TypeError as exc:
            return [same, type(exc).__name__, "requires a callable" in str(exc)]
        return [same, "no error"]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)


def test_another_device_types_state_leaves_the_cpu_block_in_force_like_torch() -> None:
    # Setting the CUDA (or any other device type's) dtype or switch inside a CPU block, or a
    # disabled CUDA block, turned the CPU block's autocast off for the ops that follow.
    def run(m: Any) -> list:
        api = _api(m)
        a, b = m.tensor(A), m.tensor(B)
        seen = []
        with m.autocast("cpu"):
            api.set_autocast_dtype("cuda", m.float16)
            seen.append(_name(a @ b))
            api.set_autocast_enabled("xpu", False)
            seen.append(_name(a @ b))
            with m.autocast("cuda", enabled=False):
                seen += [_name(a @ b), api.is_autocast_enabled("cpu")]
            api.set_autocast_dtype("cuda", m.float16)
        return [*seen, _name(a @ b), api.get_autocast_dtype("cuda")]

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert [str(x).rsplit(".", 1)[-1] for x in ours] == [
        str(x).rsplit(".", 1)[-1] for x in run(torch)
    ]


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_a_full_precision_block_inside_a_low_one_computes_like_a_disabled_torch_block(
    precision: str,
) -> None:
    # The sweep's rewrite left autocast('fp32') inside autocast('bf16') in bfloat16 (it
    # computed in float32 before): the precision names have no PyTorch spelling, so the
    # block is compared with PyTorch's disabled inner block.
    with tw.device("torch:cpu"):
        a, b = tw.tensor(A), tw.tensor(B)
        with tw.autocast("bf16"):
            with tw.autocast(precision):
                ours = [_name(a @ b), tw.amp.is_autocast_enabled("cpu")]
            ours.append(_name(a @ b))
    ta, tb = torch.tensor(A), torch.tensor(B)
    with torch.autocast("cpu"):
        with torch.autocast("cpu", enabled=False):
            theirs = [_name(ta @ tb), torch.is_autocast_enabled("cpu")]
        theirs.append(_name(ta @ tb))
    assert ours == theirs


@pytest.mark.parametrize("inside", [True, False])
def test_prelu_refuses_mixed_dtypes_like_torch(inside: bool) -> None:
    # Under autocast a float64 input met a weight cast to bfloat16, and prelu promoted them
    # to float64 where PyTorch's kernel raises; outside autocast it promoted any mixed pair.
    def run(m: Any) -> list:
        seen = []
        for given, weight in (("float64", "float32"), ("float32", "float64")):
            x = m.tensor(A, dtype=getattr(m, given))
            try:
                with m.autocast("cpu", enabled=inside):
                    out = m.nn.functional.prelu(x, m.tensor([0.25], dtype=getattr(m, weight)))
                seen.append(_name(out))
            except RuntimeError as exc:
                seen.append("Type promoting not supported" in str(exc))
        return seen

    with tw.device("torch:cpu"):
        ours = run(tw)
    assert ours == run(torch)
