"""TensorWeaver's Python array API standard namespace: ``tensor.__array_namespace__()``.

Each function maps the standard's name and keywords onto the core's ``tw`` function, so
results are tensors, differentiable where the core is. The modules follow the standard's
sections. Functions the core does not have yet are absent (``hasattr`` says so), and appear
as the core gains them (:mod:`.provided`); ``linalg`` and ``fft`` are the extensions over
``tw.linalg`` and ``tw.fft``. TensorWeaver has no uint16/32/64 dtypes.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from typing import Any

from tensorweaver.array_api.creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from tensorweaver.array_api.dtypes import (
    astype,
    bool,  # noqa: A004
    can_cast,
    complex64,
    complex128,
    finfo,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
)
from tensorweaver.array_api.elementwise import CORE as _ELEMENTWISE
from tensorweaver.array_api.elementwise import clip, conj, floor_divide, imag, positive, real, sign
from tensorweaver.array_api.indexing import take, take_along_axis
from tensorweaver.array_api.info import __array_namespace_info__
from tensorweaver.array_api.linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from tensorweaver.array_api.manipulation import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from tensorweaver.array_api.searching import (
    argmax,
    argmin,
    count_nonzero,
    nonzero,
    searchsorted,
    where,
)
from tensorweaver.array_api.sets import (
    isin,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from tensorweaver.array_api.sorting import argsort, sort
from tensorweaver.array_api.statistical import (
    cumulative_prod,
    cumulative_sum,
    max,  # noqa: A004
    mean,
    min,  # noqa: A004
    prod,
    std,
    sum,  # noqa: A004
    var,
)
from tensorweaver.array_api.utility import all, any, diff  # noqa: A004
from tensorweaver.contract.dtypes import float16

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "asarray",
    "astype",
    "bool",
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "can_cast",
    "clip",
    "complex128",
    "complex64",
    "concat",
    "conj",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "e",
    "empty",
    "empty_like",
    "expand_dims",
    "eye",
    "finfo",
    "flip",
    "float16",
    "float32",
    "float64",
    "floor_divide",
    "from_dlpack",
    "full",
    "full_like",
    "iinfo",
    "imag",
    "inf",
    "int16",
    "int32",
    "int64",
    "int8",
    "isdtype",
    "isin",
    "linspace",
    "matmul",
    "matrix_transpose",
    "max",
    "mean",
    "meshgrid",
    "min",
    "moveaxis",
    "nan",
    "newaxis",
    "nonzero",
    "ones",
    "ones_like",
    "permute_dims",
    "pi",
    "positive",
    "prod",
    "real",
    "repeat",
    "reshape",
    "result_type",
    "roll",
    "searchsorted",
    "sign",
    "sort",
    "squeeze",
    "stack",
    "std",
    "sum",
    "take",
    "take_along_axis",
    "tensordot",
    "tile",
    "tril",
    "triu",
    "uint8",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "var",
    "vecdot",
    "where",
    "zeros",
    "zeros_like",
]

#: The revision of the standard this namespace implements.
__array_api_version__ = "2025.12"
#: Revisions ``__array_namespace__(api_version=...)`` accepts.
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None


def __getattr__(name: str) -> Any:
    if name == "linalg":
        if importlib.util.find_spec("tensorweaver.linalg") is None:
            raise AttributeError("linalg: tw.linalg does not exist yet")
        return importlib.import_module("tensorweaver.array_api.linalg")
    if name == "fft":
        return importlib.import_module("tensorweaver.array_api.fft")
    return _ELEMENTWISE.get(name)
