"""Dtype objects shared by the core and every backend.

Each dtype is a single object compared by identity (``a is float32``). A backend
maps these to its own array library's dtypes; ``numpy_name`` is the NumPy spelling
used for host transfer (``bfloat16`` travels to and from the host as ``float32``,
since NumPy has no bfloat16).
"""

from __future__ import annotations


class DType:
    """A tensor element type: ``kind`` is ``b`` (bool), ``u``, ``i``, ``f`` or ``c`` (complex)."""

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
        return self.kind in "ifc"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    def to_real(self) -> DType:
        """The dtype of this one's real and imaginary parts (``complex64`` → ``float32``);
        a real dtype is its own."""
        return _REAL_OF.get(self, self)

    def to_complex(self) -> DType:
        """The complex dtype with this one's precision (``float32`` → ``complex64``)."""
        complex_dtype = _COMPLEX_OF.get(self)
        if complex_dtype is None:
            raise TypeError(
                f"{self!r}.to_complex(): only float32 and float64 (and complex dtypes) have "
                "a complex counterpart; cast to one of them first"
            )
        return complex_dtype

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
complex64 = DType("complex64", "c", 8, "complex64")
complex128 = DType("complex128", "c", 16, "complex128")

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
    complex64,
    complex128,
)
#: The complex dtypes, which a backend supports only where it lists them in its ``dtypes``.
COMPLEX: tuple[DType, ...] = (complex64, complex128)
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {
    float32: complex64,
    float64: complex128,
    complex64: complex64,
    complex128: complex128,
}
BY_NAME: dict[str, DType] = {d.name: d for d in ALL}
#: PyTorch's C++ names of the dtypes (``ScalarType``), which its kernels' errors print
#: (``"tril_indices" not implemented for 'Float'``).
SCALAR_TYPE_NAMES: dict[str, str] = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
    "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip


def __getattr__(name: str) -> DType:
    # ``bool_`` pickles by its name, ``bool`` (PyTorch's), which this module cannot define
    # without hiding the builtin.
    if name == "bool":
        return bool_
    if name[:2] == "__":
        # (the import system's look-up of __path__, at every function-level ``from
        # tensorweaver.contract.dtypes import ...``: a miss with no message to format)
        raise AttributeError(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
