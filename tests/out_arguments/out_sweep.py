"""PyTorch's ``out=`` compared on both sides, on the sample inputs of PyTorch's op database.

For each op whose OpInfo ``supports_out`` and whose function exists in ``torch`` and in
``tw`` under one dotted name, a sample (converted by the opinfo harness's :class:`Pair`,
fresh for each check, since ``out=`` writes) is run with:

- ``good``: empty ``out`` tensors of torch's result dtypes; the function must return ``out``
  itself (each of a tuple, as the ``<name>_out`` named tuple), holding torch's values;
- ``resize``: ``out`` with elements and another shape: resized, warning as torch warns;
- ``dtype``: ``out`` of another dtype (the other float width, float for ints, int64 for
  bool): it must raise where torch raises (its class), else hold torch's values;
- ``grad``: an ``out`` that requires grad: it must raise where torch raises;
- ``alias``: the first input as ``out`` (where its dtype and shape fit): it must raise where
  torch raises, else hold torch's values.

:func:`check_op` returns the differences as ``"op[sample] check: detail"`` lines.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import tensorweaver as tw
import torch
from opinfo.opinfo_harness import (  # the op database harness in tests/opinfo
    DTYPES,
    Pair,
    Unconvertible,
    compare_outputs,
    flat_tensors,
    op_db,
    op_id,
)

#: Dtypes tried for an op's samples, first supported first.
_SAMPLE_DTYPES = (torch.float64, torch.float32, torch.int64, torch.bool, torch.complex128)


def resolve(root: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


@cache
def out_ops() -> list[Any]:
    """The OpInfos with ``out=`` whose function both torch and tw have, by id."""
    found = []
    for op in op_db():
        if not op.supports_out:
            continue
        if callable(resolve(torch, op.name)) and callable(resolve(tw, op.name)):
            found.append(op)
    return sorted(found, key=op_id)


def sample_dtype(op: Any) -> torch.dtype | None:
    supported = op.supported_dtypes("cpu")
    return next((d for d in _SAMPLE_DTYPES if d in supported and d in DTYPES), None)


def samples(op: Any, limit: int) -> Iterator[Any]:
    dtype = sample_dtype(op)
    if dtype is None:
        return
    torch.manual_seed(0)
    for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
        if i >= limit:
            return
        yield sample


class Call:
    """One sample's arguments, converted afresh for each call on either side."""

    def __init__(self, op: Any, sample: Any) -> None:
        self.torch_fn = resolve(torch, op.name)
        self.tw_fn = resolve(tw, op.name)
        self.sample = sample

    def arguments(self) -> tuple[tuple, dict, tuple, dict]:
        (t_in, t_args, t_kwargs), (w_in, w_args, w_kwargs) = Pair().convert_sample(self.sample)
        return (t_in, *t_args), t_kwargs, (w_in, *w_args), w_kwargs

    def torch_call(self, out: Callable[[tuple], Any] | None, seed: int = 0) -> Any:
        """torch's result (or the exception it raised); ``out`` makes the out= argument
        from the positional arguments."""
        args, kwargs, _, _ = self.arguments()
        return _called(self.torch_fn, args, kwargs, out, lambda: torch.manual_seed(seed))

    def tw_call(self, out: Callable[[tuple], Any] | None, seed: int = 0) -> Any:
        _, _, args, kwargs = self.arguments()
        return _called(self.tw_fn, args, kwargs, out, lambda: tw.manual_seed(seed))


def _called(
    fn: Callable, args: tuple, kwargs: dict, out: Callable[[tuple], Any] | None, seed: Callable
) -> tuple:
    """(result or the exception raised, the out= argument, whether a resize warning came)."""
    if out is not None:
        kwargs["out"] = out(args)
    seed()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return fn(*args, **kwargs), kwargs.get("out"), _resized(caught)
    except Exception as error:
        return error, None, False


def _resized(caught: list) -> bool:
    return any("was resized" in str(w.message) for w in caught)


def _empty(like: Any, lib: Any, dtype: Any = None, *, shape: tuple = (0,), grad: bool = False):
    dtype = like.dtype if dtype is None else dtype
    if lib is tw:
        dtype = DTYPES[dtype]
    return lib.zeros(shape, dtype=dtype, requires_grad=grad)


def _other_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype.is_complex:
        return torch.complex64 if dtype == torch.complex128 else torch.complex128
    if dtype.is_floating_point:
        return torch.float32 if dtype == torch.float64 else torch.float64
    return torch.int64 if dtype == torch.bool else torch.float64


def _outs(expected: Any, lib: Any, make: Callable[[Any, Any], Any]) -> Any:
    if isinstance(expected, torch.Tensor):
        return make(expected, lib)
    return tuple(make(e, lib) for e in expected)


def check_op(op: Any, limit: int) -> list[str]:
    """Every difference from torch in ``op``'s out= on its first ``limit`` samples."""
    problems = []
    for index, sample in enumerate(samples(op, limit)):
        where = f"{op_id(op)}[{index}]"
        try:
            problems += [f"{where} {p}" for p in check_sample(Call(op, sample))]
        except Unconvertible:
            continue
    return problems


