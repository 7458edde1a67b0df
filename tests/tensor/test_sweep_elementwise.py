"""A differential sweep of elementwise ops against PyTorch: seeded random programs (op ×
calling form × dtypes × pairing) over every dtype, Python scalars of every kind (big ints
too), 0-d, broadcast and empty operands, NaN, inf and -0.0. Each program runs on
tensorweaver and on torch; the results (dtype, shape, values: integers exactly, floats within
a few units in the last place with NaN in the same places and the sign of a zero kept) or the
exception classes must agree. Where torch raises, tensorweaver must raise too.

Out of the sample (tensorweaver differs, see the report of the ninth session): torch's
half-precision complex dtype (complex32), complex operands holding inf, NaN or values near
overflow (torch's kernels mix non-finite parts into both parts), functions torch refuses a
Python number for (maximum, fmax, logical_and ...), complex logaddexp, and in-place bitwise
operators (``a &= b``: Tensor's ``__iand__``).
"""

from __future__ import annotations

import math
import operator
import os
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import DTYPE_NAMES, builtin_class, supports

DTYPES = DTYPE_NAMES
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
TINY = {"float16": 6.1e-5, "bfloat16": 1.2e-38, "float32": 1.2e-38, "float64": 2.3e-308}
ULPS = 4
#: Special functions whose algorithms differ between libraries by a few more units.
ULPS_OF = {"lgamma": 16, "digamma": 16, "erfinv": 16, "i0": 16, "pow": 16, "float_power": 16}
ULPS_OF["ldexp"] = 16  # torch's complex ldexp goes through a complex power
#: Ops that cancel to near 0 (log(e^a + e^b) for a, b < 0, lgamma near its roots; x + v t1 t2,
#: which torch's kernels may fuse into one rounding): errors relative to max(|r|, 1).
NEAR_UNIT = {"logaddexp", "logaddexp2", "lgamma", "digamma", "addcmul", "addcdiv"}
#: (torch's kernels fuse the last multiply-add there, so a result that cancels to 0 may be
#: -1e-8 in float32, -0.0 in float16: its sign is not compared)
nan, inf = math.nan, math.inf

BINARY = (
    "add sub mul div true_divide floor_divide remainder fmod pow float_power atan2 maximum "
    "minimum fmax fmin eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and "
    "bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift hypot copysign nextafter "
    "xlogy logaddexp logaddexp2 gcd lcm ldexp"
).split()
#: Functions whose ``other`` torch takes only as a Tensor (tensorweaver also takes numbers).
TENSOR_OTHER = {"maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor"}
OPERATORS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "bitwise_left_shift": operator.lshift,
    "bitwise_right_shift": operator.rshift,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
IN_PLACE_OPERATORS = {
    "add": operator.iadd,
    "sub": operator.isub,
    "mul": operator.imul,
    "div": operator.itruediv,
    "floor_divide": operator.ifloordiv,
    "remainder": operator.imod,
    "pow": operator.ipow,
    "bitwise_left_shift": operator.ilshift,
    "bitwise_right_shift": operator.irshift,
}
UNARY = (
    "abs neg exp exp2 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan tanh sinh cosh asin "
    "acos atan asinh acosh atanh sigmoid relu erf erfc erfinv sign sgn reciprocal square floor "
    "ceil round trunc fix frac isnan isinf isfinite isposinf isneginf nan_to_num logical_not "
    "bitwise_not signbit deg2rad rad2deg lgamma digamma i0 sinc logit angle conj"
).split()
#: Ops whose complex forms differ from torch's (left open): complex logaddexp is refused, and
#: a zero complex base to a power with a negative real part is NaN here, inf in torch.
COMPLEX_OPEN = {"logaddexp", "pow", "float_power"}
#: Unary functions without ``out=`` in torch.
NO_OUT = {"isnan", "isinf", "isfinite", "relu", "conj"}
#: out= of these is left open: tensorweaver's have none (fmax, fmin, isposinf, isneginf live
#: in ops/spellings.py), and torch's ldexp out= trips an internal assert for some dtypes.
OUT_OPEN = {"fmax", "fmin", "isposinf", "isneginf", "ldexp"}
#: Where the sign of a zero result is either: ties of ±0 (torch's own kernels pick either
#: operand), and remainder (the IR leaves it to the backend).
ZERO_SIGN_FREE = {"maximum", "minimum", "fmax", "fmin", "remainder", "clamp"}
SCALARS = (True, False, 0, 3, -2, 2**40, 2**63 - 1, -(2**63), 2.5, -0.0, nan, inf, -inf, 0.5)
SCALARS += (-0.5, 1e39, 1e-8, 2**63, 2**64 - 1, 2**64, 1 + 2j, 0j, -1.5j)


