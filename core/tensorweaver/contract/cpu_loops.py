"""Which elements PyTorch's CPU elementwise kernels compute in their scalar loop, for
half-precision (float16, bfloat16) results that must match torch's bits, and the order
those loops take the dimensions in (:func:`loop_order`, step 1 below); and the width of the
vectors torch's inductor writes its CPU loops for (:func:`inductor_options`).

What torch does (torch 2.13 on x86): a CPU elementwise kernel runs a vectorized loop and a
scalar loop. The vectorized one computes half values as float32 vectors and rounds each
result once; the scalar one uses c10::Half / c10::BFloat16 arithmetic, which rounds every
intermediate result to the half dtype (add's ``y * alpha``, rsqrt's ``sqrt(x)``), so the
same element can differ by a half step between the two. Which elements take which loop is
decided by TensorIterator from the layout alone:

1. The dimensions are sorted by the operands' strides, fastest first (an operand broadcast
   along one of the two compared dimensions does not vote; with equal strides the longer
   dimension is the slower; other ties keep their order). A NumPy view with negative
   strides counts as its absolute strides: torch's flip is a copy laid out as its input.
2. From the fastest, dimensions merge into the inner loop while every operand steps evenly
   across them (a size-1 dimension always merges).
3. The inner loop is vectorized where every operand steps one element along it, or stays
   put (at most one operand). Then only its last ``length % HALF_STEP`` elements take the
   scalar loop, in every repetition of the inner loop; otherwise every element does.

Measured facts: ``HALF_STEP`` is 32 half elements with both AVX2 and AVX-512
(``ATEN_CPU_CAPABILITY=avx2`` and the default); with the "default" capability (no AVX2)
every element takes the scalar loop, which this module does not model.

Caveat: this is torch with one thread. Above 32768 elements (its grain size) torch splits
the loop between its threads, each part with its own tail, so larger results may differ
from :func:`scalar_loop_mask` where torch runs more than one thread.

A plugin whose CPU half-precision ops should give torch's bits computes in float32 and,
where the mask says so, rounds the intermediate result to the half dtype first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np

from tensorweaver.contract.dtypes import bool_

#: Half-precision elements per step of torch's vectorized CPU loop (AVX2 and AVX-512).
HALF_STEP = 32

#: Every element takes the scalar loop (a mask that broadcasts to any shape).
EVERY = np.True_

#: Layouts up to this many elements keep their mask (see :func:`cached_scalar_loop_mask`).
_CACHED_ELEMENTS = 1 << 16


def scalar_loop_mask(
    shape: Sequence[int], strides: Sequence[Sequence[int]], *, itemsize: int = 1
) -> Any:
    """Which elements of a result over ``shape`` torch's CPU loop computes in its scalar loop,
    for operands of ``strides`` (one tuple per operand, each as long as ``shape``, 0 where it
    is broadcast; in elements, or in bytes with the operands' ``itemsize``), as the module
    describes.

    Returns None where no element does, :data:`EVERY` (``np.True_``) where all do, else a
    read-only NumPy bool array with ``shape``'s rank that broadcasts to it (size 1 along the
    dimensions outside the inner loop)."""
    steps = [[abs(s) // itemsize for s in st] for st in strides]
    inner, length, step = [], 1, [0] * len(steps)
    for d in reversed(loop_order(shape, steps)):
        if shape[d] != 1 and length != 1:
            if any(s[d] != length * t for s, t in zip(steps, step)):
                break
        elif shape[d] != 1:
            step = [s[d] for s in steps]
        inner.append(d)
        length *= shape[d]
    vector = step.count(0) <= 1 and all(t in (0, 1) for t in step)
    tail = length % HALF_STEP if vector else length
    if tail == 0:
        return None
    if tail == length:
        return EVERY
    mask = np.zeros(length, bool)  # (not arange >= length - tail: 2 against 183 us at 1e5)
    mask[length - tail :] = True
    mask = mask.reshape([shape[d] for d in inner[::-1]]).transpose(np.argsort(inner[::-1]))
    mask = mask.reshape([shape[d] if d in inner else 1 for d in range(len(shape))])
    mask.flags.writeable = False  # (callers share cached masks)
    return mask


def cached_scalar_loop_mask(
    shape: tuple[int, ...],
    strides: tuple[tuple[int, ...], ...],
    itemsize: int = 1,
    backend: Any = None,
) -> Any:
    """:func:`scalar_loop_mask`, kept for the 64 layouts used last up to 65536 elements (a
    training loop repeats its layouts; hashable arguments only). With a ``backend``, the mask
    is that backend's native bool array (its ``from_host``; None stays None), so callers
    convert it once."""
    mask = _cached_mask(shape, strides, itemsize, backend)
    if mask is _LARGE:
        mask = _native_mask(shape, strides, itemsize, backend)
    return mask


def _native_mask(shape: tuple, strides: tuple, itemsize: int, backend: Any) -> Any:
    mask = scalar_loop_mask(shape, strides, itemsize=itemsize)
    if backend is None or mask is None:
        return mask
    return backend.from_host(np.asarray(mask), bool_)


_LARGE = object()  # (a layout whose mask is not kept: the cache holds this instead)


@lru_cache(maxsize=64)
def _cached_mask(shape: tuple, strides: tuple, itemsize: int, backend: Any) -> Any:
    # (the size is checked here, on a miss only: a hit costs no more than the lookup)
    if math.prod(shape) > _CACHED_ELEMENTS:
        return _LARGE
    return _native_mask(shape, strides, itemsize, backend)


@cache
def onednn_convolves(dtype_name: str) -> bool:
    """Whether torch 2.13's CPU convolutions of a ``"float16"`` or ``"bfloat16"`` input take
    oneDNN's path, which sums in float32 and refuses a bias of another dtype, rather than its
    own (im2col, whose input gradient adds the columns up in the half dtype). torch decides it
    from the CPU's flags, not its vector capability (``ATEN_CPU_CAPABILITY`` leaves it be):
    float16 needs AVX512-FP16 or AMX-FP16 (``torch.ops.mkldnn._is_mkldnn_fp16_supported()``),
    bfloat16 AVX-512 BW, VL and DQ. Read from /proc/cpuinfo (False where it is unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln.split(":", 1)[1].split() for ln in f if "flags" in ln), []))
    except OSError:
        return False
    if dtype_name == "float16":
        return bool({"avx512_fp16", "amx_fp16"} & flags)
    return dtype_name == "bfloat16" and {"avx512bw", "avx512vl", "avx512dq"} <= flags


