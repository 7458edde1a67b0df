"""Mixed precision: ``with tw.autocast("bf16"):`` and dynamic loss scaling for fp16.

Inside an autocast block, the ops on PyTorch's lower-precision list (matrix products, the
convolution and attention composites, ``prelu``) compute in the low-precision dtype, those on
its CPU float32 list (losses, 3-d pools, :data:`CPU_FLOAT32`) in float32, and everything else
keeps its own dtype, so float32 parameters stay the master weights and type promotion brings
results back to float32 where they meet them (bias adds, norms). ``fp16`` gradients can
underflow:
:class:`GradScaler` scales the loss up and the gradients back down, skipping steps whose
gradients overflowed.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Iterable, Iterator
from contextvars import ContextVar, Token
from typing import Any, Callable

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

#: Precision names users pass (``fit(precision=...)``, ``autocast(...)``).
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16")
_LOW: dict[str, DType] = {"bf16": dtypes.bfloat16, "fp16": dtypes.float16}

_autocast: ContextVar[DType | None] = ContextVar("tensorweaver_autocast", default=None)

#: The hot path reads the autocast dtype (None outside a block) through this bound method.
autocast_dtype = _autocast.get


def check_precision(precision: str, backend: Any) -> None:
    """A clear error when ``backend``'s device cannot compute in ``precision``."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    name = backend.device.name
    wanted = {"fp64": dtypes.float64, "fp32": dtypes.float32, "tf32": dtypes.float32}.get(
        precision, _LOW.get(precision)
    )
    if wanted not in backend.dtypes:
        raise ValueError(
            f"precision {precision!r} is not available on {name}: it has no {wanted.name}; "
            + (
                "use fp32 or fp16 there, or a torch device (tw.set_backend('torch'))"
                if precision == "bf16"
                else "use fp32"
            )
        )
    if precision == "tf32" and not getattr(backend, "has_tf32", False):
        raise ValueError(
            f"precision 'tf32' needs tensor cores (a CUDA device of the torch backend); "
            f"{name} has none: use fp32"
        )


#: PyTorch's device types: ``autocast("cuda")`` applies to the current device, whatever it is.
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "privateuseone")
#: PyTorch's default autocast dtype per device type (``torch.get_autocast_dtype``).
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "hpu": dtypes.bfloat16, "xla": dtypes.bfloat16}
_PRECISION_OF = {
    dtypes.bfloat16: "bf16",
    dtypes.float16: "fp16",
    dtypes.float32: "fp32",
    dtypes.float64: "fp64",
}

#: Per device type, the autocast state ``(enabled, dtype)`` where it is not the default.
_states: ContextVar[dict[str, tuple[bool, DType]] | None] = ContextVar(
    "tensorweaver_autocast_states", default=None
)
_cache: ContextVar[bool] = ContextVar("tensorweaver_autocast_cache", default=True)


def _state(device_type: str) -> tuple[bool, DType]:
    return (_states.get() or {}).get(device_type) or (
        False,
        _DEFAULT_DTYPE.get(device_type, dtypes.float16),
    )


def _set_state(device_type: str, enabled: bool, dtype: DType) -> list:
    """Record ``device_type``'s state and what the hot path reads: tokens to undo both.

    The hot path reads one dtype: ``device_type``'s when it is on, else that of another
    device type still on (switching the CUDA state off or its dtype inside a CPU block
    leaves the CPU block in force, as PyTorch's per-device states), else None."""
    states = {**(_states.get() or {}), device_type: (enabled, dtype)}
    hot = dtype if enabled else next((d for on, d in states.values() if on), None)
    return [_states.set(states), _autocast.set(hot)]


