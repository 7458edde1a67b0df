"""Tensor's operators and methods: the op functions, attached to the class in one place."""

from __future__ import annotations

import numbers
import warnings
from importlib import import_module
from typing import Any

import numpy as np

from tensorweaver import promotion, registry, selection, tensor_types
from tensorweaver import random as rnd
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.errors import DeviceNotFoundError, UnknownBackendError
from tensorweaver.layout import strided
from tensorweaver.memory_formats import (
    c_ordered,
    channels_last_order,
    laid_out,
    memory_format,
    suggested_format,
)
from tensorweaver.ops import complex as cx
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import integer as integer_ops
from tensorweaver.ops import linalg as la
from tensorweaver.ops import movement as mv
from tensorweaver.ops import overflow, special, spellings, structure, views
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import apply, labelled
from tensorweaver.ops.in_place_writes import add_scaled, addable
from tensorweaver.ops.out_arguments import _refuse_overlap, _refuse_overlapping_operands
from tensorweaver.ops.rank import check_ndim
from tensorweaver.tensor import Size, Tensor, _out_of_order, _retaining


def _reversed(op: Any) -> Any:
    def method(self: Tensor, other: Any) -> Tensor:
        return op(other, self)

    return method


def _reciprocal_times(self: Tensor, other: Any) -> Tensor:
    """``other / self`` as PyTorch computes it: ``self.reciprocal() * other`` (one division
    rounds otherwise in ~25% of the elements, in every float dtype)."""
    if (
        (self.dtype is dtypes.float32 or self.dtype is dtypes.float64)
        and (type(other) is float or type(other) is int)
        and not (self.requires_grad and is_grad_enabled())
    ):
        # Without a graph, the backend calls reciprocal() and mul() make, in one node.
        backend, dtype = self.backend, self.dtype
        inverse = backend.div(ew.scalar_native(backend, 1, dtype), self.native)
        return Tensor(backend.mul(inverse, ew.scalar_native(backend, other, dtype)), backend, dtype)
    return ew.mul(ew.reciprocal(self), other)


_TO_FORMS = (
    "to(dtype, non_blocking=False, copy=False), to(device=None, dtype=None, "
    "non_blocking=False, copy=False) or to(other, non_blocking=False, copy=False), each with "
    "a keyword memory_format="
)


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other_tensor)``, with
    PyTorch's ``non_blocking`` and ``copy`` (a new tensor even where nothing changes)."""
    first = args[0] if len(args) == 1 and not kwargs else True
    memory_format = None
    if isinstance(first, bool):  # flags, keywords or several arguments: PyTorch's parser
        device, dtype, copy, memory_format = _to_arguments(args, kwargs)
    elif isinstance(first, DType):  # the one-argument forms, to(dtype/other/device): no parsing
        device, dtype, copy = None, first, False
    elif isinstance(first, Tensor):
        device, dtype, copy = first.backend, first.dtype, False
    elif isinstance(first, type) and first in cr.PYTHON_DTYPES:  # to(float): a dtype
        device, dtype, copy = None, cr.dtype_argument("to", first), False
    else:
        device, dtype, copy = first, None, False
    out = self
    if device is not None:
        out = _to_device(out, device)
    if dtype is not None:
        out = ew.cast(out, dtype)
    if memory_format is not None and memory_format.name != "preserve_format":
        out = _to_format(out, memory_format)
    if copy and out is self:  # PyTorch's copy is a _to_copy, whatever changes
        out = _clone(self)
        if not self._inference:  # (an inference tensor's copy is _clone's CopyBackwards)
            out = labelled(out, "ToCopyBackward0", self)
    return ew.as_copy_of(out, self)


def _to_format(x: Tensor, memory_format: Any) -> Tensor:
    """``x`` in ``memory_format`` as PyTorch's ``to`` makes it: ``x`` itself where its
    strides suggest that format (torch's ``suggest_memory_format``), else a new tensor laid
    out in it (a channels-last one even where ``is_contiguous`` already said so through a
    size-1 axis)."""
    order = channels_last_order(memory_format, x.shape)
    if order is None:
        return mv.contiguous(x, memory_format)
    if suggested_format(tuple(x.shape), x.stride()) == memory_format.name:
        return x
    native = laid_out(x.backend, x._unshared_native(), order)
    return labelled(apply("identity", native, x.dtype, (x,)), "ToCopyBackward0", x)


def _to_arguments(args: tuple, kwargs: dict) -> tuple[Any, DType | None, bool, Any]:
    """(device, dtype, copy, memory_format) of a ``to`` call, its arguments checked as
    PyTorch's parser does."""
    given = dict(kwargs)
    memory_format = given.pop("memory_format", None)
    _check_memory_format("to", memory_format)
    first = args[0] if args else None
    if isinstance(first, DType) or isinstance(first, type) and first in cr.PYTHON_DTYPES:
        names: tuple[str, ...] = ("dtype", "non_blocking", "copy")
    elif isinstance(first, Tensor):
        names = ("other", "non_blocking", "copy")
    else:
        names = ("device", "dtype", "non_blocking", "copy")
    unknown = sorted(set(given) - set(names))  # the dtype and tensor forms take no device=
    twice = sorted(set(given) & set(names[: len(args)]))
    if len(args) > len(names) or unknown or twice:
        raise TypeError(
            f"to() received an invalid combination of arguments - got {len(args)} positional "
            f"and keywords {sorted(given)}; expected one of {_TO_FORMS}"
        )
    bound = dict(zip(names, args), **given)
    for flag in ("non_blocking", "copy"):
        if not isinstance(bound.get(flag, False), bool):
            raise TypeError(
                f"to(): argument '{flag}' must be bool, not {type(bound[flag]).__name__}"
            )
    dtype = cr.dtype_argument("to", bound.get("dtype"))
    device = bound.get("device")
    if isinstance(device, (bool, DType)):
        raise TypeError(
            f"to(): argument 'device' must be a device, not {type(device).__name__}; "
            f"expected one of {_TO_FORMS}"
        )
    other = bound.get("other")
    if other is not None:
        device, dtype = other.backend, other.dtype
    return device, dtype, bound.get("copy", False), memory_format