# --- values ---------------------------------------------------------------------------------


def host_values(
    rng: np.random.Generator, dtype: str, n: int, *, no_min: bool, finite: bool
) -> np.ndarray:
    """``n`` values for ``dtype``: the extremes, zeros of both signs, NaN and infinities (none
    in complex numbers, nor where ``finite``), and a few ordinary ones. ``no_min`` leaves out
    the most negative integer (torch's CPU traps on INT_MIN / -1)."""
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype == "uint8":
        return rng.choice(np.array([0, 1, 2, 3, 7, 100, 127, 128, 200, 255], np.uint8), n)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        pool = [0, 1, -1, 2, -2, 3, -3, 5, -7, 31, 64, int(info.max), int(info.min) + 1]
        pool += [] if no_min else [int(info.min)]
        return rng.choice(np.array(pool, dtype), n)
    pool = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.0, 1e-3, 100.25, -1e4, 0.7]
    pool += [-1.3, 1e-8]
    if dtype.startswith("complex"):  # nothing near overflow (see the module's docstring)
        moderate = [v for v in pool if abs(v) < 1e3]
        return rng.choice(moderate, n) + 1j * rng.choice(moderate, n)
    return rng.choice(pool + [65504.0, 1e30] + ([] if finite else [nan, inf, -inf]), n)


def operand(
    rng: np.random.Generator,
    dtype: str,
    shape: tuple,
    *,
    no_min: bool = False,
    finite: bool = False,
):
    """``m -> tensor`` of ``shape``, the same values on both libraries."""
    count = int(np.prod(shape))
    values = host_values(rng, dtype, count, no_min=no_min, finite=finite).reshape(shape)

    def make(m: Any) -> Any:
        if dtype == "bfloat16":  # from float64: float32's NaN would become a negative one
            return m.tensor(values).to(m.bfloat16)
        return m.tensor(values, dtype=getattr(m, dtype))

    return make


# --- comparing ------------------------------------------------------------------------------


def host(t: Any) -> tuple[str, np.ndarray]:
    name = str(t.dtype).rsplit(".", 1)[-1]
    t = t.detach().resolve_conj()
    if name == "bfloat16":
        t = t.float()
    return name, np.asarray(t.numpy()).copy()


def value_difference(
    ours: np.ndarray, theirs: np.ndarray, dtype: str, zero_sign: bool, ulps: int, floor: float
) -> str:
    """Where ``ours`` differs from ``theirs`` (host arrays of ``dtype``), or ''."""
    if dtype.startswith("complex"):
        # Each part within a few ulps of the modulus (a complex result's error is relative
        # to it); the signs of zero parts are the kernels' own.
        part = "float32" if dtype == "complex64" else "float64"
        scale = np.maximum(np.abs(theirs.astype(np.complex128)), floor)
        for name, get in (("real", np.real), ("imag", np.imag)):
            found = _float_difference(get(ours), get(theirs), part, scale, False, ulps)
            if found:
                return f"{name} {found}"
        return ""
    if dtype not in EPS:
        bad = ours != theirs
        if not bad.any():
            return ""
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"at {at}: {ours[at]!r}, torch {theirs[at]!r}"
    scale = np.maximum(np.abs(theirs.astype(np.float64)), floor)
    return _float_difference(ours, theirs, dtype, scale, zero_sign, ulps)


