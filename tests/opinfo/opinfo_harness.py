"""PyTorch's own op database as a differential test of tensorweaver.

``torch.testing._internal.common_methods_invocations.op_db`` holds one ``OpInfo`` per public
op (about 700): the function, its method and in-place variants, the dtypes it supports on
the CPU, sample inputs (broadcasting, 0-d and empty tensors, odd shapes, keyword arguments)
and error inputs (the exception class and message torch raises). This module runs a sample
on both sides and says how tensorweaver differs:

- the same sample, converted tensor for tensor (each a fresh leaf with the same values and
  ``requires_grad``), goes to torch's function and to the tensorweaver callable of the same
  dotted name (``tw.linalg.solve`` for ``linalg.solve``, a Tensor method where the op is one);
  an OpInfo whose op is a wrapper written in the test module (a lambda calling methods) is
  called with the tensorweaver arguments as it is;
- outputs are compared by dtype, shape and value (float tolerances by dtype); a random op
  (one whose torch output changes with the seed) is compared by dtype and shape only;
- gradients: the outputs torch differentiates are weighted by the same seeded random
  tensor on both sides and summed; every input's gradient must agree (None counts as zeros);
- error inputs: tensorweaver must raise the exception class torch raises (or a subclass).

A difference is an :class:`Outcome` with a kind (``missing``, ``raises``, ``dtype``,
``shape``, ``value``, ``grad``, ``error-type``, ...) and a one-line detail; ``None`` means the
two agree. :mod:`tests.opinfo.triage` runs every op and writes the table; the suite
(``test_opinfo_sweep.py``) runs a share of it.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import tensorweaver as tw
import torch
from torch_databases import internal

#: Float tolerances (rtol, atol) by dtype name: different summation orders and algorithms
#: (LAPACK through NumPy or torch) agree to about these.
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "complex64": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}


@cache
def op_db() -> list:
    """torch's op database (see :mod:`torch_databases`)."""
    return list(internal("common_methods_invocations").op_db)


def op_id(op: Any) -> str:
    """``name`` or ``name.variant`` (variant_test_name), unique in the database."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@cache
def ops_by_id() -> dict[str, Any]:
    return {op_id(op): op for op in op_db()}


#: torch dtypes that tensorweaver has, by name.
DTYPES = {
    getattr(torch, name): getattr(tw, name)
    for name in (
        "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex64 complex128"
    ).split()
    if hasattr(tw, name)
}


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


class Unconvertible(Exception):
    """A sample holds something with no tensorweaver counterpart (a generator, a layout)."""


def tw_callable(op: Any, variant: str) -> Callable | None:
    """The tensorweaver callable for ``op``'s ``variant`` (function/method/inplace), or None."""
    if variant == "function":
        function = op.op
        module = getattr(function, "__module__", None) or ""
        qualname = getattr(function, "__qualname__", "")
        if qualname.startswith(("TensorBase.", "Tensor.")):
            return method_of(qualname.rpartition(".")[2])
        written_here = (
            getattr(function, "__name__", "") == "<lambda>"
            or not module.startswith("torch")
            or module.startswith("torch.testing")
        )
        target: Any = tw
        for part in op.name.split("."):
            target = getattr(target, part, None)
            if target is None:
                break
        by_name = target if callable(target) and not isinstance(target, type) else None
        if not written_here:
            return by_name or method_of(op.name)
        fallback = by_name or method_of(op.name)
        # (none: a wrapper over a method of another name, Tensor.cauchy_, or a torch.ops one)
        return wrapper_or(function, fallback or function)
    else:
        torch_variant = op.method_variant if variant == "method" else op.inplace_variant
        if torch_variant is None:
            return None
        name = getattr(torch_variant, "__name__", None)
        if name is None or name == "<lambda>":
            short = op.name.rpartition(".")[2] + ("_" if variant == "inplace" else "")
            fallback = method_of(short)
            return wrapper_or(torch_variant, fallback or torch_variant)
    return method_of(name)