def _check_memory_format(name: str, value: Any) -> None:
    if not isinstance(value, (memory_format, type(None))):
        raise TypeError(
            f"{name}(): argument 'memory_format' must be tw.memory_format, not "
            f"{type(value).__name__}"
        )


def _to_device(x: Tensor, device: Any) -> Tensor:
    # A kind-only device ("cpu", "cuda:1") is looked for on x's own backend first.
    if not isinstance(device, str) and hasattr(device, "from_host"):
        backend = device
    else:
        try:
            backend = rnd.seeded(selection.backend_of(device, near=x.backend))
        except UnknownBackendError:
            _not_a_dtype_name(device)
            raise
    if backend is x.backend:
        return x
    dtype = x.dtype
    if dtype not in backend.dtypes:
        raise TypeError(
            f"to({backend.device.name}): that device has no {dtype.name}; convert first, "
            f"e.g. x.to(tw.float32).to({backend.device.name!r})"
        )
    check_ndim(f"to({backend.device.name!r})", x.shape, backend)
    native = backend.from_host(x.backend.to_host(x.native), dtype)
    out = apply("to_device", native, dtype, (x,))
    out.backend = backend
    return out


def _not_a_dtype_name(device: Any) -> None:
    """PyTorch's RuntimeError for a dtype's name given as a device (``x.to("float32")``),
    which no backend plugin could provide: a string names a device, never a dtype."""
    import tensorweaver

    if not isinstance(device, str):
        return
    name = device.rpartition(".")[2]  # also "torch.float32", "tw.float64"
    if isinstance(getattr(tensorweaver, name, None), DType):
        raise RuntimeError(
            f"Invalid device string: {device!r}: a string names a device ('cpu', 'numpy', "
            f"'torch:cpu'), never a dtype; for the dtype pass it itself: x.to(tw.{name})"
        )


def _cpu(self: Tensor, memory_format: Any = None) -> Tensor:
    """This tensor on a CPU: its own backend's when it has one (see ``to``)."""
    return _to_device(self, "cpu")


