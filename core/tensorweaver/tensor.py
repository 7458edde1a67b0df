"""The Tensor: a backend's native array, its dtype and device, and its place in the graph.

A tensor never computes: its operators and methods are the op functions of
:mod:`tensorweaver.ops`, attached to the class in :mod:`tensorweaver.ops.methods`. The
native array is treated as immutable (the IR is functional), so an in-place method computes
a new array and rebinds it (:meth:`Tensor._assign`); a view taken earlier keeps the old values.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import INPLACE_CHANGES
from tensorweaver.contract.dtypes import DType


class Tensor:
    """An n-dimensional array on one device, with PyTorch's API and autograd."""

    __slots__ = (
        "native",
        "backend",
        "dtype",
        "shape",
        "requires_grad",
        "grad",
        "_node",
        "_version",
        "_alias_of",
        "_view_of",
        "__weakref__",
    )

    def __init__(self, native: Any, backend: Any, dtype: DType) -> None:
        self.native = native
        self.backend = backend
        self.dtype = dtype
        shape = native.shape
        self.shape = shape if type(shape) is tuple else tuple(shape)
        self.requires_grad = False
        self.grad: Tensor | None = None
        self._node = None
        self._version = 0
        self._alias_of: Tensor | None = None
        # (base, write): a view of ``base`` that ``write(base, value)`` updates (ops/views.py)
        self._view_of: tuple | None = None

    # Identity hashing: == is elementwise, as in PyTorch.
    __hash__ = object.__hash__

    # -- facts ------------------------------------------------------------------------------

    @property
    def device(self) -> Any:
        from tensorweaver.selection import device_of

        return device_of(self.backend)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self.shape)
        return self.shape[_axis(dim, len(self.shape), "size")]

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self) -> Any:
        return self._node

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def ndimension(self) -> int:
        return len(self.shape)

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    # -- autograd ---------------------------------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self._node is not None and not requires_grad:
            raise RuntimeError(
                "requires_grad_(False): this tensor is not a leaf (it was computed from "
                "tensors that require grad); use .detach() to get one that does not"
            )
        if requires_grad and not (self.dtype.is_floating_point):
            raise RuntimeError(
                f"only floating-point tensors can require gradients, got {self.dtype.name}; "
                "convert first, e.g. x.float().requires_grad_()"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward."""
        import weakref

        if self._node is None:
            if not self.requires_grad:
                raise RuntimeError("retain_grad() on a tensor that does not require grad")
            return
        self._node.retained = weakref.ref(self)

    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` whenever this tensor's gradient is computed; a tensor the hook
        returns replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        from tensorweaver.autograd.hooks import register_hook

        return register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """Call ``hook(self)`` after backward has accumulated into this leaf's ``.grad``."""
        from tensorweaver.autograd.hooks import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def detach(self) -> Tensor:
        """The same values, cut from the graph. In-place changes to it reach this tensor."""
        out = Tensor(self.native, self.backend, self.dtype)
        out._alias_of = self
        return out

    def detach_(self) -> Tensor:
        self._node = None
        self.requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self.native, self.backend, self.dtype = value.native, value.backend, value.dtype
        self.shape = value.shape
        self._version += 1
        INPLACE_CHANGES[0] += 1

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        from tensorweaver.autograd.engine import backward

        backward(self, gradient, retain_graph, create_graph, inputs)

    # -- in place ---------------------------------------------------------------------------

    def _check_inplace(self) -> None:
        if self.requires_grad and self._node is None and is_grad_enabled():
            raise RuntimeError(
                "a leaf tensor that requires grad is being used in an in-place operation; "
                "wrap the update in `with tw.no_grad():` or work on a .detach()ed copy"
            )

    def _snapshot(self) -> Tensor:
        """A new tensor object for this tensor's current value and graph position."""
        snap = Tensor(self.native, self.backend, self.dtype)
        snap.requires_grad = self.requires_grad
        snap._node = self._node
        snap._version = self._version
        return snap

    def _assign(self, result: Tensor, op: str = "in-place operation") -> Tensor:
        """Make ``result`` this tensor's new value (the end of every in-place method)."""
        if result.shape != self.shape:
            raise RuntimeError(
                f"{op}: the result has shape {result.shape}, which does not "
                f"match the tensor's shape {self.shape} (in-place ops cannot broadcast self)"
            )
        if result.dtype is not self.dtype:
            from tensorweaver.promotion import category

            if category(result.dtype) > category(self.dtype):
                raise RuntimeError(
                    f"{op}: result type {result.dtype.name} can't be cast to "
                    f"the desired output type {self.dtype.name}"
                )
            result = result.to(self.dtype)
        self.native = result.native
        self._node = result._node
        if result.requires_grad:
            self.requires_grad = True
        self._version += 1
        INPLACE_CHANGES[0] += 1
        base = self._alias_of
        if base is not None and base.shape == self.shape and base.dtype is self.dtype:
            base.native = self.native
            base._version += 1
        if self._view_of is not None:
            viewed, write = self._view_of
            write(viewed, self)
        return self

    def _inplace_source(self) -> Tensor:
        """What an in-place method computes from: a frozen copy when the graph needs one."""
        self._check_inplace()
        if self.requires_grad and is_grad_enabled():
            return self._snapshot()
        return self

    # -- host -------------------------------------------------------------------------------

    def numpy(self, *, force: bool = False) -> Any:
        if self.requires_grad and is_grad_enabled() and not force:
            raise RuntimeError(
                "numpy(): this tensor requires grad; call tensor.detach().numpy() "
                "(or numpy(force=True))"
            )
        return self.backend.to_host(self.native)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        host = self.backend.to_host(self.native)
        return host if dtype is None else host.astype(dtype)

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(
                f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                "Python scalar (it needs exactly one element)"
            )
        return self.backend.to_host(self.native).reshape(()).item()

    def tolist(self) -> Any:
        return self.backend.to_host(self.native).tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        from tensorweaver.printing import tensor_repr

        return tensor_repr(self)

    def __format__(self, format_spec: str) -> str:
        # As PyTorch: a 0-d tensor formats its value (f"{loss:.4f}"); any other tensor takes
        # only an empty spec (a non-empty one is a TypeError).
        if not self.shape:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy that shares no state (native arrays are never written, so it may share
        the array itself)."""
        if self._node is not None:
            raise RuntimeError(
                "only tensors created explicitly by the user (graph leaves) support "
                "deepcopy; .detach() it first"
            )
        import copy

        out = Tensor(self.native, self.backend, self.dtype)
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    def __reduce__(self) -> Any:
        raise TypeError(
            "TensorWeaver tensors are not picklable (loading a pickle can run code); "
            "save them with tw.save(...) (safetensors)"
        )

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.native.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.native.__dlpack_device__()


class Size(tuple):
    """A shape, as ``tensor.size()`` returns it (a tuple of ints)."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"tw.Size({list(self)})"


def _axis(dim: int, ndim: int, op: str) -> int:
    """``dim`` made non-negative, or an IndexError that names the op and the valid range."""
    ndim1 = max(ndim, 1)
    if not -ndim1 <= dim < ndim1:
        raise IndexError(
            f"{op}: dimension out of range (expected to be in range of "
            f"[{-ndim1}, {ndim1 - 1}], but got {dim})"
        )
    return dim + ndim1 if dim < 0 else dim