class TorchAsTw:
    """``torch`` for a database wrapper's globals: ``torch.where`` is ``tw.where``."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self._target, name)
        except AttributeError as error:
            raise NotInTw(str(error)) from None
        return TorchAsTw(value) if isinstance(value, types.ModuleType) else value


class NotInTw(AttributeError):
    """A database wrapper reads a torch name that tensorweaver does not have."""


def rebound(function: Callable) -> Callable:
    """``function`` (a wrapper written in the database) reading ``torch`` as tensorweaver."""
    if isinstance(function, functools.partial):  # of a torch function: of tw's of its name
        twin = tw_named(function.func)
        if twin is None:
            return function
        return functools.partial(twin, *function.args, **function.keywords)
    code = getattr(function, "__code__", None)
    if code is None:  # a builtin: nothing to rebind
        return function
    namespace = dict(function.__globals__)
    namespace["torch"] = TorchAsTw(tw)
    copy = types.FunctionType(
        code, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def tw_named(function: Callable) -> Callable | None:
    """tensorweaver's function of a torch function's module and name (``tw.nn.functional.mish``
    for ``torch.nn.functional.mish``), or None."""
    module = getattr(function, "__module__", None) or ""
    if module != "torch" and not module.startswith("torch."):
        return None
    target: Any = tw
    for part in [*module.split(".")[1:], getattr(function, "__name__", "")]:
        target = getattr(target, part, None)
        if target is None:
            return None
    return target if callable(target) else None


def wrapper_or(wrapper: Callable, fallback: Callable) -> Callable:
    """The database's wrapper (it may reorder arguments or pick outputs) with tw arguments;
    where it calls a torch function with them, or reads a torch name tw lacks, ``fallback``
    instead (tw's callable of the op's name; the wrapper itself where tw has none, so that
    torch's refusal of tw tensors says the harness could not map the op)."""

    rebound_wrapper = rebound(wrapper)

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return rebound_wrapper(*args, **kwargs)
        except NotInTw:
            pass
        except TypeError as error:
            if not calls_torch(error):
                raise
        return fallback(*args, **kwargs)

    return call


def method_of(name: str) -> Callable | None:
    """Tensor method ``name`` as a function of the tensor, or None where tw has none. Given
    something else than a tensor first, it raises as torch's unbound ``TensorBase`` method
    does (the reflected operators' error inputs: ``TensorBase.__radd__(2, 3)``)."""
    if getattr(tw.Tensor, name, None) is None:
        return None

    def call(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(tensor, tw.Tensor):
            raise TypeError(
                f"descriptor '{name}' for 'Tensor' objects doesn't apply to a "
                f"'{type(tensor).__name__}' object"
            )
        return getattr(tensor, name)(*args, **kwargs)

    return call


# --- converting a sample -------------------------------------------------------------------


class Pair:
    """One sample as fresh torch leaves and their tensorweaver twins (aliases kept). With
    ``views``, a tensor that is a view of a contiguous base (an ``expand()`` of one element,
    a slice of a tensor another argument also views) becomes the same view of its base's
    twin, so that memory shared between arguments stays shared (an error input's ``out=``
    overlapping an input)."""

    def __init__(self, views: bool = False) -> None:
        self.views = views
        self.torch_leaves: dict[int, torch.Tensor] = {}
        self.tw_leaves: dict[int, tw.Tensor] = {}
        self.order: list[int] = []

    def convert_sample(self, sample: Any) -> tuple[tuple, tuple]:
        """(torch's, tensorweaver's) ``(input, args, kwargs)`` of one database sample."""
        t_input, w_input = self.convert(sample.input)
        t_args, w_args = self.convert(tuple(sample.args))
        t_kwargs, w_kwargs = self.convert(dict(sample.kwargs))
        return (t_input, t_args, t_kwargs), (w_input, w_args, w_kwargs)

    def convert(self, value: Any) -> tuple[Any, Any]:
        """(torch value, tensorweaver value) for one argument, recursively."""
        if isinstance(value, torch.Tensor):
            key = id(value)
            if key not in self.torch_leaves:
                check_convertible(value)
                if self.views and self._shares_memory(value):
                    return self._view(value)
                leaf = value.detach().clone().requires_grad_(value.requires_grad)
                host = leaf.detach()
                if host.dtype == torch.bfloat16:
                    host = host.float()
                twin = tw.tensor(
                    host.numpy(), dtype=DTYPES[value.dtype], requires_grad=value.requires_grad
                )
                self.torch_leaves[key] = leaf
                self.tw_leaves[key] = twin
                self.order.append(key)
            return self.torch_leaves[key], self.tw_leaves[key]
        if isinstance(value, torch.dtype):
            if value not in DTYPES:
                raise Unconvertible(f"dtype {value}")
            return value, DTYPES[value]
        if isinstance(value, torch.device):
            return value, tw.device("cpu") if value.type == "cpu" else value
        if isinstance(value, torch.Size):
            return value, tuple(value)
        if isinstance(value, torch.memory_format):
            name = str(value).removeprefix("torch.")
            if not hasattr(tw, name):
                raise Unconvertible(f"memory format {value}")
            return value, getattr(tw, name)
        if isinstance(value, (torch.Generator, torch.layout)):
            raise Unconvertible(type(value).__name__)
        if isinstance(value, (list, tuple)):
            pairs = [self.convert(item) for item in value]
            kind = list if isinstance(value, list) else tuple
            if hasattr(value, "_fields"):  # a namedtuple
                return value, type(value)(*(p[1] for p in pairs))
            return kind(p[0] for p in pairs), kind(p[1] for p in pairs)
        if isinstance(value, dict):
            pairs = {k: self.convert(v) for k, v in value.items()}
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        if callable(value) and getattr(value, "__module__", "").startswith("torch"):
            raise Unconvertible(f"callable {value!r}")
        return value, value

    @staticmethod
    def _shares_memory(value: torch.Tensor) -> bool:
        base = value._base
        return base is not None and not value.requires_grad and base.is_contiguous()

    def _view(self, value: torch.Tensor) -> tuple[torch.Tensor, tw.Tensor]:
        """``value``, a view of a contiguous base, as the same view of the base's twins:
        tensorweaver's by slicing and ``expand`` where they make it (its overlap checks know
        those views), else by ``as_strided``."""
        base = value._base
        t_base, w_base = self.convert(base)
        offset = value.storage_offset() - base.storage_offset()
        size, stride = tuple(value.shape), value.stride()
        leaf = t_base.as_strided(size, stride, t_base.storage_offset() + offset)
        kept = tuple(1 if step == 0 else n for n, step in zip(size, stride))  # before expand
        slices = _slices(tuple(base.shape), base.stride(), kept, stride, offset)
        if slices is None:
            twin = w_base.as_strided(size, stride, offset)
        else:
            twin = w_base[slices].expand(size)
        key = id(value)
        self.torch_leaves[key], self.tw_leaves[key] = leaf, twin
        self.order.append(key)
        return leaf, twin


def check_convertible(value: torch.Tensor) -> None:
    """Raise :class:`Unconvertible` for a torch tensor tensorweaver has no twin of."""
    if value.layout != torch.strided or value.is_quantized:
        raise Unconvertible(f"layout {value.layout}")
    if value.dtype not in DTYPES:
        raise Unconvertible(f"dtype {value.dtype}")
    if value.device.type != "cpu":  # the meta device's tensors hold no values
        raise Unconvertible(f"device {value.device}")
    if value.ndim > 64:  # torch refuses most ops on them; NumPy cannot hold them
        raise Unconvertible(f"{value.ndim} dimensions")


def _slices(shape: tuple, strides: tuple, size: tuple, stride: tuple, offset: int) -> tuple | None:
    """The slices of a contiguous tensor of ``shape`` and ``strides`` that view ``size``
    elements ``stride`` apart from ``offset`` (None where no slicing does)."""
    if len(size) != len(shape):
        return None
    slices = []
    for n, full, inner, outer in zip(size, shape, strides, stride):
        start = offset // inner % full
        step = 1 if n == 1 else outer // inner
        if step < 1 or (n > 1 and outer % inner) or start + (n - 1) * step >= full:
            return None
        slices.append(slice(start, start + (n - 1) * step + 1, step))
    if sum(sl.start * inner for sl, inner in zip(slices, strides)) != offset:
        return None
    return tuple(slices)


# --- strided samples: the same values held by a non-contiguous view --------------------------

#: How a sample's tensors are laid out in the strided sweep (each holds the sample's values,
#: except ``expanded``, which repeats one slice): ``noncontiguous`` as torch's own test_ops
#: (``SampleInput.noncontiguous``: every other element of a trailing axis of two), ``transposed``
#: (``.mT`` of a contiguous copy with the last two axes swapped), ``expanded`` (a stride-0
#: ``expand`` of the first slice along the first axis longer than one) and ``stepped`` (every
#: other row of a tensor twice as long along the first axis).
LAYOUTS = ("noncontiguous", "transposed", "expanded", "stepped")


def filler(dtype: torch.dtype) -> Any:
    """What fills the elements a strided view skips (as torch's ``noncontiguous_like``): a value
    an op that read them would show."""
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    return True if dtype == torch.bool else 12


def strided_base(value: torch.Tensor, layout: str) -> tuple[torch.Tensor, Callable] | None:
    """(a contiguous base, the view of it that holds ``value``'s values in ``layout``), the
    view a function that takes either library's tensor; None where the layout does not
    apply (``transposed`` of fewer than two axes, ``expanded`` with no axis longer than one)."""
    values = value.detach()
    if layout == "noncontiguous":
        base = values.new_full((*values.shape, 2), filler(values.dtype))
        base[..., 1] = values
        return base, lambda b: b[..., 1]
    if layout == "transposed":
        if values.ndim < 2:
            return None
        return values.mT.clone(memory_format=torch.contiguous_format), lambda b: b.mT
    if layout == "expanded":
        axis = next((i for i, n in enumerate(values.shape) if n > 1), None)
        if axis is None:
            return None
        shape = tuple(values.shape)
        first = values.narrow(axis, 0, 1).clone(memory_format=torch.contiguous_format)
        return first, lambda b: b.expand(shape)
    if layout == "stepped":
        if values.ndim == 0:
            return None
        base = values.new_full((2 * values.shape[0], *values.shape[1:]), filler(values.dtype))
        base[::2] = values
        return base, lambda b: b[::2]
    raise ValueError(f"unknown layout {layout!r}; one of {LAYOUTS}")


class StridedPair(Pair):
    """A sample whose tensors are each the same strided view (``layout``) of a contiguous base,
    in torch and in tensorweaver (its own slicing, ``mT`` and ``expand`` of the base's twin);
    a view is the leaf that gradients are taken for. ``bases`` keeps both bases, so that what
    an op wrote through a view can be compared."""

    def __init__(self, layout: str, materialized: bool = False) -> None:
        super().__init__()
        self.layout = layout
        self.materialized = materialized
        self.bases: list[tuple[torch.Tensor, tw.Tensor, torch.Tensor]] = []

    def convert(self, value: Any) -> tuple[Any, Any]:
        if not isinstance(value, torch.Tensor) or id(value) in self.torch_leaves:
            return super().convert(value)
        check_convertible(value)
        made = strided_base(value, self.layout)
        if made is None:
            return super().convert(value)
        t_base, view = made
        dtype = DTYPES[value.dtype]
        if self.materialized:  # the same values, contiguous: plain leaves of them
            leaf = view(t_base).clone().requires_grad_(value.requires_grad)
            twin = tw.tensor(host(leaf), dtype=dtype, requires_grad=leaf.requires_grad)
        else:
            w_base = tw.tensor(host(t_base), dtype=dtype)
            leaf = view(t_base).requires_grad_(value.requires_grad)
            twin = view(w_base).requires_grad_(value.requires_grad)
            self.bases.append((t_base, w_base, footprint(t_base, view)))
        key = id(value)
        self.torch_leaves[key], self.tw_leaves[key] = leaf, twin
        self.order.append(key)
        return leaf, twin

    def written(self) -> list[torch.Tensor]:
        """torch's bases as the call left them (before a second call, which may write too)."""
        return [t_base.detach().clone() for t_base, _, _ in self.bases]

    def compare_bases(self, torch_bases: list[torch.Tensor], random: bool) -> Outcome | None:
        """How the bases differ after the call (an in-place op writes through its view); of
        a random op, only the elements its view does not reach (which no op may write)."""
        for position, (t_base, (_, w_base, reached)) in enumerate(zip(torch_bases, self.bases)):
            if random:
                t_base = t_base[~reached]
                w_base = tw.tensor(host(w_base)[~reached.numpy()], dtype=w_base.dtype)
            outcome = compare_outputs(t_base, w_base, f"base[{position}]")
            if outcome is not None:
                return Outcome("base", outcome.detail)
        return None


def footprint(base: torch.Tensor, view: Callable) -> torch.Tensor:
    """Which elements of ``base`` its ``view`` reaches (a boolean tensor of its shape)."""
    reached = torch.zeros(base.shape, dtype=torch.bool)
    if view(reached).stride().count(0):  # an expanded view reaches every element
        return reached.fill_(True)
    view(reached).fill_(True)
    return reached


#: torch's refusal to write in place into a tensor whose elements share memory (an expanded
#: one): tensorweaver must refuse it too, not write some of the values.
OVERLAP_REFUSAL = "more than one element of the written-to tensor refers to a single memory"


def flat_tensors(value: Any) -> list:
    """The tensors of an output, depth first (namedtuples and lists included)."""
    if isinstance(value, (torch.Tensor, tw.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flat_tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flat_tensors(item)]
    return []


def host(value: Any) -> np.ndarray:
    """A tensor's values as a NumPy array (bfloat16 widened to float32)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().resolve_conj().resolve_neg()
        if value._is_zerotensor():  # torch's symbolic zeros (a gradient it knows is 0)
            value = torch.zeros(value.shape, dtype=value.dtype)
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.numpy()
    value = value.detach().resolve_conj().resolve_neg()  # (ifft/ihfft's conjugate views)
    if value.dtype == tw.bfloat16:
        value = value.float()
    return np.asarray(value.cpu().numpy())


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.").removeprefix("tensorweaver.").removeprefix("tw.")


def compare_outputs(expected: Any, actual: Any, where: str) -> Outcome | None:
    """How ``actual`` (tensorweaver) differs from ``expected`` (torch), or None."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, tw.Tensor):
            return Outcome("type", f"{where}: {type(actual).__name__} for a tensor")
        if dtype_name(expected.dtype) != dtype_name(actual.dtype):
            return Outcome(
                "dtype", f"{where}: {dtype_name(actual.dtype)}, torch {dtype_name(expected.dtype)}"
            )
        if tuple(expected.shape) != tuple(actual.shape):
            return Outcome(
                "shape", f"{where}: {tuple(actual.shape)}, torch {tuple(expected.shape)}"
            )
        want, got = host(expected), host(actual)
        if want.dtype.kind in "fc":
            rtol, atol = TOLERANCES.get(dtype_name(expected.dtype), (1e-7, 1e-7))
            close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = got == want
        if not np.all(close):
            bad = np.argwhere(~np.asarray(close))[0] if np.ndim(close) else ()
            index = tuple(int(i) for i in bad)
            return Outcome(
                "value",
                f"{where}{list(index) if index else ''}: {got[index] if index else got}, "
                f"torch {want[index] if index else want} "
                f"({np.size(close) - np.count_nonzero(close)}/{np.size(close)} differ)",
            )
        return None
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (list, tuple)):
            return Outcome(
                "type", f"{where}: {type(actual).__name__}, torch {type(expected).__name__}"
            )
        if len(actual) != len(expected):
            return Outcome("shape", f"{where}: {len(actual)} items, torch {len(expected)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            outcome = compare_outputs(e, a, f"{where}[{i}]")
            if outcome is not None:
                return outcome
        return None
    if isinstance(expected, torch.dtype):
        return (
            None
            if dtype_name(expected) == dtype_name(actual)
            else Outcome("value", f"{where}: {actual}, torch {expected}")
        )
    if isinstance(expected, torch.Size):
        expected = tuple(expected)
        actual = tuple(actual) if isinstance(actual, (tuple, list)) else actual
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        if math.isclose(expected, actual, rel_tol=1e-7, abs_tol=1e-7) or (
            math.isnan(expected) and math.isnan(actual)
        ):
            return None
    if isinstance(actual, tw.Tensor) and not isinstance(expected, torch.Tensor):
        return Outcome("type", f"{where}: a tensor for {type(expected).__name__} {expected!r}")
    if expected != actual:
        return Outcome("value", f"{where}: {actual!r}, torch {expected!r}")
    return None


#: What torch says when a database wrapper hands it a tensorweaver tensor: not tw's fault.
TORCH_REFUSALS = (
    "must be Tensor, not Tensor",
    "descriptor '",
    "but got Tensor",
    "invalid combination of arguments",
    "torch.dtype, not DType",
    "expected Tensor but got <class 'tensorweaver",
)


def calls_torch(error: BaseException) -> bool:
    return isinstance(error, TypeError) and any(text in str(error) for text in TORCH_REFUSALS)


def lacks_name(error: BaseException) -> bool:
    """Whether ``error`` says a tensorweaver tensor or module lacks an attribute (the op,
    or a name the database's wrapper reads)."""
    if isinstance(error, NotInTw):
        return True
    if not isinstance(error, AttributeError):
        return False
    obj = getattr(error, "obj", None)
    return isinstance(obj, (tw.Tensor, TorchAsTw)) or (
        isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] == "tensorweaver"
    )


def refuses_tw(error: BaseException) -> bool:
    """Whether ``error`` is torch refusing a tensorweaver tensor (a torch function reached
    with one), not an error of the op: tensorweaver's own errors may read as torch's
    (``invalid combination of arguments``), and ``method_of`` refuses a number as torch's
    unbound method does."""
    if not calls_torch(error):
        return False
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    # (raised in C, the error's last frame is the Python code that called torch)
    where = "" if tb is None else tb.tb_frame.f_code.co_filename
    return not where.startswith(TW_DIR) and where != __file__


TW_DIR = str(Path(tw.__file__).parent)


def describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text[:160]}"


def weights_for(outputs: list, seed: int) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.rand(o.shape, generator=generator, dtype=torch.float64).to(o.dtype) + 0.5
        if o.dtype.is_floating_point or o.dtype.is_complex
        else None
        for o in outputs
    ]


