"""Python numbers in an optimizer's state that a replay computes afresh.

Adam's ``state["step"]`` grows by one each step, and the bias corrections computed from it
reach the backend as scalar arguments. Guarding on its value would trace every step.
Instead, while tracing, each float in optimizer state, each 0-d tensor an optimizer keeps
as a host-read scalar (its ``_scalar_state``: PyTorch's ``step``, NAdam's ``mu_product``,
which the step reads with ``.item()`` and writes in place), and each group's ``lr``, which
schedulers change, is replaced by a :class:`Sym`: a float with the same value that also
carries the Python expression computing it from the step's locations (``H3['step']``;
``_scalar(H3['step'])``, the tensor's ``.item()``). A scalar tensor stays in the state (a
step that returns or reads it sees the tensor): the optimizer reads and writes its value
through :data:`TRACED`, and each write gives the tensor a new array at once (an operation
on it after ``opt.step()`` sees the new count; the replay makes that operand from the
recomputed number, ``_scalar_array``); when the trace ends the tensor takes the array its
count shares, and the replay writes it there too (optim/scalar_arrays.py).
Arithmetic on it gives new ``Sym`` s, so a bias correction
``lr / (1 - beta1 ** step)`` that reaches a backend call becomes an expression the replay
evaluates; comparisons and ``bool()`` record guards the replay checks first. Conversions
Python does not route through the class (``float(x)``, ``math.sqrt(x)``) lose the
expression: a graph is trusted only once two consecutive traces give the same graph (see
:mod:`.compiled`), and a baked value would differ between them.
"""

from __future__ import annotations

import contextlib
import operator
import re
from typing import Any, Callable

from tensorweaver.optim import scalar_arrays
from tensorweaver.optim.optimizer import TRACED, as_float32
from tensorweaver.tensor import _UNCOUNTED, Tensor


def literal(value: Any) -> str | None:
    """Python source for ``value`` when it is a Sym or a finite number, else None."""
    if isinstance(value, Sym):
        return value.expr if value.live() else None
    if type(value) in (int, bool) or (type(value) is float and value - value == 0):
        return repr(value)
    if type(value) is float:  # inf and nan have no literal
        return f"float({repr(value)!r})"
    return None


class Guards(list):
    """A trace's comparisons of its Syms, ``(expression, outcome)``, and whether that trace
    has ended."""

    closed = False


class Sym(float):
    """A float whose value a replay recomputes from ``expr`` (see the module's docstring)."""

    expr: str
    guards: Any  # Guards, or a ReadLog for a value read (both say when the trace closed)

    def __new__(cls, value: float, expr: str, guards: Any) -> Sym:
        self = super().__new__(cls, value)
        self.expr = expr
        self.guards = guards
        return self

    def __bool__(self) -> bool:
        result = float.__float__(self) != 0
        if self.live():
            self.guards.append((f"({self.expr} != 0)", result))
        return result

    def live(self) -> bool:
        """Whether the trace that made this number is still running (else it is a plain
        float that some Python object kept: its expression names the holders of a trace
        that has ended)."""
        return not self.guards.closed

    def as_float32(self) -> float:
        """This number rounded to float32 (optim/optimizer.py's ``as_float32``), which the
        replay rounds too."""
        value = as_float32(float.__float__(self))
        return type(self)(value, f"_float32({self.expr})", self.guards) if self.live() else value

    def maximum(self, other: Any, first: bool) -> Any:
        """``max(self, other)`` (``first``: as ``max(self, other)``, else ``max(other,
        self)``), which the replay takes afresh: no guard on which is larger."""
        value = max(float.__float__(self), other) if first else max(other, float.__float__(self))
        if not self.live():
            return value
        text = literal(other)
        if text is None:  # (a number the expression cannot name: guarded as a comparison)
            return max(self, other) if first else max(other, self)
        pair = f"{self.expr}, {text}" if first else f"{text}, {self.expr}"
        return type(self)(float(value), f"max({pair})", self.guards)

    def _unnamed(self, other: Any) -> None:
        """Combined with ``other``, which the expression cannot name (a hook)."""

    def __hash__(self) -> int:
        # Unlike any other key while its trace runs: a cache keyed by numbers (the core's
        # scalar constants) must miss, so that the backend call making the constant is
        # recorded with the expression, rather than a cached array being baked in (or a
        # value guarded). A plain float's afterwards, as the eager step's number.
        return id(self) if self.live() else float.__hash__(self)


