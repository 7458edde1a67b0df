"""One ``torch.nn`` module sample from PyTorch's ``module_db``, run on torch and on ``tw.nn``.

PyTorch's module database gives, for each module class, sample constructor and forward
arguments (``ModuleInput``) and samples that must raise (``ErrorModuleInput``). :func:`check`
builds the torch module and its ``tw.nn`` twin from the same arguments, copies the torch
module's state into the twin, runs both forwards with the same seed, and compares outputs,
buffers after the forward, input and parameter gradients for the same random upstream
gradient. :func:`check_error` asks the twin to raise the exception class torch raises.

In float32 a tw result that differs from torch's by more than the tolerance is judged
against torch's float64 result of the same sample (see :func:`assert_float32_error_like_torch`):
two float32 computations may each be a few roundings from the exact answer in opposite
directions, so their difference alone does not say which, if either, is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import unittest
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from torch_databases import internal

ModuleErrorEnum = internal("common_modules").ModuleErrorEnum
module_db = internal("common_modules").module_db

#: Modules whose training forward draws random numbers: their values are not compared there
#: (the two frameworks' generators differ), only shapes and dtypes.
RANDOM_IN_TRAINING = {
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "RReLU",
}
#: Modules whose samples may set ``dropout=``: random in training only when it is non-zero.
DROPOUT_ARGUMENT = {
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "RNN",
    "LSTM",
    "GRU",
}
#: ``(tolerance relative to the largest reference magnitude)`` per dtype.
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}
#: On a float32 mismatch, how many times torch's own float32 error (against torch's float64
#: result of the same sample) tw's float32 error may be: see
#: :func:`assert_float32_error_like_torch`.
FLOAT32_ERROR_FACTOR = 4.0


@dataclasses.dataclass(frozen=True)
class Case:
    """One sample: a ModuleInfo's name, its training flag, the sample's index and dtype."""

    name: str
    training: bool
    index: int
    dtype: torch.dtype

    @property
    def id(self) -> str:
        mode = "train" if self.training else "eval"
        return f"{self.name}-{mode}-{self.index}-{str(self.dtype).split('.')[-1]}"


@functools.cache
def infos() -> dict[str, Any]:
    """Every ModuleInfo whose class ``tw.nn`` has, by its name (``nn.Linear``)."""
    return {mi.name: mi for mi in module_db if hasattr(tw.nn, mi.module_cls.__name__)}


@functools.cache
def samples(name: str, training: bool, dtype: torch.dtype) -> list[Any]:
    """The ModuleInputs of ``name`` (made once: :func:`fresh` copies one for each run), their
    random values seeded by the name, mode and dtype (torch's own initial seed differs from
    one process to the next, and the values would otherwise depend on what was made first)."""
    mi = infos()[name]
    with torch.random.fork_rng():
        torch.manual_seed(zlib.crc32(f"{name}-{training}-{dtype}".encode()))
        return mi.module_inputs_func(
            mi, device="cpu", dtype=dtype, requires_grad=True, training=training
        )


def fresh(value: Any, memo: dict[int, torch.Tensor], widen: bool = False) -> Any:
    """``value`` with each tensor a new leaf of the same values and ``requires_grad`` (one
    tensor passed twice stays one tensor), so that no run sees another's gradients; with
    ``widen``, each float32 tensor becomes float64 (the same values, exactly)."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            copy = value.detach().clone()
            if widen and copy.dtype == torch.float32:
                copy = copy.to(torch.float64)
            memo[id(value)] = copy.requires_grad_(value.requires_grad)
        return memo[id(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(fresh(v, memo, widen) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(fresh(v, memo, widen) for v in value)
    if isinstance(value, dict):
        return {k: fresh(v, memo, widen) for k, v in value.items()}
    return value


def sample_arguments(case: Case) -> tuple[tuple, dict, tuple, dict]:
    """Fresh constructor args and kwargs, forward args and kwargs of ``case``'s sample."""
    sample = samples(case.name, case.training, case.dtype)[case.index]
    memo: dict[int, torch.Tensor] = {}
    ctor, fwd = sample.constructor_input, sample.forward_input
    return tuple(fresh((ctor.args, ctor.kwargs, fwd.args, fwd.kwargs), memo))


def error_samples(name: str, dtype: torch.dtype) -> list[Any]:
    """The ErrorModuleInputs of ``name`` on the CPU (none when it has no error samples)."""
    mi = infos()[name]
    if mi.module_error_inputs_func is None:
        return []
    return mi.module_error_inputs_func(
        mi, device="cpu", dtype=dtype, requires_grad=True, training=True
    )


def cases(dtype: torch.dtype) -> list[Case]:
    """Every (ModuleInfo, training, sample) of the database that ``tw.nn`` covers."""
    return [
        Case(name, training, i, dtype)
        for name in infos()
        for training in (True, False)
        for i in range(len(samples(name, training, dtype)))
    ]


def skipped_by_torch(name: str, test_name: str, dtype: torch.dtype) -> bool:
    """Whether PyTorch's own ``TestModule.<test_name>`` skips or expects failure for this
    module on the CPU in ``dtype`` (its ModuleInfo's decorators say so)."""
    for info in infos()[name].decorators:
        if info.test_name != test_name or info.cls_name not in (None, "TestModule"):
            continue
        if info.device_type not in (None, "cpu") or not info.active_if:
            continue
        if info.dtypes is not None and dtype not in info.dtypes:
            continue
        for decorator in info.decorators:
            label = getattr(decorator, "__qualname__", "")
            if decorator is unittest.expectedFailure or label.startswith("skip"):
                return True
    return False


# --- converting torch values to tw values ---------------------------------------------------


def tw_dtype(dtype: torch.dtype) -> tw.dtype:
    """The tw dtype of the same name."""
    return getattr(tw, str(dtype).split(".")[-1])


class Converter:
    """Turns torch arguments into tw arguments, remembering each torch leaf's twin."""

    def __init__(self) -> None:
        self.leaves: list[tuple[torch.Tensor, tw.Tensor]] = []
        self.twins: dict[int, tw.Tensor] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) and id(value) in self.twins:
            return self.twins[id(value)]  # one tensor passed twice: one twin, as in torch
        if isinstance(value, torch.Tensor):
            twin = self.twins[id(value)] = tw.tensor(
                value.detach().numpy(),
                dtype=tw_dtype(value.dtype),
                requires_grad=value.requires_grad,
            )
            if value.requires_grad:
                self.leaves.append((value, twin))
            return twin
        if isinstance(value, torch.dtype):
            return tw_dtype(value)
        if isinstance(value, torch.nn.Module):
            return self.module(value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*map(self, value))
        if isinstance(value, (list, tuple)):
            return type(value)(map(self, value))
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if callable(value) and getattr(value, "__module__", "").startswith("torch"):
            return getattr(tw.nn.functional, value.__name__)
        return value

    def module(self, module: torch.nn.Module) -> Any:
        """The twin of a module argument (a layer a TransformerEncoder repeats, a final norm),
        rebuilt from its attributes; the outer module's state dict copies its weights."""
        name = type(module).__name__
        if name == "LayerNorm":
            return tw.nn.LayerNorm(
                module.normalized_shape,
                eps=module.eps,
                elementwise_affine=module.elementwise_affine,
                bias=module.bias is not None,
            )
        if name in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
            return getattr(tw.nn, name)(
                module.self_attn.embed_dim,
                module.self_attn.num_heads,
                dim_feedforward=module.linear1.out_features,
                dropout=module.dropout.p,
                activation=self(module.activation),
                layer_norm_eps=module.norm1.eps,
                batch_first=module.self_attn.batch_first,
                norm_first=module.norm_first,
                bias=module.linear1.bias is not None,
            )
        raise Unsupported(f"a module argument ({name})")


class Unsupported(Exception):
    """A sample argument this harness cannot translate (the sample is skipped)."""


# --- comparing ----------------------------------------------------------------------------


def as_numpy(value: tw.Tensor) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value.detach() if isinstance(value, tw.Tensor) else value)


def assert_close(
    where: str,
    expected: torch.Tensor,
    actual: Any,
    values: bool = True,
    reference: Reference | None = None,
) -> None:
    """``actual`` (tw) has ``expected``'s (torch) shape, dtype and, when ``values``, values.

    A float32 mismatch is judged against ``reference(where)``, torch's float64 result of the
    same sample, when a ``reference`` is given: :func:`assert_float32_error_like_torch`."""
    assert isinstance(actual, tw.Tensor), f"{where}: torch gives a Tensor, tw gives {actual!r}"
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{where}: shape {tuple(actual.shape)} != torch's {tuple(expected.shape)}"
    )
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (
        f"{where}: dtype {actual.dtype} != torch's {expected.dtype}"
    )
    if not values:
        return
    want = expected.detach().numpy(force=True)  # force: a ZeroTensor (an L1 loss gradgrad)
    got = np.asarray(actual.detach().cpu().numpy())
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    tol = TOLERANCE.get(expected.dtype, 1e-3)
    finite = want[np.isfinite(want)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    try:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=where)
    except AssertionError as mismatch:
        if expected.dtype != torch.float32 or reference is None:
            raise
        try:
            exact = reference(where)
        except Exception as error:  # noqa: BLE001 - the mismatch stands, with the reason
            raise AssertionError(f"{mismatch}\n(no float64 reference: {error!r})") from error
        if exact is None or exact.shape != want.shape:
            raise AssertionError(f"{mismatch}\n(no float64 reference for {where})") from None
        assert_float32_error_like_torch(where, want, got, exact, mismatch)