def _cuda(self: Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Tensor:
    """This tensor on a CUDA device: ``cuda()``, ``cuda(1)``, ``cuda("cuda:1")``."""
    from tensorweaver import cuda

    try:
        return _to_device(self, cuda.device_spec(device))
    except DeviceNotFoundError as error:
        # PyTorch without CUDA: AssertionError, but a RuntimeError for a device index
        if isinstance(device, int) or cuda.is_available():
            raise
        raise AssertionError(f"Torch not compiled with CUDA enabled: {error}") from error


def _is_kind(*kinds: str) -> Any:
    return property(lambda self: self.backend.device.kind in kinds)


def _dtype_method(name: str, dtype: DType) -> Any:
    def method(self: Tensor, *, memory_format: Any = None) -> Tensor:
        if memory_format is not None:
            _check_memory_format(name, memory_format)
        return ew.as_copy_of(ew.cast(self, dtype), self)

    return method


#: Ops whose operands' gradients never read ``x``'s value (sums, products of the operands
#: alone, scatters): ``x.op_(w)`` needs no copy of ``x`` for ``w`` (Tensor._inplace_source),
#: so their in-place forms skip the scan of the operands. Any other op is scanned.
_OPERANDS_READ_NO_SELF = frozenset(
    "add sub subtract addcmul addcdiv masked_fill scatter scatter_add index_add index_copy "
    "index_fill index_put masked_scatter addmm addmv addr baddbmm addbmm".split()
)


#: In-place index writes whose operands (index, source) PyTorch refuses anywhere in ``self``'s
#: memory, the very same elements too: its index kernels assert no overlap at all, where an
#: elementwise kernel may read each element just before it writes it.
_INDEX_WRITES = frozenset(
    "index_copy_ index_add_ index_reduce_ scatter_ scatter_add_ scatter_reduce_".split()
)


def _refuse_any_overlap(self: Tensor, name: str, args: tuple, kwargs: dict) -> None:
    """PyTorch's RuntimeError where a tensor operand of the index write ``self.name(...)``
    shares any of ``self``'s memory (``x.index_add_(0, i, x)``)."""
    for operand in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(operand, Tensor) and ix.shares_memory(self, operand):
            ix.refuse_overlapping_operands(name, self, (operand,))


def _inplace(op: Any, sign: int | None = None) -> Any:
    """``x.op_(...)``: compute ``op(x, ...)`` and rebind ``x`` to the result. ``sign``: 1 for
    ``add``, -1 for ``sub``, whose ``alpha`` form may take :func:`_added_scaled`'s path."""

    name = op.__name__ + "_"
    # (chosen here, once: the elementwise ops' calls pay nothing for the index writes' rule)
    refuse = _refuse_any_overlap if name in _INDEX_WRITES else _refuse_overlapping_operands
    if op.__name__ in _OPERANDS_READ_NO_SELF:

        def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            # (tested here, not in a wrapper: x.add_(y) and x += y pay no extra call; first,
            # as it refuses overlapping operands itself once it knows it goes)
            if kwargs and sign is not None and _added_scaled(self, args, kwargs, sign, name):
                return self
            refuse(self, name, args, kwargs)
            if self._inference and _skipped_by_autograd(self, args, kwargs):
                return _written_unrecorded(self, op, name, args, kwargs)
            try:
                result = op(self._inplace_source(), *args, **kwargs)
            except NotImplementedError:
                _check_castable(self, name, (*args, *kwargs.values()))
                raise
            return self._assign(result, name)

    else:

        def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            refuse(self, name, args, kwargs)
            if self._inference and _skipped_by_autograd(self, args, kwargs):
                return _written_unrecorded(self, op, name, args, kwargs)
            source = self._inplace_source(*args, *kwargs.values())  # (operands: see there)
            try:
                result = op(source, *args, **kwargs)
            except NotImplementedError:
                _check_castable(self, name, (*args, *kwargs.values()))
                raise
            return self._assign(result, name)

    method.__name__ = name
    return method


def _skipped_by_autograd(self: Tensor, args: tuple, kwargs: dict) -> bool:
    """Whether PyTorch's autograd skips ``self.op_(*args, **kwargs)``: ``self`` and each
    tensor operand are inference tensors in grad mode, and no operand is a number given by
    position (PyTorch wraps it in a tensor of its own, not an inference one)."""
    return all(isinstance(a, Tensor) for a in args) and ew.inference_alone(
        self, *args, *kwargs.values()
    )


def _written_unrecorded(self: Tensor, op: Any, name: str, args: tuple, kwargs: dict) -> Tensor:
    """``self.name(...)`` where ``self`` and its tensor operands are inference tensors, in
    grad mode: PyTorch's autograd skips such an op (no leaf check, no node), so the kernel
    writes; then the write is refused where ``self`` may not change (``_assign``)."""
    with no_grad():
        result = op(self._inplace_source(), *args, **kwargs)
    return self._assign(result, name)


#: In-place methods whose result is bool before it is written into ``self``.
_BOOL_RESULTS = frozenset(
    "eq_ ne_ lt_ le_ gt_ ge_ less_ less_equal_ greater_ greater_equal_ not_equal_ "
    "logical_and_ logical_or_ logical_xor_".split()
)


def _check_castable(self: Tensor, name: str, operands: tuple) -> None:
    """PyTorch's RuntimeError where ``self.op_(other)``'s result type cannot be cast to
    ``self``'s dtype: PyTorch checks that before the op, so it wins over the op's refusal of
    the dtype (an int tensor's ``bitwise_and_`` of a float one). Called once the op refused,
    which keeps the check off the path of every in-place op that succeeds. A comparison's
    result is bool, castable to any dtype: its own refusal stands."""
    if name in _BOOL_RESULTS:
        return
    if not operands or not isinstance(operands[0], (Tensor, bool, int, float, complex)):
        return
    dtype = promotion.result_type(self, operands[0])
    if promotion.category(dtype) > promotion.category(self.dtype):
        raise RuntimeError(
            f"{name}: result type {dtype.name} can't be cast to the desired output type "
            f"{self.dtype.name}"
        )


def _overwritten(self: Tensor, value: Tensor, grad_fn: str, source: Any = None) -> Tensor:
    """``value`` (made from ``source``) as ``self``'s new value. Where autograd follows
    ``self``'s history, that history gets a zero gradient from here, as from PyTorch's
    FillBackward/CopyBackwards (without a node, ``self`` would become a leaf and its inputs
    get no gradient at all). The node's inputs are PyTorch's: ``self`` as it was, then
    ``source`` where there is one (an input that needs no gradient has none)."""
    if not is_grad_enabled():
        return value
    if self._node is None:
        if not value.requires_grad:
            return value
        if value is source:  # a node of its own, or self would become a leaf like source
            value = apply("identity", value.native, value.dtype, (value,))
        prior = self  # (needs no gradient: a leaf that does is refused before the write)
    else:
        prior = self._inplace_source()
        keep = cr.full((), True, dtype=dtypes.bool_, device=self)
        value = ew.where(keep, value, prior)
    if source is None:
        return labelled(value, grad_fn, prior)
    return labelled(value, grad_fn, prior, source)


def _fill(self: Tensor, value: Any, grad_fn: str = "FillBackward2") -> Tensor:
    if not isinstance(value, (Tensor, numbers.Number, np.generic)):
        # (PyTorch's argument parser, before any autograd check: None, a list, an array)
        raise TypeError(
            f"fill_(): argument 'value' must be Number or Tensor, not {type(value).__name__}"
        )
    if self._inference and ew.inference_alone(self, value):
        with no_grad():  # (PyTorch's autograd skips it: _assign refuses after the write)
            return _fill(self, value, grad_fn)
    self._check_inplace()
    if isinstance(value, Tensor):  # differentiable in the value, as in PyTorch
        if value.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions; pass value.squeeze() or value.item()"
            )
        filled = mv.expand(ew.cast(value, self.dtype), self.shape)
        if not _out_of_order(self):
            # PyTorch writes the value into self's memory: a C-ordered self stays so (not
            # expand()'s zero strides, which torch's contiguous() keeps where it is empty;
            # _assign keeps any other order of self's itself)
            filled = filled.contiguous() if self.numel() else filled + cr.zeros_like(self)
        # (as copy_: PyTorch refuses a tensor value through elements expand() repeats)
        filled = _overwritten(self, filled, "FillBackward3", value)
        return self._assign(filled, "fill_(tensor)")
    filled = cr.full_like(self, value)  # in its layout, as PyTorch fills its memory
    return self._assign(_overwritten(self, filled, grad_fn), "fill_")


def _zero(self: Tensor) -> Tensor:
    if (
        self._view_of is None
        and not self._inference
        and (self._node is None or not is_grad_enabled())
        and c_ordered(self.native)
    ):
        # ``p.grad.zero_()``: where no history is recorded (``_overwritten`` returns the
        # zeros as they are) and self is C-ordered (full_like's layout is full's), _fill's
        # steps without full_like's argument handling (no view: _check_inplace may reread
        # a view's array from host memory)
        self._check_inplace()
        return self._assign(self.backend.full(self._shape, 0, self._dtype), "fill_")
    return _fill(self, 0, "ZeroBackward0")


def _copy(self: Tensor, other: Tensor, non_blocking: bool = False) -> Tensor:
    # (PyTorch's keyword is other, though its documentation names the argument src)
    self._check_inplace()
    if not isinstance(other, Tensor):
        other = _number_source(self, other)
    if ix.shares_memory(self, other):
        _refuse_overlap("copy_", self, (other,), partly=True)
    if other.backend is not self.backend:
        other = other.to(self.backend)
    copied = mv.expand(ew.cast(other, self.dtype), self.shape)
    if (
        self._view_of is None
        and self._views is None
        and _out_of_order(copied)
        and not _out_of_order(self)
    ):
        # PyTorch writes into self's memory: self keeps its C order (_assign keeps any other
        # order of self's, and that of a base with views, itself; a view's is its base's)
        copied = copied.contiguous()
    return self._assign(_overwritten(self, copied, "CopyBackwards", other), "copy_")