def _binary(op: Callable, symbol: str, reflected: bool) -> Callable:
    def method(self: Sym, other: Any) -> Any:
        if not self.live():
            plain = float.__float__(self)
            return op(other, plain) if reflected else op(plain, other)
        text = literal(other)
        if text is None:
            self._unnamed(other)
            if not isinstance(other, Sym):
                return NotImplemented  # the other operand's type decides
            text = literal(float.__float__(other))  # a number an earlier trace made: plain
        # Of two Syms, the more derived class keeps the result (a value read from a tensor
        # outranks an optimizer number: its guards must run where it was read).
        derived = isinstance(other, type(self)) and type(other) is not type(self)
        owner = other if derived and other.live() else self
        plain = float.__float__(other) if isinstance(other, Sym) else other
        a, b = (plain, float.__float__(self)) if reflected else (float.__float__(self), plain)
        value = op(a, b)
        left, right = (text, self.expr) if reflected else (self.expr, text)
        if type(value) is bool:  # a comparison: the replay checks that it still holds
            owner.guards.append((f"({left} {symbol} {right})", value))
            return value
        return type(owner)(value, f"({left} {symbol} {right})", owner.guards)

    return method


for _name, _op, _symbol in (
    ("add", operator.add, "+"),
    ("sub", operator.sub, "-"),
    ("mul", operator.mul, "*"),
    ("truediv", operator.truediv, "/"),
    ("floordiv", operator.floordiv, "//"),
    ("mod", operator.mod, "%"),
    ("pow", operator.pow, "**"),
):
    setattr(Sym, f"__{_name}__", _binary(_op, _symbol, False))
    setattr(Sym, f"__r{_name}__", _binary(_op, _symbol, True))
for _name, _op, _symbol in (
    ("eq", operator.eq, "=="),
    ("ne", operator.ne, "!="),
    ("lt", operator.lt, "<"),
    ("le", operator.le, "<="),
    ("gt", operator.gt, ">"),
    ("ge", operator.ge, ">="),
):
    setattr(Sym, f"__{_name}__", _binary(_op, _symbol, False))


def _unary(op: Callable, template: str) -> Callable:
    def method(self: Sym) -> Any:
        value = op(float.__float__(self))
        return type(self)(value, template.format(self.expr), self.guards) if self.live() else value

    return method


Sym.__neg__ = _unary(operator.neg, "(-{})")  # type: ignore
Sym.__pos__ = lambda self: self  # type: ignore
Sym.__abs__ = _unary(abs, "abs({})")  # type: ignore


#: Optimizer settings that schedulers change every step (OneCycleLR and CyclicLR cycle the
#: momentum, or Adam's beta1): recomputed like ``lr`` rather than guarded by value.
SETTINGS = ("lr", "momentum")


def lifted_setting(key: str, value: Any) -> bool:
    """Whether a param group's ``key: value`` is a number the replay reads afresh (only its
    type is guarded): ``lr`` and ``momentum`` as floats, ``betas`` as a pair of floats."""
    if key in SETTINGS:
        return type(value) is float
    return key == "betas" and type(value) is tuple and all(type(b) is float for b in value)


def lift(optimizers: list, bind: Callable[[Any, str], str], guards: Guards) -> list[tuple]:
    """Replace the floats and scalar tensors (:func:`_host_scalar`) in ``optimizers``' state
    and each group's scheduled settings (:func:`lifted_setting`) by Syms.

    Returns ``(holder, key, value)`` of each, ``value`` as traced (a scalar tensor itself),
    for :func:`lower` and :func:`unused`.
    """
    lifted = []
    for opt in optimizers:
        for group in opt.param_groups:
            for key, value in group.items():
                if key != "params" and lifted_setting(key, value):
                    lifted.append((group, key, value))
            scalars = getattr(opt, "_scalar_state", ())
            counted = getattr(opt, "_counted_state", ())
            seen = set()  # (a parameter listed twice: its state lifted once, lowered once)
            for p in group["params"]:
                if id(p) in seen:
                    continue
                seen.add(id(p))
                state = opt.state.get(p)
                for key, value in (state or {}).items():
                    if (
                        type(value) is float
                        or (key in scalars and _host_scalar(value))
                        or (key in counted and type(value) is int)
                    ):
                        lifted.append((state, key, value))
    TRACED.open = True
    for holder, key, value in lifted:
        target = f"{bind(holder, 'H')}[{key!r}]"
        if isinstance(value, Tensor):  # it stays where it is; the optimizer asks TRACED
            TRACED[id(value)] = [value, Sym(value.item(), _read(target), guards), []]
        elif type(value) is tuple:
            holder[key] = tuple(Sym(v, f"{target}[{i}]", guards) for i, v in enumerate(value))
        else:
            holder[key] = Sym(value, target, guards)
    return lifted


def _read(target: str) -> str:
    """The expression reading the scalar tensor at ``target`` (``H3['step']``) on the host
    (``_scalar``: optim/scalar_arrays.py's ``get``, a global of every replay)."""
    return f"_scalar({target})"


#: The reads :func:`_read` writes (``H`` names a holder: graph.py's ``bind``).
_READ = re.compile(r"\b_scalar\(H\d+\[[^\[\]]*\]\)")


