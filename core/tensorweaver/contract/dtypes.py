"""Dtype objects shared by the core and every backend.

Each dtype is a single object compared by identity (``a is float32``). A backend
maps these to its own array library's dtypes; ``numpy_name`` is the NumPy spelling
used for host transfer (``bfloat16`` travels to and from the host as ``float32``,
since NumPy has no bfloat16).
"""

from __future__ import annotations


class DType:
    """A tensor element type: ``kind`` is ``b`` (bool), ``u``, ``i`` or ``f``."""

    __slots__ = ("name", "kind", "itemsize", "numpy_name")

    def __init__(self, name: str, kind: str, itemsize: int, numpy_name: str) -> None:
        self.name = name
        self.kind = kind
        self.itemsize = itemsize
        self.numpy_name = numpy_name

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def is_complex(self) -> bool:
        return False  # every dtype here is real

    def to_real(self) -> DType:
        """The real dtype of this one's values: itself, as every dtype here is real."""
        return self

    def to_complex(self) -> DType:
        raise TypeError(
            f"{self!r}.to_complex(): tensorweaver has no complex dtypes; keep real and "
            "imaginary parts as two real tensors"
        )

    def __repr__(self) -> str:
        return f"tensorweaver.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = DType("bool", "b", 1, "bool")
uint8 = DType("uint8", "u", 1, "uint8")
int8 = DType("int8", "i", 1, "int8")
int16 = DType("int16", "i", 2, "int16")
int32 = DType("int32", "i", 4, "int32")
int64 = DType("int64", "i", 8, "int64")
float16 = DType("float16", "f", 2, "float16")
bfloat16 = DType("bfloat16", "f", 2, "float32")
float32 = DType("float32", "f", 4, "float32")
float64 = DType("float64", "f", 8, "float64")

ALL: tuple[DType, ...] = (
    bool_,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL}


def __getattr__(name: str) -> DType:
    # ``bool_`` pickles by its name, ``bool`` (PyTorch's), which this module cannot define
    # without hiding the builtin.
    if name == "bool":
        return bool_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
