"""Containers against PyTorch, the same code run with ``m = torch`` and ``m = tensorweaver``:
Sequential (indexing, slicing, insert, extend, pop, +, *, +=, *=, del), ModuleList,
ModuleDict, ParameterList and ParameterDict operations, their errors and their printing."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import pytest
import test_sweep_module_api

backend = test_sweep_module_api.backend  # the fixture: numpy and torch:cpu in float64
same = test_sweep_module_api.same


def seq(m: Any) -> Any:
    return m.nn.Sequential(m.nn.ReLU(), m.nn.Tanh(), m.nn.Sigmoid(), m.nn.Identity())


def named(m: Any) -> Any:
    return m.nn.Sequential(OrderedDict(a=m.nn.ReLU(), b=m.nn.Tanh(), c=m.nn.Identity()))


def after(action: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """``action(container)``, then the container's repr and keys, and what ``action``
    returned (a module as its repr, a container as its keys)."""

    def code(container: Any) -> Any:
        result = action(container)
        if hasattr(result, "_modules"):
            result = (repr(result), list(result._modules))
        return result, repr(container), list(container._modules)

    return code


SEQUENTIAL: dict[str, Callable[[Any], Any]] = {
    "index": lambda m: seq(m)[1],
    "negative index": lambda m: seq(m)[-1],
    "index out of range": lambda m: seq(m)[4],
    "index not int": lambda m: seq(m)["0"],
    "slice": lambda m: after(lambda s: s[1:3])(seq(m)),
    "slice step": lambda m: after(lambda s: s[::-2])(seq(m)),
    "named slice": lambda m: after(lambda s: s[1:])(named(m)),
    "named index": lambda m: named(m)[1],
    "setitem": lambda m: after(lambda s: s.__setitem__(0, m.nn.ELU()))(seq(m)),
    "setitem named": lambda m: after(lambda s: s.__setitem__(-1, m.nn.ELU()))(named(m)),
    "delitem": lambda m: after(lambda s: s.__delitem__(1))(seq(m)),
    "delitem slice": lambda m: after(lambda s: s.__delitem__(slice(0, 2)))(seq(m)),
    "delitem named": lambda m: after(lambda s: s.__delitem__(0))(named(m)),
    "append": lambda m: after(lambda s: s.append(m.nn.ELU()))(seq(m)),
    "extend": lambda m: after(lambda s: s.extend([m.nn.ELU(), m.nn.GELU()]))(seq(m)),
    "extend sequential": lambda m: after(lambda s: s.extend(named(m)))(seq(m)),
    "insert": lambda m: after(lambda s: s.insert(1, m.nn.ELU()))(seq(m)),
    "insert end": lambda m: after(lambda s: s.insert(4, m.nn.ELU()))(seq(m)),
    "insert negative": lambda m: after(lambda s: s.insert(-1, m.nn.ELU()))(seq(m)),
    "insert out of range": lambda m: seq(m).insert(9, m.nn.ELU()),
    "insert not module": lambda m: seq(m).insert(0, 3),
    "pop": lambda m: after(lambda s: s.pop(1))(seq(m)),
    "pop slice": lambda m: after(lambda s: s.pop(slice(1, 3)))(seq(m)),
    "add": lambda m: after(lambda s: s + named(m))(seq(m)),
    "add list": lambda m: seq(m) + [m.nn.ReLU()],
    "iadd": lambda m: after(lambda s: s.__iadd__(named(m)))(seq(m)),
    "iadd list": lambda m: seq(m).__iadd__([m.nn.ReLU()]),
    "mul": lambda m: after(lambda s: s * 2)(seq(m)),
    "rmul": lambda m: after(lambda s: 2 * s)(seq(m)),
    "mul zero": lambda m: seq(m) * 0,
    "mul float": lambda m: seq(m) * 1.5,
    "imul": lambda m: after(lambda s: s.__imul__(2))(seq(m)),
    "imul zero": lambda m: seq(m).__imul__(0),
    "len iter": lambda m: (len(seq(m)), [type(x).__name__ for x in seq(m)]),
    "dir hides digits": lambda m: [k for k in dir(seq(m)) if k.isdigit()],
    "forward": lambda m: seq(m)(m.tensor([-1.0, 0.5])),
    "empty forward": lambda m: m.nn.Sequential()(m.tensor([1.0])),
    "repr": lambda m: repr(m.nn.Sequential(m.nn.Linear(1, 2), named(m))),
    "ordered dict init": lambda m: list(named(m)._modules),
    "bad init": lambda m: m.nn.Sequential(3),
}


@pytest.mark.parametrize("name", list(SEQUENTIAL))
def test_sequential(backend: str, name: str) -> None:
    same(SEQUENTIAL[name])


def mlist(m: Any) -> Any:
    return m.nn.ModuleList([m.nn.ReLU(), m.nn.Tanh(), m.nn.ReLU()])


MODULE_LIST: dict[str, Callable[[Any], Any]] = {
    "index": lambda m: mlist(m)[-2],
    "index out of range": lambda m: mlist(m)[3],
    "slice": lambda m: after(lambda s: s[::2])(mlist(m)),
    "setitem": lambda m: after(lambda s: s.__setitem__(-1, m.nn.ELU()))(mlist(m)),
    "delitem": lambda m: after(lambda s: s.__delitem__(0))(mlist(m)),
    "delitem slice": lambda m: after(lambda s: s.__delitem__(slice(1, None)))(mlist(m)),
    "append": lambda m: after(lambda s: s.append(m.nn.ELU()))(mlist(m)),
    "extend": lambda m: after(lambda s: s.extend(mlist(m)))(mlist(m)),
    "extend module": lambda m: mlist(m).extend(m.nn.ReLU()),
    "extend not iterable": lambda m: mlist(m).extend(3),
    "insert": lambda m: after(lambda s: s.insert(1, m.nn.ELU()))(mlist(m)),
    "insert end": lambda m: after(lambda s: s.insert(3, m.nn.ELU()))(mlist(m)),
    "pop": lambda m: after(lambda s: s.pop(-1))(mlist(m)),
    "add": lambda m: after(lambda s: s + [m.nn.ELU()])(mlist(m)),
    "iadd": lambda m: after(lambda s: s.__iadd__([m.nn.ELU()]))(mlist(m)),
    "repr runs": lambda m: repr(
        m.nn.ModuleList([m.nn.Linear(1, 1) for _ in range(3)] + [m.nn.ReLU(), m.nn.ReLU()])
    ),
    "repr empty": lambda m: repr(m.nn.ModuleList()),
    "append not module": lambda m: mlist(m).append(3),
    "dir hides digits": lambda m: [k for k in dir(mlist(m)) if k.isdigit()],
    "not callable": lambda m: mlist(m)(m.ones(1)),
}


@pytest.mark.parametrize("name", list(MODULE_LIST))
def test_module_list(backend: str, name: str) -> None:
    same(MODULE_LIST[name])


def mdict(m: Any) -> Any:
    return m.nn.ModuleDict({"b": m.nn.ReLU(), "a": m.nn.Tanh()})


MODULE_DICT: dict[str, Callable[[Any], Any]] = {
    "order": lambda m: list(mdict(m)),
    "getitem": lambda m: mdict(m)["a"],
    "getitem missing": lambda m: mdict(m)["z"],
    "setitem": lambda m: after(lambda d: d.__setitem__("c", m.nn.ELU()))(mdict(m)),
    "setitem dotted": lambda m: mdict(m).__setitem__("c.d", m.nn.ELU()),
    "setitem not module": lambda m: mdict(m).__setitem__("c", 3),
    "delitem": lambda m: after(lambda d: d.__delitem__("b"))(mdict(m)),
    "pop": lambda m: after(lambda d: d.pop("b"))(mdict(m)),
    "pop missing": lambda m: mdict(m).pop("z"),
    "clear": lambda m: after(lambda d: d.clear())(mdict(m)),
    "keys values items": lambda m: (
        list(mdict(m).keys()),
        [type(v).__name__ for v in mdict(m).values()],
        [k for k, _ in mdict(m).items()],
    ),
    "contains": lambda m: ("a" in mdict(m), "z" in mdict(m)),
    "update pairs": lambda m: after(lambda d: d.update([("c", m.nn.ELU()), ("a", m.nn.GELU())]))(
        mdict(m)
    ),
    "update ordered": lambda m: after(lambda d: d.update(OrderedDict(z=m.nn.ELU(), y=m.nn.GELU())))(
        mdict(m)
    ),
    "update moduledict": lambda m: after(lambda d: d.update(mdict(m)))(mdict(m)),
    "update bad element": lambda m: mdict(m).update([("c", m.nn.ELU(), 1)]),
    "update not iterable": lambda m: mdict(m).update(3),
    "update element not iterable": lambda m: mdict(m).update([3]),
    "repr": lambda m: repr(mdict(m)),
    "not callable": lambda m: mdict(m)(m.ones(1)),
}


@pytest.mark.parametrize("name", list(MODULE_DICT))
def test_module_dict(backend: str, name: str) -> None:
    same(MODULE_DICT[name])


def plist(m: Any) -> Any:
    return m.nn.ParameterList([m.nn.Parameter(m.ones(2)), m.zeros(1, 3)])


def pdict(m: Any) -> Any:
    return m.nn.ParameterDict({"b": m.nn.Parameter(m.ones(2)), "a": m.zeros(3)})


PARAMETERS: dict[str, Callable[[Any], Any]] = {
    "list params": lambda m: [(n, p) for n, p in plist(m).named_parameters()],
    "list wraps tensors": lambda m: [type(p).__name__ for p in plist(m)],
    "list getitem": lambda m: plist(m)[-1],
    "list getitem out of range": lambda m: plist(m)[2],
    "list slice": lambda m: list(plist(m)[1:]),
    "list setitem": lambda m: (lambda p: (p.__setitem__(0, m.ones(4)), list(p))[1])(plist(m)),
    "list append object": lambda m: (lambda p: (p.append("text"), len(p), repr(p))[1:])(plist(m)),
    "list extend": lambda m: len(plist(m).extend([m.ones(1)])),
    "list extend tensor": lambda m: plist(m).extend(m.ones(2)),
    "list iadd": lambda m: len(plist(m).__iadd__([m.ones(1)])),
    "list repr": lambda m: repr(plist(m)),
    "list state_dict": lambda m: list(plist(m).state_dict()),
    "list call": lambda m: plist(m)(1),
    "list dir": lambda m: [k for k in dir(plist(m)) if k.isdigit()],
    "dict order": lambda m: list(pdict(m)),
    "dict params": lambda m: [(n, p) for n, p in pdict(m).named_parameters()],
    "dict getitem missing": lambda m: pdict(m)["z"],
    "dict non-str key": lambda m: pdict(m).__setitem__(1, m.ones(1)),
    "dict get": lambda m: (pdict(m).get("a"), pdict(m).get("z", 5)),
    "dict setdefault": lambda m: (lambda d: (d.setdefault("c", m.ones(1)), list(d))[1])(pdict(m)),
    "dict pop": lambda m: (lambda d: (d.pop("a"), list(d)))(pdict(m)),
    "dict popitem": lambda m: (lambda d: (d.popitem(), list(d)))(pdict(m)),
    "dict popitem empty": lambda m: m.nn.ParameterDict().popitem(),
    "dict clear": lambda m: (lambda d: (d.clear(), len(d))[1])(pdict(m)),
    "dict copy": lambda m: (lambda d: (list(d.copy()), d.copy()["a"] is d["a"]))(pdict(m)),
    "dict fromkeys": lambda m: list(pdict(m).fromkeys(["x", "y"], m.ones(1)).items()),
    "dict update pairs": lambda m: (lambda d: (d.update([("z", m.ones(1))]), list(d))[1])(pdict(m)),
    "dict update bad": lambda m: pdict(m).update([("z", m.ones(1), 3)]),
    "dict update not iterable": lambda m: pdict(m).update(3),
    "dict or": lambda m: list(pdict(m) | m.nn.ParameterDict({"c": m.ones(1)})),
    "dict ior": lambda m: (lambda d: list(d.__ior__(m.nn.ParameterDict({"c": m.ones(1)}))))(
        pdict(m)
    ),
    "dict reversed": lambda m: list(reversed(pdict(m))),
    "dict contains": lambda m: ("a" in pdict(m), "z" in pdict(m)),
    "dict repr": lambda m: repr(pdict(m)),
    "dict object value": lambda m: (
        lambda d: (d.__setitem__("s", "text"), repr(d), list(d.state_dict()))[1:]
    )(pdict(m)),
    "dict delitem missing": lambda m: pdict(m).__delitem__("z"),
    "dict call": lambda m: pdict(m)(1),
}


@pytest.mark.parametrize("name", list(PARAMETERS))
def test_parameter_containers(backend: str, name: str) -> None:
    same(PARAMETERS[name])