def assert_float32_error_like_torch(
    where: str, want: np.ndarray, got: np.ndarray, exact: np.ndarray, mismatch: AssertionError
) -> None:
    """tw's float32 ``got`` is as close to torch's float64 ``exact`` as torch's float32
    ``want`` is, within :data:`FLOAT32_ERROR_FACTOR`.

    The criterion, over the entries where ``exact`` is finite (at the others ``got`` must equal
    ``want``, NaN for NaN, and ``want`` and ``got`` must be finite where ``exact`` is)::

        error(x) = max |x - exact| / max |exact|     (divided by 1 where max |exact| is 0)
        error(got) <= FLOAT32_ERROR_FACTOR * max(error(want), eps32)

    with eps32 = 2**-23, float32's machine epsilon (one rounding of the largest value: a floor
    for when torch's float32 happens to round to the float64 answer). Why 4: this judges
    tw's float32 accuracy, asked only once tw and torch differ by more than the tolerance, so
    at least one of them is off by half of it; a computation of the same formula in another
    order of sums and products (numpy's pairwise sums against torch's blocked, vectorised
    ones; BLAS blocking) has a worst-case rounding bound larger by a small factor (2 to 3
    for a pairwise against a blocked sum of module_db's lengths), and 4 allows that, while an
    error in the formula, or a formulation that loses accuracy (a cancellation torch avoids),
    is off by more and fails, with both errors in the message.
    """
    finite = np.isfinite(exact)
    np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=f"{where} (non-finite)")
    if not (np.isfinite(want[finite]).all() and np.isfinite(got[finite]).all()):
        raise mismatch
    if not finite.any():
        return
    largest = float(np.abs(exact[finite]).max()) or 1.0
    exact64 = exact[finite].astype(np.float64)
    torch_error = float(np.abs(want[finite] - exact64).max()) / largest
    tw_error = float(np.abs(got[finite] - exact64).max()) / largest
    eps32 = float(np.finfo(np.float32).eps)
    if tw_error > FLOAT32_ERROR_FACTOR * max(torch_error, eps32):
        raise AssertionError(
            f"{where}: against torch's float64 result of the same sample (relative to its "
            f"largest magnitude {largest:.3g}), tw's float32 is off by {tw_error:.3g}, more "
            f"than {FLOAT32_ERROR_FACTOR:g} times torch's own float32 error {torch_error:.3g}"
            f"\n{mismatch}"
        )