def _number_source(self: Tensor, value: Any) -> Tensor:
    """``x.copy_(number)``'s source, as PyTorch takes it: the number as a 0-d tensor of
    ``x``'s dtype (a complex one into a real ``x``: complex, so that the cast warns and keeps
    the real part, as PyTorch's)."""
    if not isinstance(value, numbers.Number):
        raise TypeError(
            f"copy_(): argument 'other' (position 1) must be Tensor, not {type(value).__name__}"
        )
    dtype = self.dtype
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        dtype = dtype if dtype.is_complex else dtypes.complex128
    return cr.full((), value, dtype=dtype, device=self)


def _clone(self: Tensor, memory_format: Any = None) -> Tensor:
    # A clone must not see later writes into memory the tensor shares with NumPy.
    native = self._unshared_native()
    if memory_format is None or memory_format.name == "preserve_format":
        make = getattr(self.backend, "contiguous", None)
        if make is not None and make(native) is not native and self._dense_order() is None:
            # PyTorch keeps a dense layout as it is, else the axis order of the strides (an
            # expanded view's zero strides in place): a stepped channels-last view's clone
            # is channels-last
            native = laid_out(self.backend, native, self._preserved_order())
        return ew.as_copy_of(apply("identity", native, self.dtype, (self,)), self)
    order = channels_last_order(memory_format, self.shape)
    if order is None:
        out = mv.contiguous(apply("identity", native, self.dtype, (self,)), memory_format)
        return ew.as_copy_of(out, self)
    # a new tensor in the format, whatever the strides of a size-1 axis were (torch's)
    out = apply("identity", laid_out(self.backend, native, order), self.dtype, (self,))
    return ew.as_copy_of(out, self)


def _type_as(self: Tensor, other: Tensor) -> Tensor:
    return ew.as_copy_of(ew.cast(self, other.dtype), self)


def _as_subclass(self: Tensor, cls: type) -> Tensor:
    """This tensor as an instance of ``cls`` (a subclass of Tensor, whose ``__init__`` is not
    called): an alias of its memory, attached to the graph (``AliasBackward0``)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            f"as_subclass(): cls must be a subclass of Tensor, not {cls!r}; derive it from "
            "tw.Tensor"
        )
    graphed = labelled(apply("identity", self.native, self.dtype, (self,)), "AliasBackward0", self)
    out = object.__new__(cls)
    Tensor.__init__(out, self.native, self.backend, self.dtype)
    out._share_memory_of(self)  # (writes through either reach the other, as PyTorch's)
    # Under no_grad PyTorch's alias is a leaf that still requires grad.
    out._node, out._requires_grad = graphed._node, self.requires_grad
    return out


def _new_tensor(
    self: Tensor,
    data: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A new tensor of ``data``, with this tensor's dtype and device unless given."""
    return cr.tensor(
        data,
        dtype=dtype or self.dtype,
        device=self if device is None else device,
        requires_grad=requires_grad,
    )


def _new_full(
    self: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device
    unless given."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            f"new_full(): argument 'size' must be a tuple of ints, not {type(size).__name__}"
        )
    return cr.full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=self if device is None else device,
        requires_grad=requires_grad,
    )


def _new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """The legacy constructor ``x.new(...)`` with ``x``'s dtype (and device): ``new()``
    empty, ``new(2, 3)`` or ``new(size)`` zeros of that size (there is no uninitialised
    memory), ``new(data)`` a tensor of the data."""
    if not args:
        return self.new_zeros((0,), device=device)
    if isinstance(args[0], Size) or all(isinstance(a, int) for a in args):
        return self.new_zeros(*args, device=device)
    if len(args) != 1:
        raise TypeError(f"new(): expected sizes (ints) or one data argument, got {args}")
    return self.new_tensor(args[0], device=device)


def _new_filled(name: str, fill_value: int) -> Any:
    """``new_zeros``, ``new_ones``, ``new_empty``: sizes as ``f(2, 3)``, ``f((2, 3))`` or
    ``f(size=(2, 3))``."""

    def method(
        self: Tensor,
        *size: Any,
        dtype: DType | None = None,
        device: Any = None,
        requires_grad: bool = False,
        **kwargs: Any,
    ) -> Tensor:
        if "size" in kwargs and not size:
            size = (kwargs.pop("size"),)
        if kwargs:
            raise TypeError(f"{name}(): unexpected keyword arguments {sorted(kwargs)}")
        if not size:
            raise TypeError(f'{name}() missing 1 required positional argument: "size"')
        return _new_full(
            self,
            mv._sizes(size),
            fill_value,
            dtype=dtype,
            device=device,
            requires_grad=requires_grad,
        )

    method.__name__ = name
    return method


def _softmax(
    self: Tensor, dim: int = mv.REQUIRED, dtype: DType | None = None, **aliases: Any
) -> Tensor:
    from tensorweaver.nn import functional as F

    if aliases or dim is mv.REQUIRED or dim is None:  # (PyTorch's parser takes axis= for dim=)
        dim = _softmax_dim("softmax", aliases, dim)
    return F.softmax(self, dim, dtype=dtype)


def _log_softmax(
    self: Tensor, dim: int = mv.REQUIRED, dtype: DType | None = None, **aliases: Any
) -> Tensor:
    from tensorweaver.nn import functional as F

    if aliases or dim is mv.REQUIRED or dim is None:  # (as softmax's)
        dim = _softmax_dim("log_softmax", aliases, dim)
    return F.log_softmax(self, dim, dtype=dtype)