def _float_difference(
    ours: np.ndarray,
    theirs: np.ndarray,
    dtype: str,
    scale: np.ndarray,
    zero_sign: bool,
    ulps: int,
) -> str:
    a, e = ours.astype(np.float64), theirs.astype(np.float64)
    with np.errstate(all="ignore"):
        allowed = ulps * EPS[dtype] * np.maximum(scale, TINY[dtype])
        close = (a == e) | (np.abs(a - e) <= allowed)
    bad = (np.isnan(a) != np.isnan(e)) | (~np.isnan(e) & ~close)
    if zero_sign:
        bad |= (e == 0) & (a == 0) & (np.signbit(a) != np.signbit(e))
    if not bad.any():
        return ""
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"at {at}: {ours[at]!r}, torch {theirs[at]!r}"


def difference(ours: Any, theirs: Any, zero_sign: bool, ulps: int, floor: float) -> str:
    if isinstance(theirs, tuple):  # (what an out= call returns, the out tensor)
        if not isinstance(ours, tuple) or len(ours) != len(theirs):
            return f"{ours!r}, torch {theirs!r}"
        for i, (mine, want) in enumerate(zip(ours, theirs)):
            found = difference(mine, want, zero_sign, ulps, floor)
            if found:
                return f"[{i}] {found}"
        return ""
    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, tw.Tensor):
            return f"{type(ours).__name__}, torch gives a tensor"
        (name, a), (want, e) = host(ours), host(theirs)
        if name != want:
            return f"dtype {name}, torch {want}"
        if a.shape != e.shape:
            return f"shape {a.shape}, torch {e.shape}"
        return value_difference(a, e, name, zero_sign, ulps, floor)
    if type(ours) is not type(theirs) or not (ours == theirs or ours != ours == theirs != theirs):
        return f"{ours!r}, torch {theirs!r}"
    return ""


def outcome(program: Callable[[Any], Any], m: Any) -> tuple[Any, BaseException | None]:
    try:
        return program(m), None
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return None, error


def mismatch(
    program: Callable[[Any], Any], zero_sign: bool = True, ulps: int = ULPS, floor: float = 0.0
) -> str:
    """How ``program`` on tensorweaver differs from torch, or '': values within ``ulps``
    units of the larger of |torch's| and ``floor``, zeros of one sign if ``zero_sign``."""
    theirs, error = outcome(program, torch)
    ours, mine = outcome(program, tw)
    if error is not None:
        if not isinstance(mine, builtin_class(error)):
            got = f"raises {mine!r}" if mine is not None else "gives a result"
            return f"torch raises {type(error).__name__} ({str(error)[:80]}), tensorweaver {got}"
        return ""
    if mine is not None:
        return f"torch gives a result, tensorweaver raises {mine!r}"
    return difference(ours, theirs, zero_sign, ulps, floor)


# --- programs -------------------------------------------------------------------------------


def _check(op: str) -> dict[str, Any]:
    """How ``op``'s results are compared (keywords of :func:`mismatch`)."""
    return {
        "zero_sign": op not in ZERO_SIGN_FREE | NEAR_UNIT,
        "ulps": ULPS_OF.get(op, ULPS),
        "floor": 1.0 if op in NEAR_UNIT else 0.0,
    }


def _complex_with_half(*dtypes: str) -> bool:
    """Whether a complex operand meets a half-precision one (torch's complex32)."""
    return any(d.startswith("complex") for d in dtypes) and any(
        d in ("float16", "bfloat16") for d in dtypes
    )