def check_sample(call: Call) -> list[str]:
    expected, _, _ = call.torch_call(None)
    if isinstance(expected, BaseException) or not flat_tensors(expected):
        return []
    if not isinstance(expected, torch.Tensor) and not all(
        isinstance(e, torch.Tensor) for e in expected
    ):
        return []
    plain, _, _ = call.tw_call(None)
    if isinstance(plain, BaseException) or compare_layout(expected, plain):
        return []  # tw's function itself differs: the op database sweep's finding, not out='s
    again, _, _ = call.torch_call(None, seed=1)
    random = compare_outputs(expected, _as_tw(again), "") is not None
    # where tw's values differ from torch's without out= (eigenvector signs, precision),
    # out= must hold tw's own values
    own = compare_outputs(expected, plain, "") is not None
    problems = []

    def compare(check: str, make: Callable[[Any, Any], Any]) -> None:
        want, t_out, t_warned = call.torch_call(lambda a: _outs(expected, torch, make))
        got, w_out, w_warned = call.tw_call(lambda a: _outs(expected, tw, make))
        problem = _differs(want, t_out, t_warned, got, w_out, w_warned, random, own and plain)
        if problem:
            problems.append(f"{check}: {problem}")

    compare("good", lambda e, lib: _empty(e, lib))
    compare("resize", lambda e, lib: _empty(e, lib, shape=(e.numel() + 2,)))
    compare("dtype", lambda e, lib: _empty(e, lib, _other_dtype(e.dtype)))
    compare("grad", lambda e, lib: _empty(e, lib, torch.float64, grad=True))
    first = call.sample.input
    if (
        isinstance(expected, torch.Tensor)
        and isinstance(first, torch.Tensor)
        and first.dtype == expected.dtype
        and first.shape == expected.shape
    ):
        want, t_out, _ = call.torch_call(lambda a: a[0])
        got, w_out, _ = call.tw_call(lambda a: a[0])
        if not isinstance(want, BaseException) and compare_outputs(expected, _as_tw(t_out), ""):
            random = True  # torch's kernel read its out after writing it: only layouts compare
        problem = _differs(want, t_out, False, got, w_out, False, random, own and plain)
        if problem:
            problems.append(f"alias: {problem}")
    return problems


def _as_tw(value: Any) -> Any:
    """A torch result as tw tensors (to compare two torch results with compare_outputs)."""
    if isinstance(value, torch.Tensor):
        return Pair().convert(value)[1]
    if isinstance(value, (tuple, list)):
        return tuple(_as_tw(v) for v in value)
    return value


def _differs(want, t_out, t_warned, got, w_out, w_warned, random, own) -> str | None:
    if isinstance(want, BaseException):
        if not isinstance(got, BaseException):
            return f"no error; torch {type(want).__name__}: {str(want)[:120]}"
        if not isinstance(got, type(want)):
            return f"{type(got).__name__}: {str(got)[:120]}; torch {type(want).__name__}"
        return None
    if isinstance(got, BaseException):
        return f"{type(got).__name__}: {str(got)[:160]}"
    if want is None:  # torch's list-writing functions return None
        if got is not None:
            return f"returned a {type(got).__name__}, torch None"
    elif isinstance(w_out, tw.Tensor):
        if got is not w_out:
            return f"returned a {type(got).__name__}, not out"
    else:
        if not isinstance(got, tuple) or any(g is not o for g, o in zip(got, w_out)):
            return f"returned {type(got).__name__}, not the out tensors"
        if type(got).__name__ != type(want).__name__:
            return f"returned a {type(got).__name__}, torch a {type(want).__name__}"
    if t_warned != w_warned:
        return f"resize warning {w_warned}, torch {t_warned}"
    if random:
        return compare_layout(t_out, w_out)
    if own is not False:  # tw's own values (of torch's dtype and shape)
        return compare_layout(t_out, w_out) or _same_values(own, w_out)
    outcome = compare_outputs(t_out, w_out, "out")
    return None if outcome is None else str(outcome)


def _same_values(plain: Any, out: Any) -> str | None:
    for p, o in zip(flat_tensors(plain), flat_tensors(out)):
        if p.dtype == o.dtype and not tw.equal(p, o) and not bool(tw.isnan(p).all()):
            return f"out holds other values than {type(plain).__name__} without out="
    return None


def compare_layout(want: Any, got: Any) -> str | None:
    """How the dtypes or shapes of two results differ, or None."""
    if len(flat_tensors(want)) != len(flat_tensors(got)):
        return "another number of results"
    for t, w in zip(flat_tensors(want), flat_tensors(got)):
        if str(t.dtype).rpartition(".")[2] != str(w.dtype).rpartition(".")[2]:
            return f"dtype {w.dtype}, torch {t.dtype}"
        if tuple(t.shape) != tuple(w.shape):
            return f"shape {tuple(w.shape)}, torch {tuple(t.shape)}"
    return None


def error_inputs_with_out(op: Any) -> list[Any]:
    """The database's error inputs of ``op`` that pass ``out=``."""
    if op.error_inputs_func is None:
        return []
    try:
        inputs = list(op.error_inputs("cpu"))
    except Exception:
        return []
    return [e for e in inputs if "out" in e.sample_input.kwargs and not _shares_apart(e)]


def _shares_apart(error_input: Any) -> bool:
    """Whether the error input's ``out`` shares memory with an input without being it, or
    repeats an element (an ``expand()``): the conversion gives each tensor its own
    contiguous memory, so those cases are named tests instead."""
    sample = error_input.sample_input
    outs = flat_tensors(sample.kwargs["out"])
    inputs = flat_tensors([sample.input, *sample.args])
    if any(0 in o.stride() for o in outs):
        return True
    return any(
        o is not t and o.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        for o in outs
        for t in inputs
    )
