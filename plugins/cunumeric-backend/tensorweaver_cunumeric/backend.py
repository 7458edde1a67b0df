"""Every primitive of ``tensorweaver.contract.ir`` on cuPyNumeric arrays.

Importing this module starts the Legate runtime (see :mod:`.legate_config` for the
configuration it gets). Compute stays on cuPyNumeric arrays; only ``from_host`` and
``to_host`` cross to NumPy: nothing else reads a device array on the host (``.flags``,
``bool()``, ``int()`` or ``__array__`` of one would copy it there and wait for every
pending task), including the library calls that do so themselves. Each cuPyNumeric call
is an asynchronous Legate task, about 0.4 ms on one CPU, so workarounds below are counted
in calls.

**Broadcast views.** ``expand`` returns a view with stride-0 axes, on which cuPyNumeric
26.06 computes elementwise ops and reductions correctly, but ``matmul`` gets zeros from
BLAS ("SGEMM parameter number 8 had an illegal value"), float64 ``cumsum`` sums it wrongly,
and a reduction over a slice of one aborts the process (Legate cannot make an accessor
for it). cuPyNumeric cannot say whether an array is such a view without copying it to the
host (its ``.flags`` and ``.strides`` do), so the backend remembers the views its
``expand`` returned (by identity, weakly) and hands ``matmul``, ``cumsum`` and the
movement primitives a copy of them [+1]: a broadcast view is never transformed again.

**Layouts.** Strides, storage offsets and storages are PyTorch's, kept beside the arrays by
the view primitives (``reshape``, ``permute``, ``expand``, ``slice``; reading cuPyNumeric's
own ``.strides`` would copy the array to the host), and elementwise results follow their
operands' axis order: see :mod:`.layouts`.

Where cuPyNumeric 26.06 differs from NumPy, the method works around it on its arrays
(extra calls in brackets):

* NaN: float ``max``/``min`` over axes skip it: a NaN mask restores it [+3]; of all -inf
  (``min``: +inf) they give the largest finite float of that sign: an infinity mask [+3];
  ``maximum``/``minimum`` propagate it from the first operand only [+2]; float
  ``argmax``/``argmin`` skip it: the first NaN wins, as in NumPy [+4]; ``sign`` maps it
  to 0 [+2]. ``sign`` of bool gives int8: a copy instead.
* ``argmax``/``argmin`` return INT64_MIN where every element equals the reduction's
  identity (all -inf, all True for argmin, ...): clamped to index 0 [+1].
* ``any``/``all`` reduce over one axis or all of them: other axis sets go one at a time.
* ``take`` and ``take_along_axis`` check their indices on the host: ``take`` runs in
  ``clip`` mode (the core's indices are in range), and ``gather`` takes from the flattened
  array at flat positions [+3 per axis]; ``scatter`` puts at them, since
  ``put_along_axis`` broadcasts an index shorter than the array along another axis.
  ``pad`` reads its fill value back from the device: the padded array is a ``full`` with
  the input written in [+1]. ``argsort`` always takes its NaN-last path for floats rather
  than ask whether there is a NaN [+3]; of an empty array it returns zeros without sorting
  (after sorting one, Legate has been seen to abort in a later ``argwhere``).
* float ``floordiv`` is ``floor(a / b)`` (``1 // 0.1`` gives 10, ``-5 // inf`` gives -0):
  NumPy's divmod algorithm on ``fmod`` instead [+15]. Integer ``//`` and ``%`` by zero,
  and of the smallest signed integer by -1, kill the process (SIGFPE): the divisor becomes 1
  there, the result 0 (by zero, as NumPy) or ``-a`` and 0 (by -1, as PyTorch) [+3 to +6].
* float16/float32 ``sum``, ``prod`` and ``cumsum`` accumulate sequentially in their own
  type (a million float32 0.1s sum to 100958): they accumulate in float64 here [+1].
* complex128 ``prod`` raises and complex ``scatter_add`` lost the imaginary parts: see
  :mod:`.complex`.
* integer ``power`` goes through float64, wrong past 2**53: kept below 2**51, exact squaring
  above (see ``_integer_power``) [+6, one value read back; about 5 calls a bit above].
* ``matmul`` has no integer or bool kernels: bool in float64 [+3], integers exactly in
  16-bit pieces multiplied in float64 (:mod:`.intmatmul`; float64 alone was wrong once a
  sum passed 2**53: int32 and int64 near their ends).
* no ``ufunc.at``: ``scatter_add`` sums duplicates with a weighted ``histogram`` of the
  flat positions (one unit bin each), in float64; int64 values go in three 22-bit pieces,
  each summed exactly, then joined (a single float64 sum loses bits beyond 2**53) [+8];
  ``bincount`` would read the positions' minimum and maximum on the host.
* ``matmul`` whose batch axes and three matrix axes pass max_ndim (6-d operands) aborts
  the process: the batch axes are joined into one [+4].
* ``argsort`` of a broadcast view (``expand``) aborts the process: a dense copy is sorted.
* a 1-d ``cumsum`` of values computed from a LAPACK task's output aborts the process: 1-d
  arrays are scanned as one row [+2].
* no strided slices: ``slice`` with a step takes along an ``arange`` index [+2 per axis].
* an array larger than the memory Legate was started with aborts the process: besides
  the creators, every primitive whose result or working copy can outgrow its inputs
  (widening ``cast``, ``cat``, ``take``, ``where`` of two scalars, float64 accumulation,
  integer ``pow``/``matmul``, ``scatter_add``'s histogram) raises OutOfMemoryError first.
* ``pad`` rejects the empty widths of a 0-d array: nothing to pad, the input is returned.
* no ``erf``: :mod:`.erf` [about 40 calls]. ``random.integers`` lacks 8-bit types and
  ``normal`` a dtype: drawn wider and cast; ``uniform`` samples are kept below ``high``
  after the cast [+1].

No bfloat16 (cuPyNumeric has none).

The random stream makes a generator for each draw, so that its state (API 2.5) can be read
and set: see :mod:`.stream`.
"""