def read_once(lines: list[str]) -> list[str]:
    """``lines`` (a replay's body) reading each lifted scalar tensor once, before them:
    several recomputed numbers use each (Adam's two bias corrections and its new step)."""
    reads = list(dict.fromkeys(_READ.findall("\n".join(lines))))
    if not reads:
        return lines
    names = {expr: f"h{i}" for i, expr in enumerate(reads)}
    return [f"{name} = {expr}" for expr, name in names.items()] + [
        _READ.sub(lambda m: names[m.group(0)], line) for line in lines
    ]


def _host_scalar(value: Any) -> bool:
    """Whether ``value`` is a 0-d floating-point tensor without autograd history, which an
    optimizer reads on the host and overwrites (a ``differentiable`` step's is recorded)."""
    return (
        isinstance(value, Tensor)
        and value.ndim == 0
        and value.dtype.is_floating_point
        and not value.requires_grad
    )


def unused(lifted: list[tuple], bind: Callable[[Any, str], str], used: str) -> list[str]:
    """Guards by value for the scheduled settings whose expressions ``used`` (the graph's
    recomputed numbers and comparisons) never names: the step used them in a way the
    replay cannot recompute (``float()``, ``math``), which baked the traced value in, or
    not at all. (Optimizer state keeps its type guards alone: its floats change every
    step, so a baked one fails the two-trace check.)"""
    checks = []
    for holder, key, value in lifted:
        if holder.get("params") is None:
            continue
        target = f"{bind(holder, 'H')}[{key!r}]"
        parts = enumerate(value) if type(value) is tuple else [(None, value)]
        for i, v in parts:
            expr = target if i is None else f"{target}[{i}]"
            if not re.search(rf"(?<!\w){re.escape(expr)}", used):
                checks.append(f"({expr} == {literal(v)})")
    return checks


def lower(
    lifted: list[tuple],
    bind: Callable[[Any, str], str],
    settle: Callable[[Tensor], None],
    written: Callable[[Any, str], None],
) -> list[str]:
    """Put plain numbers (and the scalar tensors, holding the step's new values) back; the
    write-backs that redo what the step did to them (each new value computed before any is
    assigned: they are expressions of the old ones). ``settle`` tells the graph builder
    that a scalar tensor's new storage is the tail's to write; ``written`` gives it the
    expression of each array the step wrote into a scalar tensor (which later operations
    may have read)."""
    values, stores = [], []
    for i, (holder, key, traced) in enumerate(lifted):
        value = holder.get(key)
        if value is None:
            continue
        target = f"{bind(holder, 'H')}[{key!r}]"
        if isinstance(traced, Tensor):
            _, value, writes = TRACED.pop(id(traced))
            for array, v in writes:
                _, expr = _plain(v, _read(target), bind)
                written(array, f"_scalar_array({target}, {expr or _read(target)})")
            if holder.get(key) is not traced:
                continue  # the step replaced the tensor: a write-back of the graph's
            number, expr = _plain(value, _read(target), bind)
            if expr is not None:
                # (The array every parameter's count shares, as eagerly: the next trace's
                # graph reads it as this one does.)
                _put(traced, number)
                settle(traced)
                values.append(f"s{i} = {expr}")
                # (As write_scalar: the step's count in the array every parameter's shares.)
                stores.append(f"_put_scalar({target}, s{i})")
            continue
        if type(value) is tuple:
            items = [_plain(v, f"{target}[{j}]", bind) for j, v in enumerate(value)]
            holder[key] = tuple(v for v, _ in items)
            if all(e is None for _, e in items):
                continue
            exprs = (e or f"{target}[{j}]" for j, (_, e) in enumerate(items))
            values.append(f"s{i} = ({', '.join(exprs)},)")
        else:
            holder[key], expr = _plain(value, target, bind)
            if type(traced) is int and isinstance(value, Sym):  # a count stays an int
                holder[key] = int(holder[key])
            if expr is None:
                continue
            values.append(f"s{i} = {expr}")
        stores.append(f"{target} = s{i}")
    for tensor, value, _ in TRACED.values():  # scalar tensors the step made
        _put(tensor, float(value))
    TRACED.clear()
    TRACED.open = False
    TRACED.quiet = contextlib.nullcontext
    return values + stores


def _put(tensor: Tensor, number: float) -> None:
    """Give the 0-d ``tensor`` the value ``number`` (as the eager step would have), a value
    the traced step wrote into it already: no second version of it."""
    take_uncounted(tensor, scalar_arrays.array_of(tensor, number))


def take_uncounted(t: Tensor, native: Any) -> None:
    """``t._take(native)`` as a write through ``t.data``: no new version of ``t``."""
    _UNCOUNTED[0] += 1
    try:
        t._take(native)
    finally:
        _UNCOUNTED[0] -= 1


def _plain(value: Any, target: str, bind: Callable[[Any, str], str]) -> tuple[Any, str | None]:
    """``value`` as a plain number, and the expression a replay computes it by (None: it
    is what ``target`` held before the step)."""
    if isinstance(value, Sym):
        return float(value), (None if value.expr == target else value.expr)
    return value, bind(value, "C")