def _softmax_dim(op: str, aliases: dict[str, Any], dim: Any) -> int:
    """``dim`` of ``Tensor.softmax``/``log_softmax`` (and ``tw.softmax``...) given ``axis=``,
    missing or None: PyTorch's TypeError for None, which only ``nn.functional``'s implicit
    choice of dim takes."""
    dim = mv.dim_alias(op, aliases, dim)
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' must be int, not NoneType")
    return dim


def names_in(module: str, names: str) -> dict[str, tuple[str, str]]:
    """``{name: ("tensorweaver.<module>", name)}`` for each of the space-separated ``names``:
    a table of what loads on first use."""
    return {name: ("tensorweaver." + module, name) for name in names.split()}


#: Methods whose module is imported on their first call, so that ``import tensorweaver``
#: loads only what every program needs (issue 16): name -> (module, function there).
DEFERRED_METHODS: dict[str, tuple[str, str]] = {
    **names_in("ops.sort", "sort argsort msort topk"),
    **names_in(
        "ops.sampling",
        "multinomial bernoulli uniform_ normal_ bernoulli_ random_ exponential_ geometric_ "
        "cauchy_ log_normal_",
    ),
    **names_in(
        "ops.order_stats",
        "median nanmedian kthvalue quantile nanquantile mode unique unique_consecutive "
        "bincount histc",
    ),
    **names_in(
        "ops.numeric",
        "isclose allclose clamp_min clamp_max logaddexp logaddexp2 hypot fmod frac nansum "
        "nanmean aminmax cumprod cummax cummin logcumsumexp scatter_reduce index_reduce",
    ),
    **names_in(
        "ops.index_write",
        "index_copy index_fill index_put index_put_ masked_scatter fill_diagonal_",
    ),
    **names_in(
        "ops.scatter_views", "as_strided_scatter select_scatter slice_scatter diagonal_scatter"
    ),
    **names_in("ops.views", "unfold"),  # a view: writes through it reach the tensor
    **names_in("linalg.determinants", "det logdet slogdet"),
    **names_in("linalg.legacy", "cholesky qr lu orgqr pinverse triangular_solve svd"),
    **names_in("linalg.householder", "geqrf ormqr"),
    **names_in("linalg.solvers", "cholesky_solve cholesky_inverse"),
    **names_in("linalg.products", "matrix_power matrix_exp"),
    "inverse": ("tensorweaver.linalg.solvers", "inv"),
    "lu_solve": ("tensorweaver.linalg.legacy", "lu_solve_legacy"),
}