def binary_program(rng: np.random.Generator):
    """(name, dtypes, program, check)."""
    op = str(rng.choice(BINARY))
    forms = ["fn", "method"] + (["in-place"] if hasattr(torch.Tensor, op + "_") else [])
    forms += [] if op in OUT_OPEN else ["out"]
    if op in OPERATORS:
        forms += ["operator", "operator", "reflected"]
    if op in IN_PLACE_OPERATORS:
        forms += ["in-place operator"]
    form = str(rng.choice(forms))
    da = str(rng.choice(DTYPES))
    no_min = op in ("div", "true_divide", "floor_divide", "remainder", "fmod", "gcd", "lcm")
    pairing = str(rng.choice(["same", "0-d right", "0-d left", "broadcast", "empty", "scalar"]))
    out = out_spec(rng)
    if form == "reflected" or (pairing == "scalar" and op not in TENSOR_OTHER):
        number = SCALARS[int(rng.integers(len(SCALARS)))]
        kind = type(number).__name__
        if isinstance(number, complex) and da in ("float16", "bfloat16"):
            number = 2.5  # a complex32 result
        if number == 2**64 or (op == "pow" and number == 2**63):
            number = 3  # which error comes first differs here (left open)
        if op in COMPLEX_OPEN and isinstance(number, complex):
            number = 2.5
        if op == "pow" and number == 2**64 - 1:
            number = 3  # which error comes first differs here (left open)
        if da.startswith("complex") and isinstance(number, float) and not abs(number) < 1e38:
            number = 2.5  # a non-finite real beside a complex tensor: see the docstring
        if op == "pow" and form == "reflected" and da.startswith("complex"):
            # not 0 (see COMPLEX_OPEN), nor a power as ill-conditioned as 2**63 - 1
            small = isinstance(number, (float, complex)) or number < 99
            number = number if number != 0 and small else 2
        # a real inf beside a complex number: see the docstring
        x = operand(rng, da, (5,), no_min=no_min, finite=isinstance(number, complex))
        call = _call(op, form, out)
        if form == "reflected":
            program = lambda m: call(m, number, x(m))  # noqa: E731
        else:
            program = lambda m: call(m, x(m), number)  # noqa: E731
        check = _out_check(op, out) if form == "out" else _check(op)
        return f"{op} {form} {da} {kind} {number!r}", (da, *_dtype_of(out)), program, check
    db = str(rng.choice(DTYPES))
    if _complex_with_half(da, db):
        db = da
    if op in COMPLEX_OPEN and "complex" in da + db:
        db = da = "float64"
    shapes = {
        "same": ((5,), (5,)),
        "0-d right": ((5,), ()),
        "0-d left": ((), (5,)),
        "broadcast": ((2, 1), (3,)),
        "empty": ((0,), (1,)),
        "scalar": ((4,), (4,)),
    }[pairing]
    if op == "ldexp" and not (da.startswith(("float", "bfloat")) and db in DTYPES[:6]):
        db = "int32"  # (a float exponent rounds as torch's kernel does: left open)
    finite = "complex" in da + db  # a real inf beside a complex operand: see the docstring
    x = operand(rng, da, shapes[0], no_min=no_min, finite=finite)
    y = operand(rng, db, shapes[1], no_min=no_min, finite=finite)
    call = _call(op, form if form != "reflected" else "operator", out)
    program = lambda m: call(m, x(m), y(m))  # noqa: E731
    name = f"{op} {form} {da}{list(shapes[0])} {db}{list(shapes[1])}"
    check = _out_check(op, out) if form == "out" else _check(op)
    return name, (da, db, *_dtype_of(out)), program, check


def _out_check(op: str, out: tuple[str | None, tuple[int, ...]]) -> dict[str, Any]:
    """:func:`_check` for a result written into ``out``: a float64 out holds a value torch
    computed in float32 (tan(tensor([True]), out=float64) is float32's tan), so its units are
    float32's."""
    check = _check(op)
    if out[0] in ("float64", "complex128"):
        check["ulps"] *= 2**29
    return check


def _dtype_of(out: tuple[str | None, tuple[int, ...]]) -> tuple[str, ...]:
    return () if out[0] is None else (out[0],)