#: PyTorch's CPU autocast float32 list (``AutocastCPU`` ``fp32`` in ATen's autocast_mode.cpp)
#: by the TensorWeaver functions where those ops enter (``pad_reflect``: ``F.pad`` in that
#: mode): inside a CPU autocast block they take their float16 and bfloat16 tensors in
#: float32 (:func:`float32_operands`). tests/amp/test_sweep_amp.py compares each with
#: PyTorch; those whose entry still lacks the cast are strict xfails there.
CPU_FLOAT32 = frozenset(
    (
        # losses (nn.functional)
        "mse_loss l1_loss smooth_l1_loss huber_loss nll_loss cross_entropy "
        "binary_cross_entropy binary_cross_entropy_with_logits kl_div poisson_nll_loss "
        "cosine_embedding_loss margin_ranking_loss soft_margin_loss triplet_margin_loss "
        "hinge_embedding_loss multi_margin_loss multilabel_margin_loss ctc_loss "
        # pools, padding and sampling (nn.functional)
        "avg_pool3d max_pool3d max_pool3d_with_indices adaptive_avg_pool3d adaptive_max_pool3d "
        "adaptive_max_pool3d_with_indices fractional_max_pool2d fractional_max_pool3d "
        "fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices max_unpool2d "
        "max_unpool3d pad_reflect pad_replicate grid_sample "
        # reductions, distances, linear algebra, transforms
        "prod quantile nanquantile cdist trace inverse pinverse qr svd cholesky "
        "cholesky_inverse cholesky_solve lu_solve orgqr ormqr triangular_solve "
        "linalg.inv linalg.inv_ex linalg.solve linalg.cholesky linalg.cholesky_ex linalg.qr "
        "linalg.svd linalg.svdvals linalg.eig linalg.eigh linalg.eigvals linalg.eigvalsh "
        "linalg.lstsq linalg.cond linalg.matrix_rank linalg.householder_product "
        "linalg.tensorinv linalg.tensorsolve fft.fft fft.ifft fft.fft2 fft.ifft2 fft.fftn "
        "fft.ifftn fft.rfft fft.irfft fft.rfft2 fft.irfft2 fft.rfftn fft.irfftn fft.hfft "
        "fft.ihfft stft polar view_as_complex"
    ).split()
)


def float32_operands(*tensors: Any) -> tuple:
    """``tensors`` as PyTorch's autocast passes them to an op on its float32 list: float16
    and bfloat16 tensors in float32, everything else (None, integers, float64) as given."""
    from tensorweaver.ops.elementwise import cast
    from tensorweaver.tensor import Tensor

    return tuple(
        cast(t, dtypes.float32)
        if isinstance(t, Tensor) and t.dtype.kind == "f" and t.dtype.itemsize == 2
        else t
        for t in tensors
    )