def _deferred(name: str, module: str, attr: str) -> Any:
    """The method ``name``: imports ``module`` on its first call and puts ``attr`` there in
    its own place on Tensor."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(import_module(module), attr)
        if Tensor.__dict__.get(name) is method:
            setattr(Tensor, name, fn)
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{module}.{attr}``, imported on the first call."
    return method


def _split(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    # PyTorch's method names it split_size (torch.split: split_size_or_sections)
    return views.split(self, split_size, dim)


_split.__name__, _split.__qualname__ = "split", "Tensor.split"


def _int_list_method(name: str, keyword: str, function: Any, ignored: tuple = ()) -> Any:
    """A method whose one int-list argument PyTorch takes spread out (``t.expand(2, 3)``), as
    one sequence (``t.expand((2, 3))``) or by keyword, then a sequence only
    (``t.expand(size=(2, 3))``); it calls ``function(self, that_argument)``. Keywords in
    ``ignored`` are accepted and have no effect here (``expand``'s ``implicit``)."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if kwargs:
            for unused in ignored:
                kwargs.pop(unused, None)
            for unknown in kwargs.keys() - {keyword}:
                raise TypeError(f"{name}() got an unexpected keyword argument '{unknown}'")
        if keyword in kwargs:
            if args:
                raise TypeError(f"{name}() got multiple values for argument '{keyword}'")
            value = kwargs[keyword]
            if not isinstance(value, (tuple, list)):
                kind = type(value).__name__
                raise TypeError(f"{name}(): argument '{keyword}' must be tuple of ints, not {kind}")
        elif not args:
            raise TypeError(f'{name}() missing 1 required positional arguments: "{keyword}"')
        else:
            value = args[0] if len(args) == 1 else args
        return function(self, value)

    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    method.__doc__ = function.__doc__
    return method


def _squeeze(self: Tensor, *dims: Any, dim: Any = None, **aliases: Any) -> Tensor:
    """``t.squeeze()``, ``t.squeeze(0)``, ``t.squeeze(0, 2)``, ``t.squeeze((0, 2))`` or
    ``t.squeeze(dim=...)`` (one dim or a sequence of them; ``axis=`` too)."""
    if aliases:
        dim = mv.dim_alias("squeeze", aliases, dim, None)
    if dims and dim is not None:
        raise TypeError("squeeze() got multiple values for argument 'dim'")
    return views.squeeze(self, (dims[0] if len(dims) == 1 else dims) if dims else dim)


_METHODS: dict[str, Any] = {
    # operators
    "__add__": ew.add_,
    "__radd__": ew.add_,  # (commutes; PyTorch lists the tensor's edge first)
    "__sub__": ew.sub_,
    "__rsub__": _reversed(ew.sub_),
    "__mul__": ew.mul,
    "__rmul__": ew.mul,
    "__truediv__": ew.div,
    "__rtruediv__": _reciprocal_times,
    "__rdiv__": _reciprocal_times,  # PyTorch keeps Python 2's name too
    "__floordiv__": ew.floor_divide,
    "__rfloordiv__": _reversed(ew.floor_divide),
    "__mod__": ew.remainder,
    "__rmod__": _reversed(ew.remainder),
    "__pow__": ew.pow,
    "__rpow__": _reversed(ew.pow),
    "__matmul__": la.matmul,
    "__rmatmul__": _reversed(la.matmul),
    "__neg__": ew.neg,
    "__pos__": lambda self: self,
    "__abs__": ew.abs,
    "__invert__": lambda self: (
        ew.logical_not(self) if self.dtype is dtypes.bool_ else ew.bitwise_not(self)
    ),
    "__eq__": ew.eq,
    "__ne__": ew.ne,
    "__lt__": ew.lt,
    "__le__": ew.le,
    "__gt__": ew.gt,
    "__ge__": ew.ge,
    "__and__": ew.bitwise_and,  # PyTorch's & | ^ (bool & bool is bool)
    "__or__": ew.bitwise_or,  # PyTorch's & | ^ (bool & bool is bool)
    "__xor__": ew.bitwise_xor,  # PyTorch's & | ^ (bool & bool is bool)
    "__getitem__": views.getitem,
    "__setitem__": ix.setitem,
    # elementwise
    "add": ew.add,
    "sub": ew.sub,
    "subtract": ew.sub,
    "mul": ew.mul,
    "multiply": ew.mul,
    "div": ew.div,
    "divide": ew.div,
    "true_divide": ew.div,
    "floor_divide": ew.floor_divide,
    "remainder": ew.remainder,
    "pow": ew.pow,
    "maximum": ew.maximum,
    "minimum": ew.minimum,
    "eq": ew.eq,
    "ne": ew.ne,
    "lt": ew.lt,
    "le": ew.le,
    "gt": ew.gt,
    "ge": ew.ge,
    "logical_and": ew.logical_and,
    "logical_or": ew.logical_or,
    "logical_xor": ew.logical_xor,
    "logical_not": ew.logical_not,
    "bitwise_and": ew.bitwise_and,
    "bitwise_or": ew.bitwise_or,
    "bitwise_xor": ew.bitwise_xor,
    "bitwise_not": ew.bitwise_not,
    "neg": ew.neg,
    "negative": ew.neg,
    "abs": ew.abs,
    "sign": ew.sign,
    "sgn": cx.sgn,
    "angle": cx.angle,
    "conj": cx.conj,
    "conj_physical": cx.conj_physical,
    "resolve_conj": cx.resolve_conj,
    "resolve_neg": cx.resolve_neg,
    "is_conj": cx.is_conj,
    "exp": ew.exp,
    "log": ew.log,
    "log2": ew.log2,
    "log10": ew.log10,
    "log1p": ew.log1p,
    "expm1": ew.expm1,
    "sqrt": ew.sqrt,
    "rsqrt": ew.rsqrt,
    "sin": ew.sin,
    "cos": ew.cos,
    "tan": ew.tan,
    "tanh": ew.tanh,
    "sigmoid": ew.sigmoid,
    "relu": ew.relu,
    "erf": ew.erf,
    "floor": ew.floor,
    "ceil": ew.ceil,
    "round": ew.round,
    "trunc": ew.trunc,
    "reciprocal": ew.reciprocal,
    "square": ew.square,
    "clamp": ew.clamp,
    "clip": ew.clamp,
    "isnan": ew.isnan,
    "isinf": ew.isinf,
    "isfinite": ew.isfinite,
    "nan_to_num": ew.nan_to_num,
    "lerp": ew.lerp,
    "addcmul": ew.addcmul,
    "addcdiv": ew.addcdiv,
    "where": lambda self, cond, other: ew.where(cond, self, other),
    # reductions
    "sum": rd.sum,
    "mean": rd.mean,
    "prod": rd.prod,
    "amax": rd.amax,
    "amin": rd.amin,
    "max": rd.max,
    "min": rd.min,
    "argmax": rd.argmax,
    "argmin": rd.argmin,
    "var": rd.var,
    "std": rd.std,
    "logsumexp": rd.logsumexp,
    "cumsum": rd.cumsum,
    "all": rd.all,
    "any": rd.any,
    "norm": rd.norm,
    "count_nonzero": rd.count_nonzero,
    # ordering, sampling, order statistics, numerics, index writes, linear algebra, ...
    **{name: _deferred(name, *where) for name, where in DEFERRED_METHODS.items()},
    # structure
    **{
        name: getattr(structure, name)
        for name in (
            "diagonal",
            "diag",
            "diag_embed",
            "trace",
            "repeat_interleave",
            "diff",
            "kron",
            "cross",
        )
    },
    # shape
    "reshape": views.reshape,
    "view": views.view,
    "flatten": views.flatten,
    "unflatten": views.unflatten,
    "squeeze": _squeeze,
    "unsqueeze": views.unsqueeze,
    "permute": views.permute,
    "transpose": views.transpose,
    "t": views.t,
    "expand": _int_list_method("expand", "size", views.expand, ignored=("implicit",)),
    "expand_as": views.expand_as,
    "broadcast_to": _int_list_method("broadcast_to", "size", views.broadcast_to),
    "repeat": _int_list_method("repeat", "repeats", mv.repeat),
    "tile": _int_list_method(
        "tile", "dims", lambda self, dims: structure.tile(self, mv._sizes((dims,), "tile"))
    ),
    "narrow": views.narrow,
    "flip": _int_list_method("flip", "dims", mv.flip),
    "split": _split,
    "chunk": views.chunk,
    "unbind": views.unbind,
    "roll": mv.roll,
    "tril": mv.tril,
    "triu": mv.triu,
    "contiguous": mv.contiguous,
    "movedim": views.movedim,
    "view_as": views.view_as,
    "reshape_as": views.view_as,
    # indexing
    "gather": ix.gather,
    "scatter": ix.scatter,
    "scatter_add": ix.scatter_add,
    "index_select": ix.index_select,
    "index_add": ix.index_add,
    "take_along_dim": ix.take_along_dim,
    "masked_fill": ix.masked_fill,
    "masked_select": ix.masked_select,
    "nonzero": ix.nonzero,
    "nonzero_static": ix.nonzero_static,
    "argwhere": ix.nonzero,
    # linear algebra
    "matmul": la.matmul,
    "mm": la.mm,
    "bmm": la.bmm,
    "dot": la.dot,
    "outer": la.outer,
    # conversion and copies
    "to": to,
    "clone": _clone,
    "type_as": _type_as,
    "as_subclass": _as_subclass,
    "type": tensor_types.tensor_type,
    "float": _dtype_method("float", dtypes.float32),
    "double": _dtype_method("double", dtypes.float64),
    "half": _dtype_method("half", dtypes.float16),
    "bfloat16": _dtype_method("bfloat16", dtypes.bfloat16),
    "long": _dtype_method("long", dtypes.int64),
    "int": _dtype_method("int", dtypes.int32),
    "short": _dtype_method("short", dtypes.int16),
    "char": _dtype_method("char", dtypes.int8),
    "byte": _dtype_method("byte", dtypes.uint8),
    "bool": _dtype_method("bool", dtypes.bool_),
    "cpu": _cpu,
    "cuda": _cuda,
    "new": _new,
    "new_tensor": _new_tensor,
    "new_full": _new_full,
    "new_zeros": _new_filled("new_zeros", 0),
    "new_ones": _new_filled("new_ones", 1),
    "new_empty": _new_filled("new_empty", 0),  # the IR has no uninitialised memory
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    # in place
    "zero_": _zero,
    "fill_": _fill,
    "copy_": _copy,
}

for _name in (
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "clamp",
    "clip",
    "sqrt",
    "neg",
    "exp",
    "log",
    "abs",
    "masked_fill",
    "lerp",
    "addcmul",
    "addcdiv",
    "floor_divide",
    "remainder",
    "fmod",
    "sigmoid",
    "tanh",
    "relu",
    "maximum",
    "minimum",
    "scatter",
    "scatter_add",
    "index_add",
    "index_copy",
    "index_fill",
    "masked_scatter",
    "floor",
    "ceil",
    "round",
    "trunc",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tril",
    "triu",
):
    _METHODS[_name + "_"] = _inplace(_METHODS[_name])


_NO_KEYWORDS: dict = {}


def _added_scaled(self: Tensor, args: tuple, kwargs: dict, sign: int, name: str) -> bool:
    """Whether ``self.add_(other, alpha=a)`` (``sub_``: ``sign`` -1) went as one
    ``foreach_add`` call: between two floating-point tensors of one shape, dtype and backend
    outside autograd, where the backend has it (x + y * (sign * alpha): on NumPy bit for bit
    the general path's mul then add or sub; torch's kernel may fuse the two, as torch's own
    ``add_`` does), written into x's memory where it is x's own (``p.data.add_(p.grad,
    alpha=-lr)``, ops/in_place_writes.py). Else the caller takes the general path."""
    alpha = kwargs.get("alpha")
    if not (
        # a float subclass too: tw.compile's recomputed learning rate (-lr), so a traced
        # step makes the same call as the eager one
        (type(alpha) is float or type(alpha) is int or isinstance(alpha, float))
        and len(args) == 1
        and len(kwargs) == 1
    ):
        return False
    other = args[0]
    if not addable(self, other) or (
        # (the flags' slots first: the properties read a view's root, which no other has)
        (self._requires_grad or other._requires_grad or self._view_of or other._view_of)
        and is_grad_enabled()
        and (self.requires_grad or other.requires_grad)
    ):
        return False
    # PyTorch's checks, in its order: operands sharing self's memory (other: the alpha is a
    # number), then the alpha (its range: float16's is 65504; of ew.scalar_argument's, the
    # only one an int or float alpha of a floating-point result can fail)
    _refuse_overlapping_operands(self, name, args, _NO_KEYWORDS)
    overflow.fill_value(alpha, self._dtype, name)
    add_scaled(self, other, sign * alpha, name)
    return True


_METHODS["add_"] = _inplace(_METHODS["add"], 1)
_METHODS["sub_"] = _inplace(_METHODS["sub"], -1)

_METHODS.update(
    {
        "__iadd__": _METHODS["add_"],
        "__isub__": _METHODS["sub_"],
        "__imul__": _METHODS["mul_"],
        "__itruediv__": _METHODS["div_"],
        "__ipow__": _METHODS["pow_"],
        "__ifloordiv__": _METHODS["floor_divide_"],
        "__imod__": _METHODS["remainder_"],
    }
)


_METHODS.update({name: getattr(spellings, name) for name in spellings.METHODS})
_METHODS.update(
    {
        name + "_": _inplace(_METHODS[name])
        for name in spellings.INPLACE
        if name in _METHODS and name + "_" not in _METHODS
    }
)

# Special functions and integer ops (issue 14), with their in-place forms and operators.
_METHODS.update(special.METHODS)
_METHODS.update(integer_ops.METHODS)
_METHODS.update({name + "_": _inplace(_METHODS[name]) for name in special.INPLACE})
_METHODS.update(
    {
        "__rand__": _METHODS["__and__"],  # & | ^ commute
        "__ror__": _METHODS["__or__"],
        "__rxor__": _METHODS["__xor__"],
        "__ilshift__": _METHODS["bitwise_left_shift_"],
        "__irshift__": _METHODS["bitwise_right_shift_"],
        # in place, as PyTorch's (a &= b rebound a: a view's base never saw the write)
        "__iand__": _METHODS["bitwise_and_"],
        "__ior__": _METHODS["bitwise_or_"],
        "__ixor__": _METHODS["bitwise_xor_"],
    }
)


#: Methods whose leading arguments PyTorch names otherwise than the functions bound to them
#: (``x.addmm(mat1=a, mat2=b)``): name -> PyTorch's names, in order, each a tuple of the
#: names one position takes. The in-place form ``name_`` takes them too. (The functions of
#: ops/elementwise.py and ops/linalg.py name their arguments as PyTorch does, ``other``,
#: ``tensor1``, ``vec2``..., so their methods need no wrapper, which would cost every call a
#: frame; so do tensor_split's and hsplit's, whose keywords also say which overload is meant:
#: ``sections=`` an int, ``indices=`` a list of ints, ``tensor_indices_or_sections=`` a tensor.)
TORCH_METHOD_KEYWORDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "addmm": (("mat1",), ("mat2",)),
    "addmv": (("mat",), ("vec",)),
    "baddbmm": (("batch1",), ("batch2",)),
    "where": (("condition",), ("other",)),
    "swapaxes": (("axis0",), ("axis1",)),
}


