"""The globals a weights-only ``torch.save`` checkpoint names, each mapped to a TensorWeaver
constructor: the whole allow-list of :mod:`.torch_checkpoint` (PyTorch's own
``weights_only`` list, less sparse, quantized, nested and subclass tensors).

A tensor is not made while the pickle is read: ``_rebuild_tensor_v2`` gives a
:class:`TensorRecord` (its storage, offset, sizes, strides), so that once every tensor is
known those sharing a storage can be made views of one TensorWeaver tensor.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pickle import UnpicklingError  # the exception type only: nothing here unpickles
from typing import Any, Optional

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.serialization.torch_pickle import Constructor

# torch's dtype names (and aliases) of the dtypes TensorWeaver has.
DTYPES: dict[str, DType] = {
    **{d.name: d for d in dtypes.ALL},
    "float": dtypes.float32,
    "double": dtypes.float64,
    "half": dtypes.float16,
    "cfloat": dtypes.complex64,
    "cdouble": dtypes.complex128,
    "long": dtypes.int64,
    "int": dtypes.int32,
    "short": dtypes.int16,
}
# torch's storage classes → the dtype of their elements (UntypedStorage: bytes).
STORAGES: dict[str, DType] = {
    "FloatStorage": dtypes.float32,
    "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16,
    "BFloat16Storage": dtypes.bfloat16,
    "ComplexFloatStorage": dtypes.complex64,
    "ComplexDoubleStorage": dtypes.complex128,
    "LongStorage": dtypes.int64,
    "IntStorage": dtypes.int32,
    "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8,
    "ByteStorage": dtypes.uint8,
    "BoolStorage": dtypes.bool_,
    "UntypedStorage": dtypes.uint8,
}


# torch's dtypes TensorWeaver lacks: a tensor of one is refused by its dtype's name.
MISSING_DTYPES = (
    "uint16", "uint32", "uint64", "complex32", "chalf", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
)  # fmt: skip


@dataclass(frozen=True)
class MissingDType:
    """A torch dtype TensorWeaver does not have."""

    name: str


@dataclass(frozen=True)
class StorageType:
    """A storage class named by a persistent id."""

    dtype: DType


@dataclass(eq=False)
class Storage:
    """One ``archive/data/<key>`` record: ``numel`` elements of ``dtype``, saved at
    ``location`` (``"cpu"``, ``"cuda:0"``); ``uses`` counts the tensors over it."""

    key: str
    dtype: DType
    location: str
    numel: int
    uses: int = 0


@dataclass(eq=False)
class TensorRecord:
    """A tensor to make: ``size``/``stride``/``offset`` in elements of ``storage``."""

    storage: Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    requires_grad: bool


@dataclass(eq=False)
class ParameterRecord:
    """An ``nn.Parameter`` to make around ``data``."""

    data: TensorRecord
    requires_grad: bool


class _TensorType:
    """``torch.Tensor`` or ``torch.nn.Parameter`` named as a type (``_rebuild_from_type_v2``)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _rebuild_tensor(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any = False,
    hooks: Any = None,
    metadata: Any = None,
) -> TensorRecord:
    if not isinstance(storage, Storage):
        raise TypeError("the first argument is not a storage")
    if not (type(offset) is int and _ints(size) and _ints(stride) and len(size) == len(stride)):
        raise TypeError(f"offset {offset!r:.40}, size {size!r:.80}, stride {stride!r:.80}")
    if not isinstance(requires_grad, bool):
        raise TypeError(f"requires_grad must be a bool, got {requires_grad!r:.40}")
    _no_state("backward hooks", hooks)
    _no_state("tensor metadata", metadata)
    storage.uses += 1
    return TensorRecord(storage, offset, tuple(size), tuple(stride), requires_grad)


def _rebuild_tensor_v3(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any,
    hooks: Any,
    dtype: Any,
    *metadata: Any,
) -> TensorRecord:
    # torch writes this form only for dtypes without a typed storage class (uint16, float8,
    # ...), none of which TensorWeaver has
    name = dtype.name if isinstance(dtype, MissingDType) else repr(dtype)
    raise UnpicklingError(
        f"tw.load: the checkpoint holds a tensor of dtype torch.{name}, which TensorWeaver does "
        "not have; convert it before torch.save (e.g. t.to(torch.int64) or t.float())"
    )


def _rebuild_parameter(
    data: Any, requires_grad: Any, hooks: Any, state: Any = None
) -> ParameterRecord:
    if not isinstance(data, TensorRecord) or not isinstance(requires_grad, bool):
        raise TypeError("a Parameter needs a tensor and a bool requires_grad")
    _no_state("backward hooks", hooks)
    _no_state("Parameter attributes", state)
    return ParameterRecord(data, requires_grad)


