"""``repr(tensor)`` in PyTorch's style: ``tensor([[1., 2.]], dtype=tw.float64)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver.contract import dtypes

_IMPLIED = (dtypes.float32, dtypes.int64, dtypes.bool_)


def _body(host: np.ndarray, indent: int) -> str:
    options: dict[str, Any] = {
        "separator": ", ",
        "prefix": " " * indent,
        "threshold": 1000,
        "edgeitems": 3,
        "max_line_width": 80,
    }
    if host.dtype.kind == "f":
        finite = host[np.isfinite(host)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        options["precision"] = 4
        options["floatmode"] = "maxprec" if integral else "fixed"
    elif host.dtype.kind == "b":
        options["formatter"] = {"bool": lambda v: "True" if v else "False"}
    return np.array2string(host, **options)


def tensor_repr(t: Any) -> str:
    host = t.backend.to_host(t.native)
    if t.numel() == 0:
        body = "[]"
    else:
        body = _body(host, len("tensor("))
    extras = []
    if t.numel() == 0 and t.ndim > 1:
        extras.append(f"size={tuple(t.shape)}")
    if t.device.backend != "numpy":
        extras.append(f"device='{t.device.name}'")
    if t.dtype not in _IMPLIED:
        extras.append(f"dtype=tw.{t.dtype.name}")
    if t._node is not None:
        extras.append(f"grad_fn=<{t._node.name}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