def _torch_keywords(function: Any, leading: tuple[tuple[str, ...], ...]) -> Any:
    """``function`` as a method that takes its leading arguments by PyTorch's names too
    (``leading``), passing them on by position: whatever ``function`` names them."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # (a call with none costs one more frame, nothing else)
            args = _by_position(args, kwargs, leading)
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = getattr(function, "__name__", "method")
    method.__doc__ = function.__doc__
    return method


def _by_position(args: tuple, kwargs: dict, leading: tuple[tuple[str, ...], ...]) -> tuple:
    """``args`` with the arguments of ``leading`` that follow them taken out of ``kwargs``
    (the call's own dict), up to the first that is not there."""
    taken = list(args)
    for names in leading[len(args) :]:
        found = [name for name in names if name in kwargs]
        if len(found) != 1:  # none (then the rest are keywords of function's own), or two
            break
        taken.append(kwargs.pop(found[0]))
    return tuple(taken)


for _name, _leading in TORCH_METHOD_KEYWORDS.items():
    for _form in (_name, _name + "_"):
        if _form in _METHODS:
            _METHODS[_form] = _torch_keywords(_METHODS[_form], _leading)

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)


def _reversed_axes(x: Tensor) -> Tensor:
    # also of 0-d and 1-d tensors a view of its own (PyTorch's permute), not ``x`` itself
    if len(x.shape) != 2:
        warnings.warn(_T_NOT_2D[min(x.ndim, 1)], UserWarning, stacklevel=2)
    perm = tuple(range(x.ndim - 1, -1, -1))
    out = apply("permute", x.backend.permute(x.native, perm), x.dtype, (x,), perm)
    return views.permuted(x, out, perm)