def differentiable(outputs: list) -> list[int]:
    return [i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.requires_grad]


def run_sample(
    op: Any, variant: str, sample: Any, *, grads: bool, seed: int = 0, layout: str | None = None
) -> Outcome | None:
    """Compare one sample of ``op``'s ``variant`` on tensorweaver's current device; with a
    ``layout`` (one of :data:`LAYOUTS`), its tensors as strided views, and the views' bases
    compared after the call too. A strided sample that differs is run again with the same
    values contiguous: where that differs in the same way (kind), the difference is not the
    layout's and comes back as ``contiguous-too`` (ties of a repeated value, a singular
    matrix)."""
    if layout is None:
        return compare_call(op, variant, sample, Pair(), grads=grads, seed=seed)
    outcome = compare_call(op, variant, sample, StridedPair(layout), grads=grads, seed=seed)
    if outcome is None or outcome.kind in ("skip", "harness", "missing"):
        return outcome
    again = compare_call(
        op, variant, sample, StridedPair(layout, materialized=True), grads=grads, seed=seed
    )
    if again is not None and again.kind == outcome.kind:
        return Outcome("contiguous-too", str(outcome))
    return outcome


def compare_call(
    op: Any, variant: str, sample: Any, pair: Pair, *, grads: bool, seed: int
) -> Outcome | None:
    """Compare one sample of ``op``'s ``variant``, converted by ``pair``."""
    function = tw_callable(op, variant)
    if function is None:
        return Outcome("missing", f"{variant} {op.name}")
    torch_function = {
        "function": op.op,
        "method": op.method_variant,
        "inplace": op.inplace_variant,
    }[variant]
    try:
        (t_input, t_args, t_kwargs), (w_input, w_args, w_kwargs) = pair.convert_sample(sample)
    except Unconvertible as why:
        return Outcome("skip", f"unconvertible {why}")
    if variant == "inplace":
        # In place on a leaf that requires grad raises on both sides: compare values only.
        grads = False
        for key in pair.order:
            pair.torch_leaves[key].requires_grad_(False)
            leaf = pair.tw_leaves[key]
            leaf.requires_grad_(False)
    try:
        torch.manual_seed(seed)
        expected = torch_function(t_input, *t_args, **t_kwargs)
    except Exception as error:  # torch itself refuses this sample (a database edge)
        if OVERLAP_REFUSAL in str(error):
            return refused_overlap(function, w_input, w_args, w_kwargs, error)
        return Outcome("skip", f"torch raised {describe(error)}")
    try:
        tw.manual_seed(seed)
        actual = function(w_input, *w_args, **w_kwargs)
    except Unconvertible as why:
        return Outcome("skip", f"unconvertible {why}")
    except Exception as error:
        if OVERLAP_REFUSAL in str(error) and isinstance(pair, StridedPair):
            # torch writes into the overlapping memory unchecked (BLAS, its own loops): its
            # values depend on its loop order, so there is nothing to compare with
            return Outcome("skip", f"torch writes into overlapping memory: {describe(error)}")
        return Outcome("harness" if calls_torch(error) else "raises", describe(error))
    torch_bases = pair.written() if isinstance(pair, StridedPair) else []
    random = False
    if variant != "inplace":
        try:
            torch.manual_seed(seed + 1)
            random = not same_torch(expected, torch_function(t_input, *t_args, **t_kwargs))
        except Exception:  # noqa: BLE001 - a second call that fails says nothing about chance
            pass
    random = random or "empty" in op.name or seeds_itself(op)
    if isinstance(pair, StridedPair):
        outcome = pair.compare_bases(torch_bases, random)
        if outcome is not None:
            return outcome
    if random:
        outcome = compare_structure(expected, actual)
    else:
        outcome = compare_outputs(expected, actual, "out")
        if outcome is not None and outcome.kind == "value" and sample.output_process_fn_grad:
            # Outputs defined up to a sign or phase (eigenvectors, singular vectors): the
            # database's own processing makes them unique.
            try:
                processed = sample.output_process_fn_grad(actual)
            except Exception:  # noqa: BLE001 - the processing is torch-only
                processed = None
            if processed is not None:
                outcome = compare_outputs(sample.output_process_fn_grad(expected), processed, "out")
    if outcome is not None or not grads or random:
        return outcome
    return compare_gradients(op, sample, pair, expected, actual, seed)