def out_spec(rng: np.random.Generator) -> tuple[str | None, tuple[int, ...]]:
    """The dtype (None: the result's) and shape of an ``out=`` tensor: empty, or of a size
    that must be resized (PyTorch's deprecation warning, which is not compared)."""
    dtype = None if rng.random() < 0.5 else str(rng.choice(DTYPES))
    return dtype, [(0,), (3,)][int(rng.integers(2))]


def into_out(m: Any, spec: tuple[str | None, tuple[int, ...]], call: Callable[[Any], Any]):
    """``call(out)`` with an ``out`` tensor of ``spec``: (what it returns, out)."""
    dtype, shape = spec
    if dtype is None:
        dtype = str(call(None).dtype).rsplit(".", 1)[-1]
    out = m.zeros(shape, dtype=getattr(m, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call(out), out


def _call(op: str, form: str, out: tuple) -> Callable[..., Any]:
    if form == "fn":
        return lambda m, a, b: getattr(m, op)(a, b)
    if form == "out":
        return lambda m, a, b: into_out(m, out, lambda o: getattr(m, op)(a, b, out=o))
    if form == "method":
        return lambda m, a, b: getattr(a, op)(b)
    if form == "in-place":
        return lambda m, a, b: (getattr(a, op + "_")(b), a)[1]
    if form == "in-place operator":
        return lambda m, a, b: IN_PLACE_OPERATORS[op](a, b)
    return lambda m, a, b: OPERATORS[op](a, b)


def unary_program(rng: np.random.Generator):
    op = str(rng.choice(UNARY))
    dtypes = DTYPES if op != "sinc" else DTYPES[:10]  # complex sinc is refused (left open)
    forms = ["fn", "method"] + (["in-place"] if op != "signbit" else [])
    form = str(rng.choice(forms + (["out"] if op not in NO_OUT | OUT_OPEN else [])))
    dtype = str(rng.choice(dtypes))
    shape = [(7,), (), (0,), (2, 3)][int(rng.integers(4))]
    x = operand(rng, dtype, shape)
    out = out_spec(rng)
    if form == "fn":
        program = lambda m: getattr(m, op)(x(m))  # noqa: E731
    elif form == "out":
        program = lambda m: into_out(m, out, lambda o: getattr(m, op)(x(m), out=o))  # noqa: E731
    elif form == "method":
        program = lambda m: getattr(x(m), op)()  # noqa: E731
    else:
        program = lambda m: (lambda t: (getattr(t, op + "_")(), t)[1])(x(m))  # noqa: E731
    check = _out_check(op, out) if form == "out" else _check(op)
    return f"{op} {form} {dtype}{list(shape)}", (dtype, *_dtype_of(out)), program, check


def ternary_program(rng: np.random.Generator):
    """clamp with mixed bounds, where, lerp, addcmul and addcdiv with numbers and tensors."""
    op = str(rng.choice(["clamp", "where", "lerp", "addcmul", "addcdiv"]))
    da = str(rng.choice(DTYPES))
    x = operand(rng, da, (4,))

    def bound() -> Any:
        choice = rng.integers(4)
        if choice == 0:
            return None
        if choice == 1:  # no complex bounds, nothing beyond int64 or float32 (left open)
            return SCALARS[int(rng.integers(15))]
        # (no half-precision bound beside a complex x: 65504 * 2 is inf, see the docstring)
        d = str(rng.choice(DTYPES[:10] if not da.startswith("complex") else DTYPES[:6]))
        shape = [(4,), ()][int(rng.integers(2))]
        return operand(rng, d, shape, finite=da.startswith("complex")), d

    def arg(v: Any, m: Any) -> Any:
        return v[0](m) if isinstance(v, tuple) else v

    def dtypes_of(*vs: Any) -> tuple[str, ...]:
        return (da,) + tuple(v[1] for v in vs if isinstance(v, tuple))

    if op == "clamp":
        lo, hi = bound(), bound()
        return (
            f"clamp {da} {lo!r} {hi!r}",
            dtypes_of(lo, hi),
            lambda m: m.clamp(x(m), arg(lo, m), arg(hi, m)),
            _check(op),
        )
    a, b = bound(), bound()
    if op == "where":
        a = a if a is not None else 1.5
        cond = rng.random(4) < 0.5
        return (
            f"where {da} {a!r} {b!r}",
            dtypes_of(a, b),
            lambda m: m.where(m.tensor(cond), x(m) if b is None else arg(b, m), arg(a, m)),
            _check(op),
        )
    if op == "lerp":
        end = operand(rng, da, (4,))
        weight = a if a is not None else 0.25
        if da.startswith("complex") and isinstance(weight, float) and not math.isfinite(weight):
            weight = 0.25  # an infinite weight times a complex difference: see the docstring
        return (
            f"lerp {da} {weight!r}",
            dtypes_of(weight),
            lambda m: m.lerp(x(m), end(m), arg(weight, m)),
            _check(op),
        )
    db = str(rng.choice(DTYPES))
    if _complex_with_half(da, db) or "complex" in da + db:
        db = da  # a real operand's inf beside a complex one: see the module's docstring
    if op == "addcdiv" and da.startswith("complex"):
        db = da = "float64"  # a complex division by zero (left open)
        x = operand(rng, da, (4,))
    t1, t2 = operand(rng, db, (4,)), operand(rng, da, ())
    value = [1, 2, 0.5, -1.5, True, 2j, 300][int(rng.integers(7))]
    return (
        f"{op} {da} {db} value={value!r}",
        (da, db),
        lambda m: getattr(m, op)(x(m), t1(m), t2(m), value=value),
        _check(op),
    )


def programs(template: Callable, count: int, seed: int) -> list:
    return [template(np.random.default_rng([seed, i])) for i in range(count)]


#: Programs per template in the suite; TENSORWEAVER_SWEEP_SCALE=10 explores ten times as many.
SCALE = int(os.environ.get("TENSORWEAVER_SWEEP_SCALE", "1"))
SWEEP = {
    "binary": programs(binary_program, 4500 * SCALE, 11),
    "unary": programs(unary_program, 2000 * SCALE, 12),
    "ternary": programs(ternary_program, 1500 * SCALE, 13),
}
#: The programs of each template cuPyNumeric runs (the first ones; about 0.4 ms an op there).
ON_CUNUMERIC = {"binary": 150, "unary": 80, "ternary": 60}


_INVERSE_TRIG = ("asin ", "acos ", "atan ", "asinh ", "acosh ", "atanh ")


def _left_open(backend: str, name: str) -> bool:
    """Programs whose difference is left open: a number divided by a complex zero (NaN in
    torch, inf here and in C99); and those whose difference lies in a backend plugin
    (reported there): NumPy's power takes a 0-d exponent of 0.5 for sqrt ((-inf) **
    tensor(0.5) is NaN there, inf in torch); cuPyNumeric's integer powers do not wrap as C's
    (3 ** 255 is 0 in uint8, torch's 1), and its complex inverse trigonometric kernels lose
    digits (asin(1.57 + 0.001j) in complex64)."""
    if name.startswith(("div reflected complex", "true_divide reflected complex")):
        return True
    if backend == "numpy":
        return name.startswith(("pow ", "float_power ")) and name.endswith("[]")
    if backend == "cunumeric":
        integer_pow = name.startswith("pow ") and "float" not in name and "complex" not in name
        return integer_pow or (name.startswith(_INVERSE_TRIG) and "complex" in name)
    return False


def failures(backend: str, template: str, count: int) -> list[str]:
    found = []
    for i, (name, dtypes, program, check) in enumerate(SWEEP[template][:count]):
        if all(map(supports, dtypes)) and not _left_open(backend, name):
            problem = mismatch(program, **check)
            if problem:
                found.append(f"{i}: {name}: {problem}")
    return found


@pytest.mark.cunumeric
@pytest.mark.parametrize("template", sorted(SWEEP))
def test_random_programs_like_torch(backend: str, template: str) -> None:
    count = ON_CUNUMERIC[template] if backend == "cunumeric" else len(SWEEP[template])
    assert failures(backend, template, count) == []