def _swap_last_two(x: Tensor) -> Tensor:
    if x.ndim < 2:
        return _below_two_dims(x, "mT", 3)
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    out = apply("permute", x.backend.permute(x.native, perm), x.dtype, (x,), perm)
    if out._node is not None:  # (set here: a linear layer's transpose is hot)
        out._node.label = "TransposeBackward0"  # PyTorch's op
    return views.permuted(x, out, perm)


#: PyTorch's deprecation warnings for ``x.T`` of a 0-d tensor, and of one of 1 or 3+ dims.
_T_NOT_2D = (
    "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
    "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
    "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
    "dimensions of a tensor.",
)

#: PyTorch's deprecation warnings for a 0-d tensor's matrix transposes.
_ON_0D = {
    "mT": "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
    "mH": "Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().",
    "adjoint()": "adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
}


def _below_two_dims(x: Tensor, name: str, stacklevel: int) -> Tensor:
    """``x.mT``, ``x.mH``, ``x.adjoint()`` (``name``) of an ``x`` with fewer than two dimensions,
    as PyTorch: an error for 1-d; for 0-d a deprecation warning, then x (mH, adjoint: its
    conjugate)."""
    if x.ndim == 1:
        raise RuntimeError(
            f"tensor.{name} is only supported on matrices or batches of matrices. Got 1-D "
            "tensor; add a dimension with unsqueeze() to make it one"
        )
    warnings.warn(_ON_0D[name], UserWarning, stacklevel=stacklevel)
    return cx.conj(x) if name != "mT" and x.dtype.is_complex else x


# Direct permutes (they run in every linear layer), as views.
Tensor.T = property(_reversed_axes)
Tensor.mT = property(_swap_last_two)
Tensor.is_cuda = _is_kind(*registry.KIND_ALIASES["cuda"])  # PyTorch: ROCm is "cuda" too
Tensor.is_cpu = _is_kind("cpu")
Tensor.is_mps = _is_kind("mps")
Tensor.is_xpu = _is_kind("xpu")
Tensor.is_meta = False  # no meta device: every tensor holds data
Tensor.layout = strided


def _conj_transpose(x: Tensor) -> Tensor:
    if x.ndim not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {x.ndim}-D tensor. "
            "For batches of matrices, use tensor.mH"
        )
    # a conjugate view of the transpose, as PyTorch's
    return cx.conj(labelled(_reversed_axes(x), "TransposeBackward0", x))


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (``torch.adjoint``)."""
    if input.ndim < 2:
        return _below_two_dims(input, "adjoint()", 3)
    return cx.conj(_swap_last_two(input))  # a conjugate view of the transpose, as PyTorch's


def _mH(x: Tensor) -> Tensor:
    """``x.mH``: ``adjoint(x)``, with its own name in the warning and error of a 0-d/1-d x."""
    if x.ndim < 2:
        return _below_two_dims(x, "mH", 3)
    return cx.conj(_swap_last_two(x))


def _abs_(self: Tensor) -> Tensor:
    if self.dtype.is_complex:  # |z| is real: it cannot be written into a complex tensor
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return self._assign(ew.abs(self._inplace_source()), "abs_")


def _complex(self: Tensor) -> complex:
    return complex(self._python_number("complex"))


Tensor.H = property(_conj_transpose)
Tensor.mH = property(_mH)
Tensor.adjoint = adjoint
Tensor.abs_ = Tensor.absolute_ = _abs_
Tensor.__complex__ = _complex
Tensor.cfloat = _dtype_method("cfloat", dtypes.complex64)
Tensor.cdouble = _dtype_method("cdouble", dtypes.complex128)
Tensor.real = property(views.real)  # views: writes reach the complex tensor


def _retains_grad(self: Tensor) -> bool:
    # (a flag of the tensor, set by retain_grad(), as PyTorch's: it stays when the tensor's
    # node changes, is dropped by detach_ or is a base's change's invalid history)
    return _retaining(self)


Tensor.imag = property(views.imag)
Tensor.retains_grad = property(_retains_grad)
Tensor.is_shared = lambda self: False  # no shared-memory tensors for worker processes
Tensor.is_distributed = lambda self: False
