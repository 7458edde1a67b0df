"""A reader of the pickle opcodes ``torch.save`` writes, which never imports or calls anything
a file names.

Python's unpickler imports any ``module.name`` a file's ``GLOBAL`` opcode names and calls it
(``REDUCE``), which is how a pickle runs code. This reader is a small stack machine over the
opcodes a weights checkpoint holds (protocols 2 to 5: containers, numbers, strings, bytes,
memo, persistent ids), in which ``GLOBAL`` only looks a name up in the table its caller
passes (:mod:`.torch_checkpoint`'s allow-list of TensorWeaver constructors) and ``REDUCE``
only calls what that table gave. Opcodes that build arbitrary objects (``NEWOBJ``, ``BUILD``
with state, ``INST``, ``OBJ``, extension codes) and any fault of the stream raise
``pickle.UnpicklingError``, the type ``torch.load(weights_only=True)`` raises.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from pickle import UnpicklingError  # the exception type only: nothing here unpickles
from typing import Any, Callable


class Constructor:
    """A TensorWeaver function a ``GLOBAL`` name resolves to: the only thing ``REDUCE`` calls."""

    def __init__(self, name: str, build: Callable[..., Any]) -> None:
        self.name = name
        self.build = build

    def __repr__(self) -> str:
        return f"<constructor for {self.name}>"


class Opaque:
    """What a refused global gives while its names are only being listed (``lenient``)."""


def unpickle(
    data: bytes,
    find_global: Callable[[str, str], Any],
    persistent_load: Callable[[Any], Any],
    where: str,
    lenient: bool = False,
) -> Any:
    """The object the pickle ``data`` describes; ``find_global(module, name)`` resolves each
    global (raising ``UnpicklingError`` to refuse one), ``persistent_load(pid)`` each
    persistent id. ``lenient`` reads on past what cannot be rebuilt (an :class:`Opaque`
    stands for it), to list every global a file names; it still calls only constructors."""
    machine = _Machine(data, find_global, persistent_load, where, lenient)
    try:
        return machine.run()
    except UnpicklingError:
        raise
    except (IndexError, KeyError, TypeError, ValueError, struct.error, RecursionError) as e:
        raise UnpicklingError(
            f"tw.load: {where} holds a malformed pickle (data.pkl, opcode at byte "
            f"{machine.at}): {type(e).__name__}: {e}"
        ) from e


class _Machine:
    def __init__(
        self, data: bytes, find_global: Any, persistent_load: Any, where: str, lenient: bool
    ) -> None:
        self.data, self.pos, self.at = memoryview(data), 0, 0
        self.find_global, self.persistent_load, self.where = find_global, persistent_load, where
        self.stack: list[Any] = []
        self.marks: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.lenient = lenient

    def fail(self, what: str) -> UnpicklingError:
        return UnpicklingError(f"tw.load: {self.where}: {what} (data.pkl, byte {self.at})")

    def take(self, n: int) -> bytes:
        if not 0 <= n <= len(self.data) - self.pos:
            raise self.fail("the pickle is truncated (a damaged file)")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def unpack(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def line(self) -> str:
        end = bytes(self.data[self.pos : self.pos + 256]).find(b"\n")
        if end < 0:
            raise self.fail("a GLOBAL opcode's name is unterminated or longer than 256 bytes")
        return self.take(end + 1)[:-1].decode("utf-8")

    def proto(self) -> None:
        if self.take(1)[0] > 5:
            raise self.fail("the pickle protocol is newer than 5")

    def mark(self) -> None:
        self.marks.append(self.stack)
        self.stack = []

    def pop_mark(self) -> list[Any]:
        items = self.stack
        self.stack = self.marks.pop()
        return items

    def push_marked(self, kind: type) -> None:
        # pop first: the stack the items are pushed onto is the one below the mark
        items = kind(self.pop_mark())
        self.stack.append(items)

    def run(self) -> Any:
        while True:
            self.at = self.pos
            code = self.take(1)
            step = _STEPS.get(code)
            if step is None:
                raise self.fail(
                    f"opcode {code!r} is not one torch.save writes for weights (objects of "
                    "arbitrary classes are never rebuilt)"
                )
            if code == b".":
                if len(self.stack) != 1 or self.marks:
                    raise self.fail("the pickle ends with a malformed stack")
                return self.stack.pop()
            step(self)

    # -- opcodes -----------------------------------------------------------------------------

    def global_(self, module: str, name: str) -> None:
        self.stack.append(self.find_global(module, name))

    def reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack.pop()
        try:
            if not isinstance(func, Constructor) or not isinstance(args, tuple):
                raise self.fail(f"REDUCE applies {func!r:.60}, which is not an allowed constructor")
            try:
                self.stack.append(func.build(*args))
            except (TypeError, ValueError) as e:
                raise self.fail(f"{func.name} cannot be rebuilt from these arguments: {e}") from e
        except UnpicklingError:
            if not self.lenient:
                raise
            self.stack.append(Opaque())

    def new_object(self, keywords: bool) -> None:
        """NEWOBJ(_EX): an instance of a class, made only while listing globals."""
        if not self.lenient:
            raise self.fail("NEWOBJ makes an object of a class: objects are never rebuilt")
        del self.stack[len(self.stack) - (3 if keywords else 2) :]
        self.stack.append(Opaque())

    def build(self) -> None:
        state = self.stack.pop()
        target = self.stack[-1]
        if state is None or state == {} or isinstance(target, Opaque):
            return
        # a state dict's OrderedDict carries its _metadata as an attribute (data, never code)
        if (
            type(target) is OrderedDict
            and isinstance(state, dict)
            and all(isinstance(key, str) and not key.startswith("__") for key in state)
        ):
            vars(target).update(state)
            return
        raise self.fail(
            f"BUILD sets the state of {type(target).__name__}: objects with state are never "
            "rebuilt, but an OrderedDict's attributes"
        )

    def set_items(self, items: list[Any]) -> None:
        target = self.stack[-1]
        if isinstance(target, Opaque):
            return
        if not isinstance(target, dict) or len(items) % 2:
            raise self.fail("SETITEM(S) on something other than a dict")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def append_items(self, items: list[Any]) -> None:
        target = self.stack[-1]
        if isinstance(target, Opaque):
            return
        if isinstance(target, list):
            target.extend(items)
        elif isinstance(target, set):
            target.update(items)
        else:
            raise self.fail("APPEND(S)/ADDITEMS on something other than a list or set")

    def put(self, index: int) -> None:
        self.memo[index] = self.stack[-1]

    def get(self, index: int) -> None:
        if index not in self.memo:
            raise self.fail(f"memo entry {index} is read before it is written")
        self.stack.append(self.memo[index])


def _long(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=True)


def _text(m: _Machine, n: int) -> str:
    return m.take(n).decode("utf-8", "surrogatepass")


def _tuple(m: _Machine, n: int) -> None:
    items = tuple(m.stack[len(m.stack) - n :]) if n else ()
    if len(items) != n:
        raise m.fail("a TUPLE opcode finds too few items on the stack")
    del m.stack[len(m.stack) - n :]
    m.stack.append(items)


def _stack_global(m: _Machine) -> None:
    name, module = m.stack.pop(), m.stack.pop()
    if not (isinstance(module, str) and isinstance(name, str)):
        raise m.fail("STACK_GLOBAL needs two strings")
    m.global_(module, name)


def _dict(m: _Machine) -> None:
    items = m.pop_mark()
    m.stack.append({})
    m.set_items(items)


def _persistent(m: _Machine) -> None:
    m.stack.append(m.persistent_load(m.stack.pop()))


_STEPS: dict[bytes, Callable[[_Machine], Any]] = {
    b"\x80": lambda m: m.proto(),
    b"\x95": lambda m: m.take(8),  # FRAME: a length hint only
    b".": lambda m: None,  # STOP (handled by run)
    b"(": lambda m: m.mark(),
    b"0": lambda m: m.stack.pop(),
    b"1": lambda m: m.pop_mark(),
    b"2": lambda m: m.stack.append(m.stack[-1]),
    b"}": lambda m: m.stack.append({}),
    b"]": lambda m: m.stack.append([]),
    b")": lambda m: m.stack.append(()),
    b"\x8f": lambda m: m.stack.append(set()),
    b"d": _dict,
    b"l": lambda m: m.push_marked(list),
    b"t": lambda m: m.push_marked(tuple),
    b"\x85": lambda m: _tuple(m, 1),
    b"\x86": lambda m: _tuple(m, 2),
    b"\x87": lambda m: _tuple(m, 3),
    b"\x91": lambda m: m.push_marked(frozenset),
    b"a": lambda m: m.append_items([m.stack.pop()]),
    b"e": lambda m: m.append_items(m.pop_mark()),
    b"\x90": lambda m: m.append_items(m.pop_mark()),
    b"s": lambda m: m.set_items(list(reversed([m.stack.pop(), m.stack.pop()]))),
    b"u": lambda m: m.set_items(m.pop_mark()),
    b"q": lambda m: m.put(m.take(1)[0]),
    b"r": lambda m: m.put(m.unpack("<I")),
    b"\x94": lambda m: m.put(len(m.memo)),
    b"h": lambda m: m.get(m.take(1)[0]),
    b"j": lambda m: m.get(m.unpack("<I")),
    b"J": lambda m: m.stack.append(m.unpack("<i")),
    b"K": lambda m: m.stack.append(m.take(1)[0]),
    b"M": lambda m: m.stack.append(m.unpack("<H")),
    b"\x8a": lambda m: m.stack.append(_long(m.take(m.take(1)[0]))),
    b"\x8b": lambda m: m.stack.append(_long(m.take(m.unpack("<i")))),
    b"G": lambda m: m.stack.append(m.unpack(">d")),
    b"N": lambda m: m.stack.append(None),
    b"\x88": lambda m: m.stack.append(True),
    b"\x89": lambda m: m.stack.append(False),
    b"X": lambda m: m.stack.append(_text(m, m.unpack("<I"))),
    b"\x8c": lambda m: m.stack.append(_text(m, m.take(1)[0])),
    b"\x8d": lambda m: m.stack.append(_text(m, m.unpack("<Q"))),
    b"B": lambda m: m.stack.append(m.take(m.unpack("<I"))),
    b"C": lambda m: m.stack.append(m.take(m.take(1)[0])),
    b"\x8e": lambda m: m.stack.append(m.take(m.unpack("<Q"))),
    b"\x96": lambda m: m.stack.append(bytearray(m.take(m.unpack("<Q")))),
    b"c": lambda m: m.global_(m.line(), m.line()),
    b"\x93": _stack_global,
    b"Q": _persistent,
    b"R": lambda m: m.reduce(),
    b"\x81": lambda m: m.new_object(keywords=False),
    b"\x92": lambda m: m.new_object(keywords=True),
    b"b": lambda m: m.build(),
}