from __future__ import annotations

import math
import threading
import weakref
from functools import reduce

import numpy
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.errors import OutOfMemoryError
from tensorweaver.contract.ir import BINARY, COMPOSITES, OPTIONAL, REQUIRED, UNARY
from tensorweaver.contract.records import DeviceRecord

from tensorweaver_cunumeric import legate_config
from tensorweaver_cunumeric.complex import ComplexNumbers
from tensorweaver_cunumeric.deferred_frees import free_in_legate_thread
from tensorweaver_cunumeric.erf import Erf
from tensorweaver_cunumeric.fft import FourierTransforms
from tensorweaver_cunumeric.forked import refuse_in_forked_children
from tensorweaver_cunumeric.intmatmul import integer_matmul
from tensorweaver_cunumeric.layouts import Layouts
from tensorweaver_cunumeric.linalg import LinearAlgebra
from tensorweaver_cunumeric.special import SpecialFunctions
from tensorweaver_cunumeric.stream import STATE, RandomStream
from tensorweaver_cunumeric.threads import check_thread, refuse_in_other_threads

cn = legate_config.import_library()
from legate.core import get_legate_runtime  # noqa: E402  (importing cn started it)

#: Where importing cn started Legate: the only thread that may call it (see .threads).
_LEGATE_THREAD = threading.get_ident()
free_in_legate_thread(cn.ndarray, _LEGATE_THREAD)

NATIVE = {dt: numpy.dtype(dt.numpy_name) for dt in d.ALL if dt is not d.bfloat16}
_F64 = numpy.dtype("float64")
_I64 = numpy.dtype("int64")
_C128 = numpy.dtype("complex128")
_C64 = numpy.dtype("complex64")
#: Types whose sums are accumulated in float64 (see the module docstring).
_NARROW_FLOATS = (numpy.dtype("float16"), numpy.dtype("float32"))
#: Primitives that keep Python-side records only and launch no Legate task (see _bind_to).
_NO_TASKS = frozenset({"layout", "storage", *STATE})
#: Integer types that cuPyNumeric reduces wrongly over several axes (see _accumulate).
_NARROW_INTS = tuple(
    numpy.dtype(n) for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32")
)


def _is_float(a) -> bool:
    return a.dtype.kind == "f"


