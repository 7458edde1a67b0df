"""Python numbers in an optimizer's state that a replay computes afresh.

Adam's ``state["step"]`` is a Python float that grows by one each step, and the bias
corrections computed from it reach the backend as scalar arguments. Guarding on its value
would trace every step. Instead, while tracing, each float in optimizer state (and each
group's ``lr``, which schedulers change) is replaced by a :class:`Sym`: a float with the
same value that also carries the Python expression computing it from the step's
locations (``H3['step']``). Arithmetic on it gives new ``Sym`` s, so a bias correction
``lr / (1 - beta1 ** step)`` that reaches a backend call becomes an expression the replay
evaluates; comparisons and ``bool()`` record guards the replay checks first. Conversions
Python does not route through the class (``float(x)``, ``math.sqrt(x)``) lose the
expression: a graph is trusted only once two consecutive traces give the same graph (see
:mod:`.compiled`), and a baked value would differ between them.
"""

from __future__ import annotations

import operator
from typing import Any, Callable


def literal(value: Any) -> str | None:
    """Python source for ``value`` when it is a Sym or a finite number, else None."""
    if isinstance(value, Sym):
        return value.expr if value.live() else None
    if type(value) in (int, bool) or (type(value) is float and value - value == 0):
        return repr(value)
    if type(value) is float:  # inf and nan have no literal
        return f"float({repr(value)!r})"
    return None


class Sym(float):
    """A float whose value a replay recomputes from ``expr`` (see the module's docstring)."""

    expr: str
    guards: list

    def __new__(cls, value: float, expr: str, guards: list) -> Sym:
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
        float that some Python object kept)."""
        return True

    def _unnamed(self, other: Any) -> None:
        """Combined with ``other``, which the expression cannot name (a hook)."""

    def __hash__(self) -> int:
        # Unlike any other key: a cache keyed by numbers (the core's scalar constants) must
        # miss, so that the backend call making the constant is recorded with the
        # expression, rather than a cached array being baked in (or a value guarded).
        return id(self)


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


def lift(optimizers: list, bind: Callable[[Any, str], str], guards: list) -> list[tuple]:
    """Replace the floats in ``optimizers``' state and each group's ``lr`` by Syms.

    Returns ``(holder, key)`` of each, for :func:`lower`.
    """
    lifted = []
    for opt in optimizers:
        for group in opt.param_groups:
            if type(group.get("lr")) is float:
                lifted.append((group, "lr"))
            for p in group["params"]:
                state = opt.state.get(p)
                for key, value in (state or {}).items():
                    if type(value) is float:
                        lifted.append((state, key))
    for holder, key in lifted:
        holder[key] = Sym(holder[key], f"{bind(holder, 'H')}[{key!r}]", guards)
    return lifted


def lower(lifted: list[tuple], bind: Callable[[Any, str], str]) -> list[str]:
    """Put plain floats back; the write-backs that redo what the step did to them (each
    new value computed before any is assigned: they are expressions of the old ones)."""
    values, stores = [], []
    for i, (holder, key) in enumerate(lifted):
        value = holder.get(key)
        if value is None:
            continue
        target = f"{bind(holder, 'H')}[{key!r}]"
        if isinstance(value, Sym):
            holder[key] = float(value)
            if value.expr == target:
                continue
            values.append(f"s{i} = {value.expr}")
        else:
            values.append(f"s{i} = {bind(value, 'C')}")
        stores.append(f"{target} = s{i}")
    return values + stores