class Reference:
    """torch's float64 results of a float32 case's sample, by :func:`assert_close`'s labels,
    computed on first use by ``compute(case)`` (only a float32 mismatch asks for them)."""

    def __init__(self, case: Case, compute: Any) -> None:
        self.case, self.compute = case, compute
        self.results: dict[str, Any] | None = None

    def __call__(self, where: str) -> np.ndarray | None:
        if self.results is None:
            self.results = self.compute(self.case)
        value = self.results.get(where)
        return None if value is None else value.detach().numpy(force=True)


def labelled(where: str, value: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors of a nested output with :func:`assert_same`'s labels."""
    if isinstance(value, torch.Tensor):
        yield where, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from labelled(f"{where}[{i}]", item)
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from labelled(f"{where}[{k!r}]", item)


def assert_same(
    where: str, expected: Any, actual: Any, values: bool, reference: Reference | None = None
) -> None:
    """Nested outputs agree: tensors by :func:`assert_close`, containers item by item."""
    if isinstance(expected, torch.Tensor):
        assert_close(where, expected, actual, values, reference)
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), (
            f"{where}: torch gives {type(expected).__name__} of {len(expected)}, tw {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(f"{where}[{i}]", e, a, values, reference)
    elif isinstance(expected, dict):
        assert set(actual) == set(expected), f"{where}: keys {set(actual)} != {set(expected)}"
        for k in expected:
            assert_same(f"{where}[{k!r}]", expected[k], actual[k], values, reference)
    else:
        assert actual == expected, f"{where}: {actual!r} != torch's {expected!r}"


def tensors(value: Any) -> Iterator[Any]:
    """The tensors in a nested output, in order."""
    if isinstance(value, (torch.Tensor, tw.Tensor)):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)