def inductor_options(mode: str | None = None) -> dict[str, Any]:
    """torch.compile's ``options`` for ``mode``, with the width of inductor's CPU vectors
    (``cpp.simdlen``) set to the one it picks in this process.

    Inductor (torch 2.13) picks that width from ATEN_CPU_CAPABILITY (512 bits on an AVX-512
    CPU, 256 under ``avx2``) but leaves it out of the key of its on-disk FX graph cache: a
    process under another capability than the one that wrote an entry reloads C++ written
    for the other width, builds it for its own, and computes garbage (NaN, huge values:
    loops that load 16 doubles into vectors of 8). A width among its settings is part of
    the key. Inductor then picks the instruction set it prefers of that width, the one it
    picked anyway; a width the user set is left as it is (in the key already)."""
    from torch._inductor import config, list_mode_options
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    options = dict(list_mode_options(mode)) if mode else {}
    if config.cpp.simdlen is None:
        options["cpp.simdlen"] = pick_vec_isa().bit_width()
    return options


def loop_order(shape: Sequence[int], steps: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The dimensions of ``shape`` from the slowest to the fastest in TensorIterator's order
    for operands stepping ``steps`` (one sequence per operand, 0 where it is broadcast): its
    insertion sort, from the fastest, by the pairwise rule :func:`slower` (step 1 of the
    module's description; PyTorch's ``infer_dense_strides`` sorts one operand the same way)."""
    order = list(range(len(shape)))[::-1]
    for i in range(1, len(order)):
        j = i
        for k in range(i - 1, -1, -1):
            after = slower(order[k], order[j], shape, steps)
            if after > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif after < 0:
                break
    return tuple(reversed(order))


def slower(d0: int, d1: int, shape: Sequence[int], steps: Sequence[Sequence[int]]) -> int:
    """1 where dimension d0 goes after (is slower than) d1 in TensorIterator's order, -1
    before, 0 where the operands do not tell."""
    for s in steps:
        if s[d0] == 0 or s[d1] == 0:
            continue
        if s[d0] != s[d1]:
            return 1 if s[d0] > s[d1] else -1
        if shape[d0] > shape[d1]:
            return 1
    return 0