def outside_autocast(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` with the ops' autocast dtype off: an op PyTorch's autocast leaves in its
    inputs' dtype (``dot``, ``mv``) that TensorWeaver builds from one it casts (``matmul``)."""
    token = _autocast.set(None)
    try:
        return fn(*args)
    finally:
        _autocast.reset(token)


def autocast_state() -> tuple:
    """The autocast state now, every device type's, for :func:`autocast_state_restored`."""
    return _states.get(), _autocast.get(), _cache.get()


@contextlib.contextmanager
def autocast_state_restored(state: tuple | None) -> Iterator[None]:
    """Run a block under ``state`` (from :func:`autocast_state`; None: the current one):
    activation checkpointing recomputes under its forward's state, as PyTorch's."""
    if state is None:
        yield
        return
    tokens = [var.set(value) for var, value in zip((_states, _autocast, _cache), state)]
    try:
        yield
    finally:
        for token in reversed(tokens):
            token.var.reset(token)


def _device_type(device_type: str) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"expected device_type to be a string such as 'cpu', got {device_type!r}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ``tw.autocast(device_type)`` exists (PyTorch's device types)."""
    return _device_type(device_type) in _TORCH_DEVICE_TYPES


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` (PyTorch's no-argument form asks of CUDA)."""
    return _state(_device_type(device_type))[0]


def get_autocast_dtype(device_type: str) -> DType:
    """The dtype autocast computes in on ``device_type`` (bfloat16 on CPU, else float16)."""
    return _state(_device_type(device_type))[1]


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Turn autocast on or off for ``device_type`` outside a ``with`` block; PyTorch's
    one-argument form ``set_autocast_enabled(enabled)`` means CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", bool(device_type)
    _set_state(device_type, bool(enabled), get_autocast_dtype(device_type))


def set_autocast_dtype(device_type: str, dtype: DType) -> None:
    """The dtype autocast computes in on ``device_type`` from now on."""
    if dtype not in _PRECISION_OF:
        raise ValueError(
            f"set_autocast_dtype: {dtype!r} is not a floating-point dtype; use tw.bfloat16 or "
            "tw.float16"
        )
    _set_state(device_type, is_autocast_enabled(device_type), dtype)


def _per_device_alias(name: str, replacement: Callable, device_type: str, arg: str = "") -> Any:
    """PyTorch's deprecated per-device spelling ``name(arg)`` of
    ``replacement(device_type, arg)``, warning as PyTorch's does."""
    spelled = f"{replacement.__name__}({device_type!r}{', ' + arg if arg else ''})"

    def alias(*values: Any) -> Any:
        warnings.warn(
            f"tw.{name}({arg}) is deprecated. Please use tw.{spelled} instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return replacement(device_type, *values)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"Deprecated, as in PyTorch: ``tw.{spelled}``."
    return alias


is_autocast_cpu_enabled = _per_device_alias("is_autocast_cpu_enabled", is_autocast_enabled, "cpu")
set_autocast_cpu_enabled = _per_device_alias(
    "set_autocast_cpu_enabled", set_autocast_enabled, "cpu", "enabled"
)
get_autocast_cpu_dtype = _per_device_alias("get_autocast_cpu_dtype", get_autocast_dtype, "cpu")
set_autocast_cpu_dtype = _per_device_alias(
    "set_autocast_cpu_dtype", set_autocast_dtype, "cpu", "dtype"
)
get_autocast_gpu_dtype = _per_device_alias("get_autocast_gpu_dtype", get_autocast_dtype, "cuda")
set_autocast_gpu_dtype = _per_device_alias(
    "set_autocast_gpu_dtype", set_autocast_dtype, "cuda", "dtype"
)


def is_autocast_cache_enabled() -> bool:
    """PyTorch's cast-cache switch; TensorWeaver keeps no cache, so it only reports it."""
    return _cache.get()


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Set the switch :func:`is_autocast_cache_enabled` reports."""
    _cache.set(bool(enabled))


def clear_autocast_cache() -> None:
    """PyTorch empties its cast cache here; there is none to empty."""


def _precision(device_type: str, dtype: DType | None, device: Any) -> tuple[str, Any]:
    """The precision name and device for ``autocast(device_type, dtype, device=device)``."""
    if dtype is not None and dtype not in _PRECISION_OF:
        raise ValueError(
            f"autocast: dtype {dtype!r} is not a floating-point dtype; use tw.bfloat16 or "
            "tw.float16"
        )
    if device_type in PRECISIONS:
        if dtype is not None:
            raise ValueError(
                f"autocast: give either a precision ({device_type!r}) or dtype=, not both"
            )
        return device_type, device
    if device_type not in _TORCH_DEVICE_TYPES:
        if device is not None:  # then the first argument can only be a precision
            return device_type, device
        device = _device_spec(device_type)
    elif device is None and device_type != "cpu":
        device = _gpu_of_kind(device_type)
    return _PRECISION_OF[dtype or get_autocast_dtype(device_type)], device


def _gpu_of_kind(kind: str) -> str | None:
    """``kind`` ("cuda") when a backend provides such a device, so that ``autocast("cuda")``
    checks the GPU's dtypes; None (the current device) on a machine without one."""
    from tensorweaver.errors import DeviceNotFoundError
    from tensorweaver.selection import backend_of

    try:
        backend_of(kind)
    except DeviceNotFoundError:
        return None
    return kind


def _device_spec(name: str) -> str:
    from tensorweaver.errors import UnknownBackendError
    from tensorweaver.registry import backend_object

    try:
        backend_object(name)
    except UnknownBackendError:
        raise ValueError(
            f"autocast: {name!r} is not a device type ({', '.join(_TORCH_DEVICE_TYPES[:2])}), "
            f"a TensorWeaver device ('numpy', 'torch:cpu') or a precision "
            f"({', '.join(PRECISIONS)})"
        ) from None
    return name


class autocast:  # noqa: N801 - PyTorch's name
    """Compute matrix products in low precision on the current device: a ``with`` block or a
    decorator, reusable and re-entrant as PyTorch's.

    As PyTorch's ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``:
    ``device_type`` is ``"cpu"``/``"cuda"`` (default dtype bfloat16 for ``"cpu"``, float16
    otherwise) or a TensorWeaver device spec. ``"cpu"`` holds for every CPU backend, as
    PyTorch's one CPU: entering never checks the current backend's dtypes, and an op whose
    tensors' backend lacks the dtype (NumPy has no bfloat16) raises where it casts to it.
    A device spec, a GPU or ``device=`` is checked on entering. ``device_type`` may also be a
    precision name (``"bf16"``, ``"fp16"``; ``"tf32"`` turns on TF32 tensor cores;
    ``"fp32"``/``"fp64"`` change nothing).
    ``enabled=False`` turns autocast off inside the block. On ``"cpu"`` a dtype other than
    bfloat16 or float16 warns and disables the block, as PyTorch. ``cache_enabled`` sets what
    :func:`is_autocast_cache_enabled` reports (there is no cast cache to keep).
    """

    def __init__(
        self,
        device_type: str = "bf16",
        dtype: DType | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
        *,
        device: Any = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if (
            enabled
            and device_type == "cpu"
            and dtype not in (None, dtypes.bfloat16, dtypes.float16)
        ):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self.device = device_type
        if dtype is None and device_type in _TORCH_DEVICE_TYPES:
            dtype = get_autocast_dtype(device_type)  # as PyTorch: the current one, when built
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        self._where = device
        self._undo: list[list] = []  # one entry per active ``with``: re-entrant

    def __enter__(self) -> autocast:
        undo: list = []
        if not self._enabled:
            kind = _kind_of(self.device, self._where)
            undo += _set_state(kind, False, self.fast_dtype or get_autocast_dtype(kind))
            self._undo.append(self._cached(undo))
            return self
        from tensorweaver.ops.creation import backend_for

        precision, device = _precision(self.device, self.fast_dtype, self._where)
        if self.device == "cpu" and device is None and precision in _LOW:
            # PyTorch has one CPU: the block holds for every CPU backend, whatever the current
            # one. An op whose tensors' backend lacks the dtype raises where it casts to it
            # (naming the device and the dtypes it has), not here.
            undo += _set_state("cpu", True, _LOW[precision])
            self._undo.append(self._cached(undo))
            return self
        backend = backend_for(device)
        check_precision(precision, backend)  # before any state changes: nothing to undo
        kind = self.device if self.device in _TORCH_DEVICE_TYPES else backend.device.kind
        if precision == "tf32":
            backend.set_tf32(True)
            undo.append(backend)
        elif precision in _LOW:
            undo += _set_state(kind, True, _LOW[precision])
        else:  # "fp32"/"fp64": full precision inside, also within a low-precision block
            undo += _set_state(kind, False, get_autocast_dtype(kind))
        self._undo.append(self._cached(undo))
        return self

    def _cached(self, undo: list) -> list:
        """``undo`` plus the token of this block's ``cache_enabled`` switch, if it sets one."""
        if self._cache_enabled is not None:
            undo.append(_cache.set(bool(self._cache_enabled)))
        return undo

    def __exit__(self, *exc: Any) -> None:
        for item in reversed(self._undo.pop()):
            if isinstance(item, Token):
                item.var.reset(item)
            else:  # the backend whose TF32 switch this block turned on
                item.set_tf32(False)

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}; to "
                "compute a block in low precision write `with tw.autocast(device_type=...):`"
            )

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return run


def _kind_of(device_type: str, device: Any) -> str:
    """The PyTorch device type whose state a disabled block records."""
    if device_type in _TORCH_DEVICE_TYPES:
        return device_type
    from tensorweaver.ops.creation import backend_for

    return backend_for(
        device if device is not None or device_type in PRECISIONS else device_type
    ).device.kind


def _cast_inputs(value: Any, dtype: DType) -> Any:
    """``value`` with its floating-point tensors (not float64), also inside lists, tuples and
    dicts, in ``dtype``: what ``custom_fwd(cast_inputs=...)`` passes on."""
    from tensorweaver.tensor import Tensor

    if isinstance(value, Tensor):
        floating = value.dtype.kind == "f" and value.dtype is not dtypes.float64
        return value.to(dtype) if floating else value
    if isinstance(value, dict):
        return {k: _cast_inputs(v, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, dtype) for v in value)
    return value


def custom_fwd(
    fwd: Callable | None = None, *, device_type: str, cast_inputs: DType | None = None
) -> Callable:
    """Decorate a ``tw.autograd.Function``'s ``forward`` as PyTorch's: with ``cast_inputs``, an
    autocast-enabled forward runs with autocast off on inputs cast to ``cast_inputs``;
    without it the forward runs in the surrounding autocast state, and :func:`custom_bwd`
    gives ``backward`` the same state."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_inputs(args, cast_inputs), **_cast_inputs(kwargs, cast_inputs))

    return forward


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorate a ``tw.autograd.Function``'s ``backward``: it runs in the autocast state its
    :func:`custom_fwd` forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return backward


_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


def _cuda_available() -> bool:
    from tensorweaver import cuda

    return cuda.is_available()


def _float32(value: float) -> float:
    """``value`` rounded to float32: PyTorch keeps the scale in a float32 tensor."""
    return float(np.float32(value))


class GradScaler:
    """Dynamic loss scaling for fp16 training, as ``torch.amp.GradScaler``.

    ``scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()``: the step is
    skipped when a gradient is inf or NaN, and the scale then shrinks by ``backoff_factor``;
    after ``growth_interval`` clean steps in a row it grows by ``growth_factor`` (unless that
    overflows float32). A disabled scaler (``enabled=False``, or ``"cuda"`` where there is no
    CUDA: it warns then, as PyTorch's) passes everything through.
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        # ``device`` is PyTorch's (``GradScaler("cuda")``): scaling runs on the gradients'
        # own device, so it only names where the user trains.
        if not isinstance(device, str):
            raise TypeError(
                f"GradScaler: device must be a string such as 'cuda' or 'cpu', got {device!r}; "
                "pass the scale by keyword: GradScaler(init_scale=...)"
            )
        self._device = device
        if device == "cuda" and enabled and not _cuda_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = enabled
        if enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: float | None = None  # set by the first scale(), as PyTorch's
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    def _optimizer_state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def _check_scaled(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                "not use scaler.scale(loss or outputs) earlier in the iteration."
            )

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists and tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        from tensorweaver.ops.creation import tensor
        from tensorweaver.tensor import Tensor

        if self._scale is None:
            self._scale = _float32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker

        def apply(value: Any) -> Any:
            if isinstance(value, Tensor):
                # A float32 0-d tensor, as PyTorch's: a 0-d float16 loss is scaled in float32
                # (where 2**16 times it does not overflow), others keep their dtype.
                return value * tensor(self._scale, dtype=dtypes.float32, device=value.device)
            if isinstance(value, Iterable):
                scaled = map(apply, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, once per step, noting any
        inf or NaN with a single read back from the device."""
        if not self._enabled:
            return
        self._check_scaled("unscale_")
        state = self._optimizer_state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from tensorweaver.autograd.mode import no_grad
        from tensorweaver.ops.movement import stack

        # The reciprocal in float64, then float32, as PyTorch.
        inverse = _float32(1.0 / self._scale)
        finite = []
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype is dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    finite.append(p.grad.isfinite().all())  # before unscaling, as PyTorch
                    p.grad.mul_(inverse)
        if finite:
            state["found_inf"] = not bool(stack(finite).all())
        state["stage"] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, skipped (None) when
        one of them is inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scaled("step")
        state = self._optimizer_state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: Any = None) -> None:
        """Shrink the scale after a skipped step, grow it after ``growth_interval`` clean
        ones; or set it to ``new_scale`` (a float or a 0-d tensor)."""
        if not self._enabled:
            return
        self._check_scaled("update")
        if new_scale is not None:
            if not isinstance(new_scale, float):
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                if new_scale.dim():  # PyTorch copies it into its 0-d scale
                    raise RuntimeError(
                        "output with shape [] doesn't match the broadcast shape "
                        f"{list(new_scale.shape)}"
                    )
                new_scale = new_scale.item()
            self._scale = _float32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values()]
            found = [f for f in found if f is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale = _float32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _float32(self._scale * self._growth_factor)
                if math.isfinite(grown):  # a float32 overflow keeps the scale, as PyTorch
                    self._scale = grown
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._scale is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker``; empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state :meth:`state_dict` returned (nothing when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a "
                "disabled instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = _float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            self._growth_tracker = self._init_growth_tracker


def deprecated_spellings(device_type: str, dtype: DType) -> tuple[Callable[..., autocast], type]:
    """``torch.<device_type>.amp``'s ``autocast`` (default dtype ``dtype``) and
    ``GradScaler``: this module's for ``device_type``, with PyTorch's FutureWarning
    (``tw.cpu.amp``, ``tw.cuda.amp``)."""
    module = f"tensorweaver.{device_type}.amp"

    def old_autocast(
        enabled: bool = True, dtype: Any = dtype, cache_enabled: bool = True
    ) -> autocast:
        warnings.warn(
            f"`torch.{device_type}.amp.autocast(args...)` is deprecated. "
            f"Please use `torch.amp.autocast('{device_type}', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class OldGradScaler(GradScaler):
        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
        ) -> None:
            warnings.warn(
                f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. "
                f"Please use `torch.amp.GradScaler('{device_type}', args...)` instead.",
                FutureWarning,
                stacklevel=2,
            )
            super().__init__(
                device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled
            )

    old_autocast.__doc__ = (
        f'``tw.amp.autocast("{device_type}", dtype=dtype, enabled=enabled)``, with PyTorch\'s '
        "warning."
    )
    OldGradScaler.__doc__ = (
        f'``tw.amp.GradScaler("{device_type}", ...)``, with PyTorch\'s deprecation warning.'
    )
    for made, name in ((old_autocast, "autocast"), (OldGradScaler, "GradScaler")):
        made.__name__ = made.__qualname__ = name
        made.__module__ = module
    return old_autocast, OldGradScaler