def refused_overlap(
    function: Callable, w_input: Any, w_args: tuple, w_kwargs: dict, error: BaseException
) -> Outcome | None:
    """tensorweaver must raise torch's class where torch refuses to write into overlapping
    memory (in place into an expanded tensor)."""
    try:
        function(w_input, *w_args, **w_kwargs)
    except type(error):
        return None
    except Exception as other:
        return Outcome("error-type", f"{describe(other)}; torch {describe(error)}")
    return Outcome("error-missing", f"no error; torch {describe(error)}")


def seeds_itself(op: Any) -> bool:
    """Whether the database's wrapper reseeds torch before each call (its random ops)."""
    code = getattr(op.op, "__code__", None)
    return code is not None and "wrapper_set_seed" in code.co_names


def same_torch(a: Any, b: Any) -> bool:
    """Whether two torch outputs are equal bit for bit (NaN equal to NaN)."""
    fa, fb = flat_tensors(a), flat_tensors(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        x, y = x.detach(), y.detach()
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        equal = x == y
        if x.dtype.is_floating_point or x.dtype.is_complex:
            equal = equal | (x.isnan() & y.isnan())
        if not bool(equal.all()):
            return False
    return True


def compare_structure(expected: Any, actual: Any) -> Outcome | None:
    fe, fa = flat_tensors(expected), flat_tensors(actual)
    if len(fe) != len(fa):
        return Outcome("shape", f"{len(fa)} tensors, torch {len(fe)}")
    for i, (e, a) in enumerate(zip(fe, fa)):
        if dtype_name(e.dtype) != dtype_name(a.dtype):
            return Outcome("dtype", f"out[{i}]: {dtype_name(a.dtype)}, torch {dtype_name(e.dtype)}")
        if tuple(e.shape) != tuple(a.shape):
            return Outcome("shape", f"out[{i}]: {tuple(a.shape)}, torch {tuple(e.shape)}")
    return None


def compare_gradients(
    op: Any, sample: Any, pair: Pair, expected: Any, actual: Any, seed: int
) -> Outcome | None:
    process = sample.output_process_fn_grad or (lambda x: x)
    t_out = flat_tensors(process(expected))
    try:
        w_out = flat_tensors(process(actual))
    except Exception as error:
        return Outcome("grad", f"output_process_fn_grad on tw output: {describe(error)}")
    if len(t_out) != len(w_out):
        return Outcome("grad", f"{len(w_out)} differentiable outputs, torch {len(t_out)}")
    chosen = differentiable(t_out)
    if not chosen:
        return None
    leaves = [k for k in pair.order if pair.torch_leaves[k].requires_grad]
    if not leaves:
        return None
    weights = weights_for([t_out[i] for i in chosen], seed)
    t_loss = sum(
        ((t_out[i] * w).real if w.dtype.is_complex else t_out[i] * w).sum()
        for i, w in zip(chosen, weights)
    )
    try:
        t_grads = torch.autograd.grad(
            t_loss, [pair.torch_leaves[k] for k in leaves], allow_unused=True
        )
    except Exception as error:  # torch's own backward refuses (a strided input it mishandles)
        return Outcome("skip", f"torch's backward raised {describe(error)}")
    try:
        terms = []
        for i, w in zip(chosen, weights):
            out = w_out[i]
            if not out.requires_grad:
                return Outcome("grad", f"output {i} does not require grad (torch's does)")
            w_tw = tw.tensor(host(w), dtype=out.dtype)
            term = out * w_tw
            terms.append((tw.real(term) if out.dtype.is_complex else term).sum())
        w_loss = terms[0]
        for term in terms[1:]:
            w_loss = w_loss + term
        w_grads = tw.autograd.grad(w_loss, [pair.tw_leaves[k] for k in leaves], allow_unused=True)
    except Exception as error:
        return Outcome("grad", f"backward raised {describe(error)}")
    for position, (key, tg, wg) in enumerate(zip(leaves, t_grads, w_grads)):
        leaf = pair.torch_leaves[key]
        tg = torch.zeros_like(leaf) if tg is None else tg
        if wg is None:
            wg = tw.zeros(tuple(leaf.shape), dtype=DTYPES[leaf.dtype])
        outcome = compare_outputs(tg, wg, f"grad[{position}]")
        if outcome is not None:
            return Outcome("grad", outcome.detail)
    return None


def errors_expected_to_fail(op: Any) -> bool:
    """Whether torch's own ``TestCommon.test_errors`` on the CPU is marked an expected
    failure or skipped for ``op`` by its OpInfo (``clamp_min``/``clamp_max``: their error
    inputs are ones torch does not raise on)."""
    for info in op.decorators:
        if not hasattr(info, "is_active"):  # a plain decorator, on every test of the op
            decorators = (info,)
        elif info.is_active("TestCommon", "test_errors", "cpu", None, {}):
            decorators = info.decorators
        else:
            continue
        for decorator in decorators:
            try:
                marked = decorator(lambda: None)
            except Exception:  # noqa: BLE001 - a decorator for test classes only
                continue
            if getattr(marked, "__unittest_expecting_failure__", False) or getattr(
                marked, "__unittest_skip__", False
            ):
                return True
    return False


def run_error(op: Any, error_input: Any) -> Outcome | None:
    """tensorweaver must raise torch's class (or a subclass) on a database error input; as
    torch's ``test_errors``, a call that returns ``NotImplemented`` (a reflected operator
    given a number: ``int.__radd__``) counts as raising (its ``assertFalse``)."""
    if errors_expected_to_fail(op):
        return Outcome("skip", "torch's OpInfo marks its test_errors an expected failure")
    function = tw_callable(op, "function")
    if function is None:
        return Outcome("missing", f"function {op.name}")
    sample = error_input.sample_input
    try:
        _, (w_input, w_args, w_kwargs) = Pair(views=True).convert_sample(sample)
    except Unconvertible as why:
        return Outcome("skip", f"unconvertible {why}")
    expected = error_input.error_type
    try:
        if function(w_input, *w_args, **w_kwargs) is NotImplemented:
            raise AssertionError("NotImplemented")
    except Unconvertible as why:
        return Outcome("skip", f"unconvertible {why}")
    except Exception as error:
        # (before the class: a broad one, ``Exception``, would take tw's lack of the op or
        # torch's refusal of tw tensors for the error)
        if lacks_name(error):
            return Outcome("missing", describe(error))
        if refuses_tw(error):
            return Outcome("harness", describe(error))
        if isinstance(error, expected):
            return None
        if calls_torch(error):
            return Outcome("harness", describe(error))
        return Outcome(
            "error-type",
            f"{describe(error)}; torch {expected.__name__}: {error_input.error_regex[:100]}",
        )
    return Outcome(
        "error-missing", f"no error; torch {expected.__name__}: {error_input.error_regex[:100]}"
    )


def samples(op: Any, dtype: torch.dtype, *, requires_grad: bool) -> Iterator[Any]:
    torch.manual_seed(0)
    yield from op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
