"""Every primitive of ``tensorweaver.contract.ir`` on torch tensors on one device.

The core guarantees the IR's preconditions (one dtype, equal or 0-d shapes,
normalised axes, in-range int64 indices), so each method is a direct torch call with
no checks; torch broadcasts a 0-d operand itself. Data leaves the device only in
``to_host``. Where torch's own kernel differs from the IR, the method adapts it:

* ``sign``: torch gives 0 for NaN; the IR keeps NaN.
* ``argmax``/``argmin`` and ``cumsum``: torch has no bool kernels.
* ``prod``: torch reduces one axis per call.
* ``matmul``: torch has no bool matmul, and none for integers off the CPU.
* float ``remainder``: torch 2.13's vectorised CPU kernel (8 or more elements) gives NaN
  where ``a / b`` overflows (``1.5 % -1e-45`` in float32), its scalar loop the exact
  answer: where an eager CPU result holds a NaN, those of finite operands are recomputed
  as that loop computes them, all at once (one NaN check otherwise; compiled graphs are
  left to inductor's kernel).

Elsewhere torch already matches the IR: ``floor_divide``/``remainder`` round as
Python's ``//``/``%``, ``round`` is half to even, ``amax``/``amin`` propagate NaN, and
``argmax``/``argmin`` return the first extremum, a NaN counting as one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from tensorweaver.contract import DeviceRecord, DType, dtypes
from torch.fx.experimental.proxy_tensor import get_proxy_mode

from tensorweaver_torch.compile import CompiledGraphs
from tensorweaver_torch.complex import ComplexNumbers
from tensorweaver_torch.devices import torch_device
from tensorweaver_torch.fft import FourierTransforms
from tensorweaver_torch.foreach import ForeachOps
from tensorweaver_torch.fused import LENDING, FusedComposites
from tensorweaver_torch.host import HostMemory
from tensorweaver_torch.linalg import LinearAlgebra
from tensorweaver_torch.special import SpecialFunctions

Tensor = torch.Tensor
Shape = Sequence[int]

TORCH_DTYPES: dict[DType, torch.dtype] = {
    dtypes.bool_: torch.bool,
    dtypes.uint8: torch.uint8,
    dtypes.int8: torch.int8,
    dtypes.int16: torch.int16,
    dtypes.int32: torch.int32,
    dtypes.int64: torch.int64,
    dtypes.float16: torch.float16,
    dtypes.bfloat16: torch.bfloat16,
    dtypes.float32: torch.float32,
    dtypes.float64: torch.float64,
    dtypes.complex64: torch.complex64,
    dtypes.complex128: torch.complex128,
}
#: The NumPy dtype of each dtype's host array (``numpy_name``, native byte order).
_HOST_DTYPES: dict[DType, np.dtype] = {d: np.dtype(d.numpy_name) for d in TORCH_DTYPES}
#: Signed words of each item size, for the branch-free ``where`` (torch's bitwise ops want
#: signed integers).
_WORDS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_BITWISE_WHERE_MIN = 4096  # below this, torch.where's own cost is smaller


def _in_bad_fork(kind: str) -> bool:
    """Whether this process was forked after its parent initialised the ``kind`` runtime."""
    check = getattr(getattr(torch, kind, None), "_is_in_bad_fork", None)
    return bool(check is not None and check())


FLOATS = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
HALVES = frozenset({torch.float16, torch.bfloat16})


def _below(value: float, dtype: torch.dtype) -> float:
    """The largest ``dtype`` number (a 16-bit float type) below ``value``, which it holds."""
    bits = int(torch.tensor(value, dtype=dtype).view(torch.int16))
    if value > 0:
        bits -= 1  # toward zero
    elif value < 0:
        bits += 1  # away from zero
    else:
        bits = -0x7FFF  # 0x8001: the negative number nearest zero
    return float(torch.tensor(bits, dtype=torch.int16).view(dtype))


COMPLEX = frozenset({torch.complex64, torch.complex128})


class TorchBackend(
    FusedComposites,
    HostMemory,
    SpecialFunctions,
    LinearAlgebra,
    ComplexNumbers,
    FourierTransforms,
    ForeachOps,
    CompiledGraphs,
):
    """The backend object for one torch device (a record from ``tw_devices``)."""

    def __init__(self, device: DeviceRecord) -> None:
        self.device = device
        self.torch_device = torch_device(device.kind, device.index)
        on_cpu = self.torch_device.type == "cpu"
        # MPS has no float64, so no complex128.
        self.dtypes = frozenset(
            d
            for d in dtypes.ALL
            if not (device.kind == "mps" and d in (dtypes.float64, dtypes.complex128))
        )
        # torch.matmul has integer kernels only on the CPU, and bool kernels nowhere.
        self._native_matmul = (
            FLOATS
            | COMPLEX
            | (
                {torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64}
                if on_cpu
                else set()
            )
        )
        self._on_cpu = on_cpu
        # TF32 tensor cores: NVIDIA Ampere (compute capability 8.0) and newer.
        self.has_tf32 = (
            self.torch_device.type == "cuda"
            and torch.version.hip is None
            and torch.cuda.get_device_capability(self.torch_device)[0] >= 8
        )
        self._generator = torch.Generator(self.torch_device)
        self._generator.seed()  # a fresh seed per process, as NumPy's default_rng()

    # data
    def from_host(self, array: np.ndarray, dtype: DType) -> Tensor:
        # Converting on the host first covers NumPy dtypes torch lacks; order="C" undoes
        # negative strides, which torch refuses. torch.tensor copies, even read-only arrays.
        # A float too large for the target dtype becomes inf, as in torch, without NumPy's
        # overflow warning. An array that needs no conversion skips the errstate scope
        # (~1 us, a third of tw.tensor(ndarray)'s own cost): asarray returns it as it is.
        host = array
        if (
            type(host) is not np.ndarray
            or host.dtype != _HOST_DTYPES[dtype]
            or not host.flags.c_contiguous
        ):
            with np.errstate(over="ignore"):
                host = np.asarray(array, dtype=dtype.numpy_name, order="C")
        return torch.tensor(host, dtype=TORCH_DTYPES[dtype], device=self.torch_device)

    def set_num_threads(self, n: int) -> None:
        torch.set_num_threads(n)

    def get_num_threads(self) -> int:
        return torch.get_num_threads()

    def to_host(self, a: Tensor) -> np.ndarray:
        if a.dtype is torch.bfloat16:
            return a.float().cpu().numpy()  # a new tensor: the array shares nothing with a
        if self._on_cpu:
            # .numpy() alone would share a's memory; order K keeps its layout (channels-last)
            return a.numpy().copy(order="K")
        return a.cpu().numpy()

    def set_tf32(self, enabled: bool) -> None:
        """Let float32 matmuls and convolutions use TF32 tensor cores (process-wide in torch)."""
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled

    def from_dlpack(self, obj: object) -> Tensor:
        return torch.from_dlpack(obj).to(self.torch_device)

    def full(self, shape: Shape, value: float, dtype: DType) -> Tensor:
        if not shape:  # a scalar operand, backward's root: the same fill, ~0.15 us less
            return torch.scalar_tensor(value, dtype=TORCH_DTYPES[dtype], device=self.torch_device)
        return torch.full(shape, value, dtype=TORCH_DTYPES[dtype], device=self.torch_device)

    def arange(self, start: float, stop: float, step: float, dtype: DType) -> Tensor:
        return torch.arange(start, stop, step, dtype=TORCH_DTYPES[dtype], device=self.torch_device)

    def seed(self, value: int) -> None:
        if self.torch_device.type != "cpu" and _in_bad_fork(self.torch_device.type):
            # A DataLoader worker forked after the parent used the GPU: CUDA cannot be used
            # there, and torch.manual_seed leaves the GPU alone in it too.
            return
        with LENDING:  # not while the generator is lent to torch's (fused._lent)
            self._generator.manual_seed(value)

    def random_uniform(self, shape: Shape, low: float, high: float, dtype: DType) -> Tensor:
        out = torch.empty(shape, dtype=TORCH_DTYPES[dtype], device=self.torch_device)
        out.uniform_(low, high, generator=self._generator)
        if out.dtype in HALVES:
            # torch draws in float32 and rounds to the half type: a draw can land on ``high``
            # itself (torch.rand(dtype=bfloat16) on CUDA gives 1.0); the IR's range is open.
            out.masked_fill_(out >= high, _below(high, out.dtype))
        return out

    def random_normal(self, shape: Shape, mean: float, std: float, dtype: DType) -> Tensor:
        out = torch.empty(shape, dtype=TORCH_DTYPES[dtype], device=self.torch_device)
        return out.normal_(mean, std, generator=self._generator)

    def random_integers(self, shape: Shape, low: int, high: int, dtype: DType) -> Tensor:
        return torch.randint(
            low,
            high,
            shape,
            generator=self._generator,
            dtype=TORCH_DTYPES[dtype],
            device=self.torch_device,
        )

    # API 2.5: the generator's state, torch's bytes (CPU: mt19937's; CUDA: Philox's seed, offset)
    def get_rng_state(self) -> bytes:
        with LENDING:
            return self._generator.get_state().numpy().tobytes()

    def set_rng_state(self, state: bytes) -> None:
        try:
            with LENDING:
                self._generator.set_state(torch.frombuffer(bytearray(state), dtype=torch.uint8))
        except (RuntimeError, ValueError) as exc:  # torch's: a wrong size or an invalid state
            raise ValueError(f"set_rng_state on {self.device.name}: {exc}") from exc

    def cast(self, a: Tensor, dtype: DType) -> Tensor:
        if a.is_complex() and dtype.kind != "c":
            a = torch.real(a)  # what .to keeps, without torch's UserWarning
        return a.to(TORCH_DTYPES[dtype])

    # A primitive that is torch's function with the same arguments is that function itself
    # (a staticmethod): a wrapper's frame cost ~0.1 us, a tenth of the core's cost per op.

    # unary
    neg = staticmethod(torch.neg)

    abs = staticmethod(torch.abs)

    def sign(self, a: Tensor) -> Tensor:
        if a.is_floating_point():
            return torch.where(torch.isnan(a), a, torch.sign(a))
        return torch.sign(a)

    exp = staticmethod(torch.exp)

    log = staticmethod(torch.log)

    sin = staticmethod(torch.sin)

    cos = staticmethod(torch.cos)

    tanh = staticmethod(torch.tanh)

    sqrt = staticmethod(torch.sqrt)

    erf = staticmethod(torch.erf)

    floor = staticmethod(torch.floor)

    ceil = staticmethod(torch.ceil)

    round = staticmethod(torch.round)

    trunc = staticmethod(torch.trunc)

    logical_not = staticmethod(torch.logical_not)

    bitwise_not = staticmethod(torch.bitwise_not)

    # binary
    add = staticmethod(torch.add)

    sub = staticmethod(torch.sub)

    mul = staticmethod(torch.mul)

    div = staticmethod(torch.div)

    floordiv = staticmethod(torch.floor_divide)

    @staticmethod
    def remainder(a: Tensor, b: Tensor) -> Tensor:
        r = torch.remainder(a, b)
        if (
            r.is_floating_point()
            and r.device.type == "cpu"
            and not _tracing()
            and math.isnan(r.sum().item())  # (one op: a NaN anywhere makes the sum NaN)
        ):
            return _remainder_repaired(a, b, r)
        return r

    pow = staticmethod(torch.pow)

    maximum = staticmethod(torch.maximum)

    minimum = staticmethod(torch.minimum)

    eq = staticmethod(torch.eq)

    ne = staticmethod(torch.ne)

    lt = staticmethod(torch.lt)

    le = staticmethod(torch.le)

    gt = staticmethod(torch.gt)

    ge = staticmethod(torch.ge)

    logical_and = staticmethod(torch.logical_and)

    logical_or = staticmethod(torch.logical_or)

    logical_xor = staticmethod(torch.logical_xor)

    bitwise_and = staticmethod(torch.bitwise_and)

    bitwise_or = staticmethod(torch.bitwise_or)

    bitwise_xor = staticmethod(torch.bitwise_xor)

    # ternary
    def where(self, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        word = _WORDS.get(a.element_size())  # (none for complex128's 16 bytes)
        if word is None or not self._on_cpu or cond.numel() < _BITWISE_WHERE_MIN:
            return torch.where(cond, a, b)
        # On the CPU torch.where branches per element: ~5x slower on an unpredictable mask
        # than selecting bit patterns through all-zeros / all-ones words, which also copies
        # NaN, inf and -0.0 exactly.
        mask = torch.neg(cond.to(word))
        bits = torch.bitwise_and(a.view(word), mask)
        bits.bitwise_or_(torch.bitwise_and(b.view(word), torch.bitwise_not(mask)))
        return bits.view(a.dtype)

    # reduce
    def sum(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        if not a.is_floating_point() and not a.is_complex():
            # torch sums integers and bools in int64; the primitive keeps a's dtype.
            return torch.sum(a, axes, keepdim=keepdims, dtype=a.dtype)
        if not keepdims and len(axes) == a.dim():  # the same kernel, half the call's cost
            return torch.sum(a)
        return torch.sum(a, axes, keepdim=keepdims)

    def prod(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        # torch multiplies integers and bools in int64; the primitive keeps a's dtype.
        dtype = a.dtype
        for axis in reversed(axes):  # last first, so the other axes keep their numbers
            a = torch.prod(a, axis, keepdim=keepdims, dtype=dtype)
        return a

    def max(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        return torch.amax(a, axes, keepdim=keepdims)

    def min(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        return torch.amin(a, axes, keepdim=keepdims)

    def aminmax(self, a: Tensor) -> Tensor:
        return torch.stack(torch.aminmax(a))

    def host_aminmax(self, a: Tensor) -> tuple:
        low, high = torch.aminmax(a)
        if self._on_cpu:
            return low.tolist(), high.tolist()  # two 0-d reads cost less than a stack and copy
        return tuple(torch.stack((low, high)).tolist())  # one transfer from the device

    def any(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        return torch.any(a, axes, keepdim=keepdims)

    def all(self, a: Tensor, axes: Shape, keepdims: bool) -> Tensor:
        return torch.all(a, axes, keepdim=keepdims)

    def argmax(self, a: Tensor, axis: int, keepdims: bool) -> Tensor:
        if a.dtype is torch.bool:
            a = a.to(torch.uint8)
        return torch.argmax(a, axis, keepdim=keepdims)

    def argmin(self, a: Tensor, axis: int, keepdims: bool) -> Tensor:
        if a.dtype is torch.bool:
            a = a.to(torch.uint8)
        return torch.argmin(a, axis, keepdim=keepdims)

    def argsort(self, a: Tensor, axis: int) -> Tensor:
        if not self._on_cpu and a.dtype in FLOATS:
            # torch's GPU sort orders a NaN by its sign bit, so a negative NaN comes first;
            # torch makes those itself (float32 NaN .to(bfloat16) is 0xFFFF on the CPU). The
            # fill writes Python's positive NaN (abs kept the sign of a float64 NaN on CUDA).
            a = a.masked_fill(torch.isnan(a), float("nan"))
        return torch.sort(a, dim=axis, stable=True).indices

    def cumsum(self, a: Tensor, axis: int) -> Tensor:
        if a.dtype is torch.bool:  # a running "or"
            return torch.cumsum(a, axis) > 0
        # dtype= keeps small ints small; torch would widen them to int64.
        return torch.cumsum(a, axis, dtype=a.dtype)

    # movement. torch's functions, not Tensor's methods: their arguments parse ~0.6 us faster.
    reshape = staticmethod(torch.reshape)

    permute = staticmethod(torch.permute)

    expand = staticmethod(torch.broadcast_to)  # (ATen's broadcast_to is Tensor.expand)

    def pad(self, a: Tensor, widths: Sequence[tuple[int, int]], value: float) -> Tensor:
        # (before, after) pairs from the last axis backwards. Not F.pad: it takes the value
        # as a float, which rounds large int64 values.
        return torch.constant_pad_nd(a, [w for pair in reversed(widths) for w in pair], value)

    def slice(self, a: Tensor, starts: Shape, stops: Shape, steps: Shape) -> Tensor:
        # Axes after the last cut one are left out: one Python slice (x[3], x[:n]) indexes
        # in half the time of a tuple of them. A unit-step cut of one later axis alone (a
        # chunk of the last axis, x[:, i:j]) is torch.narrow, the same view without a tuple
        # of slices to build (~0.4 us less).
        shape = a.shape
        k = len(starts)
        while k and stops[k - 1] == shape[k - 1] and not starts[k - 1] and steps[k - 1] == 1:
            k -= 1
        if k <= 1:
            return a[starts[0] : stops[0] : steps[0]] if k else a[()]
        d = k - 1
        if steps[d] == 1:
            j = 0
            while j < d and stops[j] == shape[j] and not starts[j] and steps[j] == 1:
                j += 1
            if j == d:
                return torch.narrow(a, d, starts[d], stops[d] - starts[d])
        return a[tuple(map(slice, starts[:k], stops[:k], steps[:k]))]

    select = staticmethod(torch.select)

    def split(self, a: Tensor, axis: int, sizes: Shape) -> tuple:
        return a.split_with_sizes(sizes, axis)

    flip = staticmethod(torch.flip)

    cat = staticmethod(torch.cat)

    # index
    gather = staticmethod(torch.gather)

    take = staticmethod(torch.index_select)

    scatter = staticmethod(torch.scatter)

    scatter_add = staticmethod(torch.scatter_add)

    def scatter_reduce(
        self, a: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str
    ) -> Tensor:
        return a.scatter_reduce(axis, index, src, reduce, include_self=True)

    nonzero = staticmethod(torch.nonzero)

    # linalg
    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        if a.dtype in self._native_matmul:
            return torch.matmul(a, b)
        # Sum the products over k in a (..., m, k, n) array: exact, but k times the
        # memory of the result, which only integer or bool matmuls off the CPU pay.
        products = a.unsqueeze(-1) * b.unsqueeze(-3)
        if a.dtype is torch.bool:
            return products.any(-2)
        return products.sum(-2, dtype=a.dtype)


def _tracing() -> bool:
    """Whether torch.compile or make_fx (tw.compile's tracer) is tracing: a value read
    back would stop it, and the compiled kernel is not the eager one."""
    return torch.compiler.is_compiling() or get_proxy_mode() is not None


def _remainder_repaired(a: Tensor, b: Tensor, r: Tensor) -> Tensor:
    """``r`` (``torch.remainder(a, b)`` on the CPU) with the NaN of finite operands, which
    only an overflowing ``a / b`` gives, recomputed as torch's exact scalar loop computes
    them: C's ``fmod``, plus ``b`` where that is nonzero and of the other sign than ``b``
    (float16/bfloat16 in float32, rounded once at the end as torch's scalar types round)."""
    a, b = torch.broadcast_tensors(a, b)
    wrong = r.isnan() & a.isfinite() & b.isfinite() & (b != 0)
    if not bool(wrong.any()):
        return r
    # All at once: torch's vectorised fmod overflows as its remainder does, and a call per
    # element (its scalar loop) took 21 s for a million of them. NumPy's fmod is C's.
    wide = r.dtype if r.dtype in (torch.float32, torch.float64) else torch.float32
    x = a[wrong].detach().to(wide)
    y = b[wrong].detach().to(wide)
    rest = torch.from_numpy(np.fmod(x.numpy(), y.numpy()))
    rest = torch.where((rest != 0) & ((y < 0) != (rest < 0)), rest + y, rest)
    r = r.clone()
    r[wrong] = rest.to(r.dtype)
    return r