class CunumericBackend(
    Layouts, RandomStream, SpecialFunctions, LinearAlgebra, ComplexNumbers, FourierTransforms
):
    def __init__(self, device: DeviceRecord) -> None:
        check_thread(_LEGATE_THREAD, device.name, "making the backend")
        Layouts.__init__(self, cn.transpose)
        self.device = device
        self.dtypes = frozenset(NATIVE)
        self.max_ndim = legate_config.max_ndim()
        #: id -> array, for the broadcast views ``expand`` returned (see the module docstring)
        self._broadcasts: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        facts = legate_config.running()
        self._start_stream(cn)
        self._erf = Erf(cn)
        # Arrays live in the memory of the device's processors, split over all of them.
        if device.kind == "gpu":
            self._setting, unit, count = "--fbmem", "GPU", facts["gpus"]
        else:
            self._setting, unit, count = "--sysmem", "rank", max(1, facts["nodes"])
        per_unit = facts[self._setting[2:] + "_mb"]
        self._capacity = per_unit * 2**20 * count
        self._memory = f"{self._setting} {per_unit} (MiB per {unit}) x {count}"
        elementwise = (*UNARY, *BINARY, *SpecialFunctions.ELEMENTWISE, "complex", "where", "cast")
        self._follow_layouts(elementwise)
        scope = legate_config.machine_scope(device.kind)
        if scope is not None:
            self._bind_to(scope)
        refuse_in_other_threads(self, _LEGATE_THREAD)
        refuse_in_forked_children(self)

    def _bind_to(self, machine) -> None:
        """Run every primitive that launches Legate tasks inside ``machine`` (CPU-only device
        on a machine with GPUs): the required ones, the optional ones defined here (argsort,
        linalg, fft, ...), and the copy ``contiguous`` makes. A scope costs about 0.25 ms a
        call, so it is only entered where it matters: not around primitives that launch no
        task (``_NO_TASKS``), nor around the whole of ``contiguous``, which the core calls on
        every in-place op and which mostly returns its input."""

        def scoped(fn):
            def run(*args, **kwargs):
                with machine:
                    return fn(*args, **kwargs)

            return run

        optional = (n for n in (*OPTIONAL, *COMPOSITES) if callable(getattr(self, n, None)))
        for name in {*REQUIRED, *optional, "_copy"} - _NO_TASKS - {"contiguous"}:
            setattr(self, name, scoped(getattr(self, name)))

    def _check_fits(self, shape, dtype) -> None:
        """Raise OutOfMemoryError where Legate would abort the whole process instead (an array
        larger than the memory it was configured with)."""
        nbytes = math.prod(shape) * numpy.dtype(dtype).itemsize
        if nbytes > self._capacity > 0:  # 0: Legate did not say
            raise OutOfMemoryError(
                f"{self.device.name}: an array of {nbytes / 2**20:.0f} MiB does not fit the "
                f"{self._capacity / 2**20:.0f} MiB Legate was started with ({self._memory}); "
                "Legate would abort the process. Raise it before anything imports legate, e.g. "
                f"LEGATE_CONFIG='... {self._setting} N' or `legate {self._setting} N script.py`"
            )

    def _dense(self, a):
        """``a``, or a copy of it where it is a broadcast view made by ``expand``."""
        return a.copy() if self._broadcasts.get(id(a)) is a else a

    # data
    def from_host(self, array, dtype):
        self._check_fits(array.shape, NATIVE[dtype])
        with numpy.errstate(all="ignore"):  # a cast here runs in NumPy, which would warn
            return cn.array(array, dtype=NATIVE[dtype], copy=True)

    def to_host(self, a):
        # numpy.asarray(a) is a view of Legate's buffer, which the core could write through.
        return numpy.asarray(a).copy()

    def full(self, shape, value, dtype):
        self._check_fits(shape, NATIVE[dtype])
        return cn.full(shape, value, dtype=NATIVE[dtype])

    def arange(self, start, stop, step, dtype):
        self._check_fits((max(0, math.ceil((stop - start) / step)),), NATIVE[dtype])
        if NATIVE[dtype].kind in "iu":
            # Legate computes the range in the target type, where a negative step overflows an
            # unsigned one: count in int64, then convert.
            return cn.arange(start, stop, step, dtype=numpy.int64).astype(NATIVE[dtype])
        return cn.arange(start, stop, step, dtype=NATIVE[dtype])

    def _drawn(self, draw, shape):
        """``draw(generator, count)`` of ``prod(shape)`` values from the stream's next
        generator, shaped as ``shape``.

        Drawn flat because cuPyNumeric 26.06's generator task writes its samples in the order
        of the output buffer's memory, and Legate may hand that task a recycled buffer that a
        LAPACK task left in column-major (Fortran) order: an N-d seeded draw then came out
        transposed depending on which ops ran before it. A 1-d buffer has one order only, and
        ``reshape`` places values by index.

        With an execution fence behind it: the generator task does not order the tasks that
        read its output after it; without the fence, an op on a fresh sample can read the
        buffer before it is filled (seeded draws then differ from run to run, by up to the
        whole interval). The fence does not wait."""
        sample = draw(self._next_generator(), math.prod(shape)).reshape(shape)
        get_legate_runtime().issue_execution_fence(block=False)
        return sample

    def random_uniform(self, shape, low, high, dtype):
        self._check_fits(shape, _F64)
        native = NATIVE[dtype]
        # Rounding to `dtype` can reach `high` itself; keep the interval half-open.
        below_high = numpy.nextafter(native.type(high), native.type(low))
        drawn = self._drawn(lambda rng, n: rng.uniform(low, high, n), shape)
        return cn.minimum(drawn.astype(native), below_high)

    def random_normal(self, shape, mean, std, dtype):
        self._check_fits(shape, _F64)
        sample = self._drawn(lambda rng, n: rng.normal(mean, std, n), shape)
        return sample.astype(NATIVE[dtype])

    def random_integers(self, shape, low, high, dtype):
        self._check_fits(shape, _I64)
        native = NATIVE[dtype]
        if native.itemsize >= 2 and native.kind == "i":
            return self._drawn(lambda rng, n: rng.integers(low, high, n, dtype=native), shape)
        wide = self._drawn(lambda rng, n: rng.integers(low, high, n, dtype=_I64), shape)
        return wide.astype(native)

    def cast(self, a, dtype):
        if NATIVE[dtype].itemsize > a.dtype.itemsize:  # int8 to float64 is 8 times the bytes
            self._check_fits(a.shape, NATIVE[dtype])
        if a.dtype.kind == "c" and dtype.kind != "c":
            a = cn.real(a)
        return a.astype(NATIVE[dtype])

    # unary
    def neg(self, a):
        return cn.negative(a)

    def abs(self, a):
        return cn.abs(a)

    def sign(self, a):
        if a.dtype == numpy.bool_:
            return a.copy()
        if _is_float(a):
            return cn.where(cn.isnan(a), a, cn.sign(a))
        return cn.sign(a)

    def exp(self, a):
        return cn.exp(a)

    def log(self, a):
        return cn.log(a)

    def sin(self, a):
        return cn.sin(a)

    def cos(self, a):
        return cn.cos(a)

    def tanh(self, a):
        return cn.tanh(a)

    def sqrt(self, a):
        return cn.sqrt(a)

    def erf(self, a):
        if a.dtype == _F64:
            return self._erf(a)
        return self._erf(a.astype(_F64)).astype(a.dtype)

    def floor(self, a):
        return cn.floor(a)

    def ceil(self, a):
        return cn.ceil(a)

    def round(self, a):
        return cn.round(a)

    def trunc(self, a):
        return cn.trunc(a)

    def logical_not(self, a):
        return cn.logical_not(a)

    def bitwise_not(self, a):
        return cn.invert(a)

    # binary
    def add(self, a, b):
        return cn.add(a, b)

    def sub(self, a, b):
        return cn.subtract(a, b)

    def mul(self, a, b):
        return cn.multiply(a, b)

    def div(self, a, b):
        return cn.true_divide(a, b)

    def floordiv(self, a, b):
        if not _is_float(a):
            return self._int_division(cn.floor_divide, a, b)
        # NumPy's npy_divmod: exact where floor(a / b) rounds across an integer.
        quotient = cn.true_divide(a, b)
        mod = cn.fmod(a, b)
        div = (a - mod) / b
        wrong_side = cn.logical_and(mod != 0, (b < 0) != (mod < 0))
        div = cn.where(wrong_side, div - 1, div)
        # div is within rounding of an integer; the sign of a zero result is that of a / b.
        result = cn.copysign(cn.floor(div + 0.5), quotient)
        return cn.where(b == 0, quotient, result)

    def remainder(self, a, b):
        if not _is_float(a):
            return self._int_division(cn.remainder, a, b)
        return cn.remainder(a, b)

    def _int_division(self, op, a, b):
        # Integer // and % trap (SIGFPE) on a zero divisor and on the smallest signed integer
        # over -1 (an overflow): such divisors become 1. A zero one gives 0, as NumPy; -1
        # gives x // -1 == -x (wrapping, as PyTorch) and x % -1 == 0.
        zero = b == 0
        if b.dtype.kind == "u":
            return cn.where(zero, a.dtype.type(0), op(a, cn.where(zero, b.dtype.type(1), b)))
        minus_one = b == -1
        special = cn.logical_or(zero, minus_one)
        result = op(a, cn.where(special, b.dtype.type(1), b))
        if op is cn.floor_divide:
            result = cn.where(minus_one, cn.negative(result), result)
            special = zero
        return cn.where(special, a.dtype.type(0), result)

    def pow(self, a, b):
        if a.dtype.kind in "iu":
            # computed in float64 first (see _integer_power): that array must fit
            self._check_fits(numpy.broadcast_shapes(a.shape, b.shape), _F64)
            return self._integer_power(a, b)
        return cn.power(a, b)

    @staticmethod
    def _integer_power(a, b):
        """``a ** b`` wrapped in ``a``'s type. cuPyNumeric's integer ``power`` goes through
        float64: wrong once a result passes 2**53, INT64_MIN where it overflows (``3 ** 39``,
        ``2 ** 64``). The float64 power is kept where every result is below 2**51 in size
        (within a quarter of an integer, so rounding makes it exact; one value read back);
        otherwise squaring, one step per bit of the exponent's type (the core refuses
        negative exponents) [5 calls a bit]."""
        wide = cn.power(a.astype(_F64), b.astype(_F64))
        if bool(cn.all(cn.abs(wide) < 2.0**51)):
            return cn.rint(wide).astype(_I64).astype(a.dtype)
        b = b.astype(a.dtype)
        result = cn.ones(numpy.broadcast_shapes(a.shape, b.shape), dtype=a.dtype)
        for _ in range(a.dtype.itemsize * 8 - (a.dtype.kind == "i")):
            result = cn.where(b & 1, result * a, result)
            b = b >> 1
            a = a * a
        return result

    def maximum(self, a, b):
        return self._nan_from_either(cn.maximum, a, b)

    def minimum(self, a, b):
        return self._nan_from_either(cn.minimum, a, b)

    def _nan_from_either(self, op, a, b):
        # cuPyNumeric propagates a NaN from the first operand only.
        result = op(a, b)
        return cn.where(cn.isnan(b), b, result) if _is_float(a) else result

    def eq(self, a, b):
        return cn.equal(a, b)

    def ne(self, a, b):
        return cn.not_equal(a, b)

    def lt(self, a, b):
        return cn.less(a, b)

    def le(self, a, b):
        return cn.less_equal(a, b)

    def gt(self, a, b):
        return cn.greater(a, b)

    def ge(self, a, b):
        return cn.greater_equal(a, b)

    def logical_and(self, a, b):
        return cn.logical_and(a, b)

    def logical_or(self, a, b):
        return cn.logical_or(a, b)

    def logical_xor(self, a, b):
        return cn.logical_xor(a, b)

    def bitwise_and(self, a, b):
        return cn.bitwise_and(a, b)

    def bitwise_or(self, a, b):
        return cn.bitwise_or(a, b)

    def bitwise_xor(self, a, b):
        return cn.bitwise_xor(a, b)

    def where(self, cond, a, b):
        if a.ndim == b.ndim == 0:  # the result has cond's shape in a's (wider) dtype
            self._check_fits(cond.shape, a.dtype)
        return cn.where(cond, a, b)

    # reduce
    def sum(self, a, axes, keepdims):
        if a.dtype == _C64:  # accumulated in complex128, as float32 in float64 (see there)
            self._check_fits(a.shape, _C128)  # (cuPyNumeric converts all of `a` first)
            return cn.sum(a, axis=axes, keepdims=keepdims, dtype=_C128).astype(_C64)
        return self._accumulate(cn.sum, a, axes, keepdims)

    def prod(self, a, axes, keepdims):
        return self._accumulate(cn.prod, a, axes, keepdims)

    def _accumulate(self, op, a, axes, keepdims):
        if op is cn.prod and a.dtype == _C128:
            # cuPyNumeric 26.6 has no complex128 product reduction: Legate raises (see .complex)
            return self._complex_prod(a, axes, keepdims)
        if a.dtype in _NARROW_FLOATS:
            # cuPyNumeric converts all of `a` first: that copy must fit too
            self._check_fits(a.shape, _F64)
            return op(a, axis=axes, keepdims=keepdims, dtype=_F64).astype(a.dtype)
        if a.dtype in _NARROW_INTS and 1 < len(axes) < a.ndim:
            # cuPyNumeric 26.6 sums and multiplies int8/16/32 over several (not all) axes
            # wrongly, whatever dtype= says; int64 operands come out right, and the wrapped
            # int64 result is the narrow one's (integer arithmetic is modular).
            self._check_fits(a.shape, _I64)
            return op(a.astype(_I64), axis=axes, keepdims=keepdims).astype(a.dtype)
        return op(a, axis=axes, keepdims=keepdims, dtype=a.dtype)

    def max(self, a, axes, keepdims):
        return self._nan_propagating(cn.max, a, axes, keepdims, -numpy.inf)

    def min(self, a, axes, keepdims):
        return self._nan_propagating(cn.min, a, axes, keepdims, numpy.inf)

    def aminmax(self, a):
        flat = self.reshape(a, (a.size,))
        return cn.stack((self.min(flat, (0,), False), self.max(flat, (0,), False)))

    def _nan_propagating(self, op, a, axes, keepdims, edge):
        result = op(a, axis=axes, keepdims=keepdims)
        if not _is_float(a):
            return result
        # Where every element is ``edge`` (all -inf for max), cuPyNumeric gives the largest
        # finite value of that sign: the infinity is restored.
        only_edge = self._logical_reduce(cn.all, a == edge, axes, keepdims)
        result = cn.where(only_edge, a.dtype.type(edge), result)
        has_nan = self._logical_reduce(cn.any, cn.isnan(a), axes, keepdims)
        return cn.where(has_nan, a.dtype.type(numpy.nan), result)

    def any(self, a, axes, keepdims):
        return self._logical_reduce(cn.any, a, axes, keepdims)

    def all(self, a, axes, keepdims):
        return self._logical_reduce(cn.all, a, axes, keepdims)

    def _logical_reduce(self, op, a, axes, keepdims):
        if len(axes) in (1, a.ndim):
            return op(a, axis=axes, keepdims=keepdims)
        # cuPyNumeric reduces any/all over one axis or all of them; the last axis first
        # keeps the lower axis numbers valid when dims are dropped.
        for axis in reversed(axes):
            a = op(a, axis=axis, keepdims=keepdims)
        return a

    def argmax(self, a, axis, keepdims):
        return self._first_nan_or(cn.argmax, a, axis, keepdims)

    def argmin(self, a, axis, keepdims):
        return self._first_nan_or(cn.argmin, a, axis, keepdims)

    def argsort(self, a, axis):
        if a.size == 0:  # see the module docstring
            return cn.zeros(a.shape, dtype=numpy.int64)
        order = self._torch_order(a)
        if order is None:
            return self._argsort(a, axis)
        # (torch's indices are laid out as empty_like(a): sorted along a seen in that order)
        return self._in_torch_order(self._argsort, self._dense(a), order, axis)

    def _argsort(self, a, axis):
        if not _is_float(a):  # sorting a broadcast view aborts the process: a dense copy
            return cn.argsort(self._dense(a), axis, kind="stable").astype(numpy.int64, copy=False)
        # cuPyNumeric does not put NaN last: sort with NaN as +inf, then move the NaN
        # behind the infinities with a second stable sort of the NaN flags in that order.
        nan = cn.isnan(a)
        # (with a Python float, cuPyNumeric's `where` returns float64, where NumPy keeps
        # float32: a float32 array's copy would take twice its memory, float16's four times)
        order = cn.argsort(cn.where(nan, a.dtype.type(numpy.inf), a), axis, kind="stable")
        flags = self.gather(nan, axis, order).astype(numpy.int8)
        behind = cn.argsort(flags, axis, kind="stable")
        return self.gather(order, axis, behind).astype(numpy.int64, copy=False)

    def _first_nan_or(self, op, a, axis, keepdims):
        # Where every element equals the reduction's identity (all -inf for argmax, all
        # True for a bool argmin, ...), cuPyNumeric returns INT64_MIN: the first index it is.
        result = cn.maximum(op(a, axis=axis, keepdims=keepdims), 0)
        if not _is_float(a):
            return result
        nan = cn.isnan(a)
        first_nan = cn.argmax(nan, axis=axis, keepdims=keepdims)
        return cn.where(cn.any(nan, axis=axis, keepdims=keepdims), first_nan, result)

    def cumsum(self, a, axis):
        if a.dtype in _NARROW_FLOATS:  # scanned in float64 (see _cumsum): that copy must fit
            self._check_fits(a.shape, _F64)
        a = self._dense(a)  # cuPyNumeric sums a broadcast view wrongly along its axes
        if a.ndim == 1 and a.size > 1:
            # Legion aborts the process ("IndexPartition ... does not have the same type as
            # the parent index space") scanning a 1-d array computed from the output of a
            # LAPACK task (eigh, eig, inv, solve, solve_triangular: eigvalsh(s).cumsum(0)),
            # whose 2-d partition it inherits. A 2-d scan of the same values does not.
            return self._cumsum(a.reshape((1, a.size)), 1).reshape(a.shape)
        return self._cumsum(a, axis)

    @staticmethod
    def _cumsum(a, axis):
        if a.dtype in _NARROW_FLOATS:
            return cn.cumsum(a, axis=axis, dtype=_F64).astype(a.dtype)
        return cn.cumsum(a, axis=axis, dtype=a.dtype)

    # movement
    def reshape(self, a, shape):
        # A copy of a broadcast view: cuPyNumeric 26.6 reshapes a slice of one wrongly
        # (broadcast_to(ones(1), (8,))[0:6].reshape((2, 3)) has zeros).
        # (the result's layout is PyTorch's view of a's, whatever cuPyNumeric copied)
        dense = self._dense(a)
        # cuPyNumeric copies between the two shapes with their axes aligned, up to one
        # axis for each axis (longer than 1) of either: past max_ndim, Legate aborts. Going
        # through 1-d keeps each step within the larger of the two ranks.
        if sum(n != 1 for n in (*a.shape, *shape)) > self.max_ndim and a.ndim > 1:
            dense = cn.reshape(dense, (a.size,))
        return self._reshaped(cn.reshape(dense, shape), a, shape)

    def permute(self, a, perm):
        # cuPyNumeric crashes transposing a 0-d view; there is nothing to permute anyway.
        if not perm:
            return a
        return self._permuted(cn.transpose(self._dense(a), perm), a, perm)

    def expand(self, a, shape):
        if tuple(a.shape) == tuple(shape):
            return a
        # A broadcast view allocates nothing, but what reads it makes an array of its shape.
        self._check_fits(shape, a.dtype)
        out = cn.broadcast_to(self._dense(a), shape)
        self._broadcasts[id(out)] = out
        return self._expanded(out, a, shape)

    def pad(self, a, widths, value):
        if not any(before or after for before, after in widths):
            return a  # also the 0-d case, whose empty widths cuPyNumeric rejects
        shape = tuple(n + before + after for n, (before, after) in zip(a.shape, widths))
        self._check_fits(shape, a.dtype)
        out = cn.full(shape, value, dtype=a.dtype)
        out[tuple(slice(before, before + n) for n, (before, _) in zip(a.shape, widths))] = a
        return out

    def slice(self, a, starts, stops, steps):
        out = self._dense(a)[tuple(map(slice, starts, stops))]
        for axis, step in enumerate(steps):
            if step != 1:
                out = cn.take(out, cn.arange(0, out.shape[axis], step), axis=axis, mode="clip")
        return self._sliced(out, a, starts, stops, steps)

    def select(self, a, axis, index):
        # (one Legate view where slice and reshape make two; its layout is torch.select's)
        out = self._dense(a)[(slice(None),) * axis + (index, ...)]
        _, strides, offset, owner = self._where(a)
        kept = strides[:axis] + strides[axis + 1 :]
        return self._place(out, out.shape, kept, offset + index * strides[axis], owner)

    def flip(self, a, axes):
        order = self._torch_order(a)
        if order is None:
            return cn.flip(self._dense(a), axes)
        # (torch's copy is laid out as empty_like(a): flipped along a seen in that order)
        return self._in_torch_order(cn.flip, self._dense(a), order, axes)

    def cat(self, arrays, axis):
        # (the same array listed many times makes a result larger than its inputs)
        self._check_fits((sum(x.size for x in arrays),), arrays[0].dtype)
        return cn.concatenate(arrays, axis=axis)

    # index
    def gather(self, a, axis, index):
        self._check_fits(index.shape, a.dtype)  # (complex128 is twice int64's bytes)
        flat = self.reshape(a, (a.size,))
        return cn.take(flat, self._flat_positions(a.shape, axis, index), mode="clip")

    def take(self, a, axis, index):
        # a few indices can select many large rows
        self._check_fits((*a.shape[:axis], *index.shape, *a.shape[axis + 1 :]), a.dtype)
        return cn.take(a, index, axis=axis, mode="clip")

    def scatter(self, a, axis, index, src):
        # put_along_axis would broadcast an index shorter than `a` along another axis over
        # all of it (NumPy's rule); the IR writes only where the index is (PyTorch's).
        n = index.size
        out = a.copy()
        positions = self.reshape(self._flat_positions(a.shape, axis, index), (n,))
        out.put(positions, self.reshape(src, (n,)), mode="clip")
        return out

    def scatter_add(self, a, axis, index, src):
        if index.size == 0:  # histogram refuses an empty input
            return a.copy()
        # New 1-d arrays: histogram asserts unit strides, which a reshaped view can lack.
        flat = self.reshape(self._flat_positions(a.shape, axis, index), (index.size,)).copy()
        weights = self.reshape(src, (src.size,))
        if a.dtype.kind == "c":
            # histogram's weights are real: _bin_sums' cast to float64 silently kept only the
            # real parts (cuPyNumeric 26.6). Each part is summed on its own (see .complex).
            part = numpy.dtype(f"float{a.dtype.itemsize * 4}")
            re = self._bin_sums(flat, cn.real(weights), a.size).astype(part)
            im = self._bin_sums(flat, cn.imag(weights), a.size).astype(part)
            return cn.add(a, self._from_parts(re, im, a.dtype).reshape(a.shape))
        if a.dtype == _I64:
            # float64 sums are exact only below 2**53: add 22-bit pieces, each exactly, and
            # join them with int64's wrapping arithmetic (as PyTorch's integer adds wrap)
            sums = cn.zeros(a.size, dtype=_I64)
            for shift in (0, 22, 44):
                piece = weights >> shift if shift == 44 else (weights >> shift) & 0x3FFFFF
                part = self._bin_sums(flat, piece, a.size).astype(_I64)
                sums = sums + (part << shift if shift else part)
            return cn.add(a, sums.reshape(a.shape))
        sums = self._bin_sums(flat, weights, a.size)
        if not _is_float(a) and a.dtype != numpy.bool_:
            sums = sums.astype(_I64)  # then wrap into a's type, as NumPy's integer adds do
        return cn.add(a, sums.reshape(a.shape).astype(a.dtype))

    def _bin_sums(self, positions, weights, size):
        """The float64 sum of ``weights`` at each of the ``size`` ``positions`` (1-d)."""
        # The float64 weights must fit, and histogram's task holds the bins' edges, their
        # sums and a buffer of as many at once (3 size + 1 float64 values), however few the
        # positions: Legion aborts the process where they do not fit.
        self._check_fits(weights.shape, _F64)
        self._check_fits((3 * size + 1,), _F64)
        # (astype returns its input itself where the dtype is already right)
        weights = weights.copy() if weights.dtype == _F64 else weights.astype(_F64)
        # One bin per position: bin k is [k - 0.5, k + 0.5).
        sums, _ = cn.histogram(positions, bins=size, range=(-0.5, size - 0.5), weights=weights)
        return sums

    def _flat_positions(self, shape, axis, index):
        """The position in a C-ordered array of ``shape`` of every element of ``index``
        (of ``shape``'s ndim): ``index`` along ``axis``, the element's own coordinate along
        the others."""
        strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
        terms = []
        for i, (n, stride) in enumerate(zip(index.shape, strides)):
            if i == axis:
                coordinate = index
            else:
                coordinate = cn.arange(n, dtype=_I64).reshape(
                    [n if j == i else 1 for j in range(len(shape))]
                )
            terms.append(coordinate * stride if stride != 1 else coordinate)
        return reduce(cn.add, terms) if terms else index  # a 0-d array's one place: 0

    def nonzero(self, a):
        return cn.argwhere(a)

    # linalg
    def matmul(self, a, b):
        if a.ndim > 1 and b.ndim > 1:  # (n, 1) @ (1, n) is n * n from 2n numbers
            batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            wide = a.dtype if a.dtype.kind in "fc" else _F64
            self._check_fits((*batch, a.shape[-2], b.shape[-1]), wide)
        if a.dtype.kind not in "fc":  # multiplied as float64 16-bit pieces (see .intmatmul)
            for m in (a, b):
                self._check_fits((m.size * max(1, m.dtype.itemsize // 2),), _F64)
        a, b = self._dense(a), self._dense(b)  # (after the checks: a copy can be large)
        if max(a.ndim, b.ndim) + 1 > self.max_ndim:
            return self._flat_batch_matmul(a, b)
        return self._matmul(a, b)

    def _flat_batch_matmul(self, a, b):
        """``a @ b`` with the batch axes joined into one: cuPyNumeric contracts over an index
        space of the batch axes and the three matrix axes, and Legate aborts the process
        where that passes max_ndim (a 6-d operand)."""
        a2 = a.reshape((1, a.size)) if a.ndim == 1 else a
        b2 = b.reshape((b.size, 1)) if b.ndim == 1 else b
        batch = numpy.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        joined = []
        for m in (a2, b2):
            self._check_fits((*batch, *m.shape[-2:]), m.dtype)  # the broadcast made dense
            dense = cn.broadcast_to(m, (*batch, *m.shape[-2:])).copy()
            joined.append(dense.reshape((math.prod(batch), *m.shape[-2:])))
        out = self._matmul(*joined).reshape((*batch, a2.shape[-2], b2.shape[-1]))
        if a.ndim == 1:
            out = out[..., 0, :]
        if b.ndim == 1:
            out = out[..., 0]
        return out

    @staticmethod
    def _matmul(a, b):
        if a.dtype.kind in "fc":
            return cn.matmul(a, b)
        if a.dtype == numpy.bool_:
            return cn.matmul(a.astype(_F64), b.astype(_F64)) != 0
        return integer_matmul(a, b)