def _rebuild_from_type(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if not (isinstance(func, Constructor) and isinstance(new_type, _TensorType)):
        raise TypeError("_rebuild_from_type_v2 rebuilds only tensors")
    if new_type.name != "torch.Tensor":
        raise TypeError(f"a {new_type.name} subclass tensor is not rebuilt")
    _no_state("tensor attributes", state)
    return func.build(*args)


def _no_state(what: str, value: Any) -> None:
    """Hooks and Python attributes of a tensor are code or objects: only empty ones load."""
    if value:
        raise UnpicklingError(
            f"tw.load: the checkpoint gives a tensor {what} ({value!r:.80}); tw.load reads "
            "only tensors' values. Save the tensors without them (torch.save(t.detach()))"
        )


def _ints(values: Any) -> bool:
    return isinstance(values, tuple) and all(type(n) is int for n in values)


def _size(values: Any) -> Any:
    import tensorweaver as tw

    if not _ints(values):
        raise TypeError("torch.Size holds ints")
    return tw.Size(values)


def _device(*args: Any) -> Any:
    import tensorweaver as tw

    if not all(isinstance(a, (str, int)) for a in args):
        raise TypeError("torch.device takes a string and an index")
    return tw.device(*args)


def _bytes(text: Any, encoding: Any = "latin1") -> bytes:
    # protocol 2 writes a bytes object as _codecs.encode(its latin-1 text, "latin1")
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise TypeError("_codecs.encode rebuilds bytes from latin-1 text only")
    return text.encode("latin1")


def _container(kind: type) -> Constructor:
    def build(*args: Any) -> Any:
        if len(args) > 1 or (args and not isinstance(args[0], (list, tuple, dict))):
            raise TypeError(f"{kind.__name__} takes one list, tuple or dict")
        return kind(*args)

    return Constructor(kind.__name__, build)


def _complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise TypeError("complex takes two numbers")
    return complex(real, imag)


def _constructors() -> dict[str, Any]:
    found: dict[str, Any] = {
        "torch._utils._rebuild_tensor_v2": Constructor("_rebuild_tensor_v2", _rebuild_tensor),
        "torch._utils._rebuild_tensor": Constructor("_rebuild_tensor", _rebuild_tensor),
        "torch._utils._rebuild_tensor_v3": Constructor("_rebuild_tensor_v3", _rebuild_tensor_v3),
        "torch._utils._rebuild_parameter": Constructor("_rebuild_parameter", _rebuild_parameter),
        "torch._utils._rebuild_parameter_with_state": Constructor(
            "_rebuild_parameter_with_state", _rebuild_parameter
        ),
        "torch._tensor._rebuild_from_type_v2": Constructor(
            "_rebuild_from_type_v2", _rebuild_from_type
        ),
        "torch.Tensor": _TensorType("torch.Tensor"),
        "torch.nn.parameter.Parameter": _TensorType("torch.nn.Parameter"),
        "torch.Size": Constructor("torch.Size", _size),
        "torch.device": Constructor("torch.device", _device),
        "collections.OrderedDict": _container(collections.OrderedDict),
        "collections.Counter": _container(collections.Counter),
        "_codecs.encode": Constructor("_codecs.encode", _bytes),
        "torch.storage.UntypedStorage": StorageType(STORAGES["UntypedStorage"]),
    }
    found["builtins.set"] = _container(set)
    found["builtins.bytearray"] = Constructor("bytearray", lambda *a: bytearray(_bytes(*a)))
    found["builtins.complex"] = Constructor("complex", _complex)
    found.update({f"torch.{name}": StorageType(d) for name, d in STORAGES.items()})
    found.update({f"torch.{name}": d for name, d in DTYPES.items()})
    found.update({f"torch.{name}": MissingDType(name) for name in MISSING_DTYPES})
    return found


ALLOWED = _constructors()


def full_name(module: str, name: str) -> str:
    """``module.name``, with protocol 2's Python 2 module names spelled as Python 3's."""
    return f"{_PYTHON3_NAMES.get(module, module)}.{name}"


def find(module: str, name: str) -> Optional[Any]:
    """What the global ``module.name`` of a torch checkpoint stands for; None if not allowed."""
    return ALLOWED.get(full_name(module, name))


_PYTHON3_NAMES = {"__builtin__": "builtins", "copy_reg": "copyreg"}