def is_random(name: str, training: bool, args: tuple, kwargs: dict) -> bool:
    """Whether this sample's forward draws random numbers (values are then not compared)."""
    cls = name.split(".")[-1]
    if cls.startswith("FractionalMaxPool"):  # in both modes, unless the samples are given
        return kwargs.get("_random_samples") is None
    if not training or cls not in RANDOM_IN_TRAINING | DROPOUT_ARGUMENT:
        return False
    if cls in RANDOM_IN_TRAINING:
        return True
    if cls == "TransformerEncoder":
        return bool(kwargs.get("encoder_layer", args[0] if args else None).dropout.p)
    if cls == "MultiheadAttention" and len(args) > 2:
        return bool(args[2])
    default = 0.1 if cls.startswith("Transformer") else 0.0
    return bool(kwargs.get("dropout", default))


# --- the checks -----------------------------------------------------------------------------


def build_torch(case: Case, args: tuple, kwargs: dict) -> torch.nn.Module:
    """The torch module of ``case``, built from ``args`` and ``kwargs``, seeded."""
    torch.manual_seed(0)
    module = infos()[case.name].module_cls(*args, **kwargs).to(case.dtype)
    module.train(case.training)
    return module


def build(case: Case, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """The torch module and its twin, both built from ``args`` and ``kwargs``."""
    cls = infos()[case.name].module_cls
    convert = Converter()
    tw_args, tw_kwargs = convert(args), convert(kwargs)
    module = build_torch(case, args, kwargs)
    twin = getattr(tw.nn, cls.__name__)(*tw_args, **tw_kwargs).to(tw_dtype(case.dtype))
    twin.train(case.training)
    return module, twin


def copy_state(module: torch.nn.Module, twin: Any) -> None:
    """Load ``module``'s parameters and buffers into ``twin``."""
    state = {k: Converter()(v.detach()) for k, v in module.state_dict().items()}
    twin.load_state_dict(state)


def forward(module: Any, args: tuple, kwargs: dict, seed: int = 0) -> Any:
    (tw if not isinstance(module, torch.nn.Module) else torch).manual_seed(seed)
    return module(*args, **kwargs)


def prepare(case: Case) -> tuple:
    """The module, its twin with the module's state, the forward arguments of each, the
    converter that paired their leaves, and whether the forward is random."""
    ctor_args, ctor_kwargs, args, kwargs = sample_arguments(case)
    module, twin = build(case, ctor_args, ctor_kwargs)
    convert = Converter()
    tw_args, tw_kwargs = convert(args), convert(kwargs)
    if infos()[case.name].is_lazy:  # a first forward gives the parameters their shapes
        with torch.no_grad():
            forward(module, args, kwargs)
        with tw.no_grad():
            forward(twin, tw_args, tw_kwargs)
    copy_state(module, twin)
    random = is_random(case.name, case.training, ctor_args, ctor_kwargs)
    return module, twin, args, kwargs, tw_args, tw_kwargs, convert, random


def widened(case: Case) -> tuple[torch.nn.Module, tuple, dict, list[torch.Tensor]]:
    """The torch module and forward arguments of float32 ``case``'s sample in float64, with
    the float32 values (the module built, and lazily shaped, in float32 as :func:`prepare`
    does, then widened), and the forward arguments' leaves in :class:`Converter`'s order."""
    ctor_args, ctor_kwargs, args, kwargs = sample_arguments(case)
    module = build_torch(case, ctor_args, ctor_kwargs)
    if infos()[case.name].is_lazy:
        with torch.no_grad():
            forward(module, args, kwargs)
    module.to(torch.float64)
    args, kwargs = fresh((args, kwargs), {}, widen=True)
    convert = Converter()
    convert(args), convert(kwargs)
    return module, args, kwargs, [leaf for leaf, _ in convert.leaves]


def upstream(draw: np.ndarray, dtype: torch.dtype, rounding: torch.dtype | None) -> torch.Tensor:
    """``draw`` as a torch tensor of ``dtype``, first rounded to ``rounding`` (the float32
    upstream gradient a float64 reference is given) when one is named."""
    return torch.from_numpy(draw).to(rounding or dtype).to(dtype)


def torch_gradgrad(
    expected: Any, wrt: list[torch.Tensor], rounding: torch.dtype | None = None
) -> tuple[list, list, Any]:
    """torch's side of :func:`check_gradgrad`: the upstream draws ``(output index, array)``,
    the vectors ``(first-order gradient index, array)`` and the second-order gradients
    (None where there are none to take)."""
    rng = np.random.default_rng(1)
    outs = list(tensors(expected))
    ups = [(j, rng.standard_normal(tuple(e.shape))) for j, e in enumerate(outs) if e.requires_grad]
    if not ups:
        return ups, [], None
    loss = sum((outs[j] * upstream(u, outs[j].dtype, rounding)).sum() for j, u in ups)
    firsts = torch.autograd.grad(loss, wrt, create_graph=True, allow_unused=True)
    vs = [
        (i, rng.standard_normal(tuple(g.shape)))
        for i, g in enumerate(firsts)
        if g is not None and g.requires_grad
    ]
    if not vs:
        return ups, vs, None
    terms = sum((firsts[i] * upstream(v, firsts[i].dtype, rounding)).sum() for i, v in vs)
    return ups, vs, torch.autograd.grad(terms, wrt, allow_unused=True)


def gradgrad_reference(case: Case) -> dict[str, torch.Tensor | None]:
    """torch's float64 second-order gradients of float32 ``case``'s sample."""
    module, args, kwargs, leaves = widened(case)
    expected = forward(module, args, kwargs)
    wrt = leaves + [p for _, p in module.named_parameters()]
    _, _, seconds = torch_gradgrad(expected, wrt, rounding=case.dtype)
    return {f"gradgrad {i}": g for i, g in enumerate(seconds or ())}


def check_gradgrad(case: Case) -> None:
    """Second-order gradients agree: the gradient of ``sum(v * dL/dw)`` over the inputs and
    parameters w, for first-order gradients taken with ``create_graph``."""
    module, twin, args, kwargs, tw_args, tw_kwargs, convert, random = prepare(case)
    if random:
        pytest.skip("a random forward: no values to compare")
    try:
        expected = forward(module, args, kwargs)
    except Exception:  # noqa: BLE001 - check() compares the refusal
        pytest.skip("torch refuses the sample")
    actual = forward(twin, tw_args, tw_kwargs)
    named = [(k, p, dict(twin.named_parameters())[k]) for k, p in module.named_parameters()]
    torch_wrt = [leaf for leaf, _ in convert.leaves] + [p for _, p, _ in named]
    tw_wrt = [twin_leaf for _, twin_leaf in convert.leaves] + [q for _, _, q in named]
    ups, vs, seconds = torch_gradgrad(expected, torch_wrt)
    if not ups:
        pytest.skip("no differentiable output")
    outs = list(tensors(actual))
    tw_loss = sum((outs[j] * tw.tensor(u, dtype=outs[j].dtype)).sum() for j, u in ups)
    tw_firsts = tw.autograd.grad(tw_loss, tw_wrt, create_graph=True, allow_unused=True)
    tw_terms = []
    for i, v in vs:
        h = tw_firsts[i]
        assert h is not None, "tw gives no first-order gradient where torch gives one"
        if h.requires_grad:  # torch may record a graph whose derivative is zero (padding)
            tw_terms.append((h * tw.tensor(v, dtype=h.dtype)).sum())
    if not vs:
        pytest.skip("the first-order gradients are constant")
    tw_seconds = (
        tw.autograd.grad(sum(tw_terms), tw_wrt, allow_unused=True)
        if tw_terms
        else [None] * len(tw_wrt)
    )
    reference = Reference(case, gradgrad_reference)
    for i, (g, h) in enumerate(zip(seconds, tw_seconds)):
        if g is None or h is None:  # no gradient and a zero one are the same answer
            other = h if g is None else g
            assert other is None or not bool((other != 0).any()), f"gradgrad {i}: {g} != {h}"
            continue
        assert_close(f"gradgrad {i}", g, h, reference=reference)


def check(case: Case) -> None:
    """Forward values, buffers after the forward, and gradients agree with torch."""
    module, twin, args, kwargs, tw_args, tw_kwargs, convert, random = prepare(case)
    try:
        expected = forward(module, args, kwargs)
    except Exception as error:  # torch refuses the sample: the twin must refuse it too
        with pytest.raises(type(error)):
            forward(twin, tw_args, tw_kwargs)
        return
    actual = forward(twin, tw_args, tw_kwargs)
    reference = Reference(case, first_order_reference)
    assert_same("output", expected, actual, values=not random, reference=reference)
    twin_state = twin.state_dict()
    for key, value in module.state_dict().items():
        assert_close(f"state {key}", value, twin_state[key], not random, reference)
    if random:
        return
    backward_and_compare(module, twin, expected, actual, convert, reference)


def upstreams(expected: Any, rounding: torch.dtype | None = None) -> list[tuple]:
    """The upstream gradients of :func:`backward_and_compare`: ``(output index, draw, torch
    tensor)`` for each floating output that requires grad."""
    rng = np.random.default_rng(1)
    return [
        (j, draw, upstream(draw, e.dtype, rounding))
        for j, e in enumerate(tensors(expected))
        if e.requires_grad and e.dtype.is_floating_point
        for draw in [rng.standard_normal(tuple(e.shape))]
    ]


def first_order_reference(case: Case) -> dict[str, torch.Tensor | None]:
    """torch's float64 outputs, buffers and gradients of float32 ``case``'s sample."""
    module, args, kwargs, leaves = widened(case)
    expected = forward(module, args, kwargs)
    results: dict[str, torch.Tensor | None] = dict(labelled("output", expected))
    results.update((f"state {k}", v) for k, v in module.state_dict().items())
    outs = list(tensors(expected))
    terms = [(outs[j] * up).sum() for j, _, up in upstreams(expected, rounding=case.dtype)]
    if terms:
        sum(terms).backward()
    results.update((f"input {i} grad", leaf.grad) for i, leaf in enumerate(leaves))
    results.update((f"parameter {k} grad", p.grad) for k, p in module.named_parameters())
    return results


def backward_and_compare(
    module: torch.nn.Module,
    twin: Any,
    expected: Any,
    actual: Any,
    convert: Converter,
    reference: Reference | None = None,
) -> None:
    """Backpropagate the same random upstream gradient; input and parameter grads agree."""
    drawn = upstreams(expected)
    if not drawn:
        return
    outs, tw_outs = list(tensors(expected)), list(tensors(actual))
    sum((outs[j] * up).sum() for j, _, up in drawn).backward()
    sum(
        (tw_outs[j] * tw.tensor(draw, dtype=tw_outs[j].dtype)).sum() for j, draw, _ in drawn
    ).backward()
    for i, (leaf, twin_leaf) in enumerate(convert.leaves):
        if leaf.grad is None:
            assert twin_leaf.grad is None or not np.any(as_numpy(twin_leaf.grad)), (
                f"input {i}: torch gives no gradient, tw gives {twin_leaf.grad}"
            )
            continue
        assert twin_leaf.grad is not None, f"input {i}: tw gives no gradient"
        assert_close(f"input {i} grad", leaf.grad, twin_leaf.grad, reference=reference)
    twin_params = dict(twin.named_parameters())
    for key, param in module.named_parameters():
        if param.grad is None:
            continue
        assert twin_params[key].grad is not None, f"parameter {key}: tw gives no gradient"
        assert_close(
            f"parameter {key} grad", param.grad, twin_params[key].grad, reference=reference
        )


def check_error(name: str, index: int, dtype: torch.dtype) -> None:
    """The twin raises the exception class torch raises for an error sample."""
    error_input = error_samples(name, dtype)[index]
    sample = error_input.module_error_input
    cls = infos()[name].module_cls
    convert = Converter()
    tw_cls = getattr(tw.nn, cls.__name__)
    ctor_args = convert(sample.constructor_input.args)
    ctor_kwargs = convert(sample.constructor_input.kwargs)
    if error_input.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
        with pytest.raises(error_input.error_type):
            tw_cls(*ctor_args, **ctor_kwargs)
        return
    twin = tw_cls(*ctor_args, **ctor_kwargs)  # as PyTorch's test_errors: no .to(dtype)
    fwd_args = convert(sample.forward_input.args)
    fwd_kwargs = convert(sample.forward_input.kwargs)
    with pytest.raises(error_input.error_type):
        twin(*fwd_args, **fwd_kwargs)
