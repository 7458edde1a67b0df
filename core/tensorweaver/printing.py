"""``repr(tensor)`` laid out as PyTorch lays it out: the same widths, precision (4), switch
to scientific notation, summarisation past 1000 elements and 80-column wrapping, with
suffixes for the device, a non-default dtype and the graph (``dtype=tw.float64``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.contract import dtypes

PRECISION = 4
THRESHOLD = 1000  # more elements than this are summarised
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    """One width and one notation for every element, chosen from the finite nonzero values."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            for v in values.reshape(-1).tolist():
                self.width = max(self.width, len(str(v)))
            return
        flat = values.reshape(-1).astype(np.float64)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        wide = high / low > 1000.0 or high > 1e8
        if self.int_mode:
            self.sci_mode = wide
            strings = [f"{v:.{PRECISION}e}" if wide else f"{v:.0f}." for v in finite.tolist()]
        else:
            self.sci_mode = wide or low < 1e-4
            spec = "e" if self.sci_mode else "f"
            strings = [f"{v:.{PRECISION}{spec}}" for v in finite.tolist()]
        self.width = max(len(s) for s in strings)

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return " " * (self.width - len(text)) + text


def _summarised(values: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows: EDGEITEMS from each end of every axis."""
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * EDGEITEMS:
        values = np.concatenate([values[:EDGEITEMS], values[-EDGEITEMS:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarised(v) for v in values])


def _vector(values: np.ndarray, indent: int, summarise: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
    items = values.tolist()
    if summarise and len(items) > 2 * EDGEITEMS:
        data = [fmt.format(v) for v in items[:EDGEITEMS]] + [" ..."]
        data += [fmt.format(v) for v in items[-EDGEITEMS:]]
    else:
        data = [fmt.format(v) for v in items]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarise: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarise, fmt)
    n = values.shape[0]
    if summarise and n > 2 * EDGEITEMS:
        rows = [_nested(values[i], indent + 1, summarise, fmt) for i in range(EDGEITEMS)]
        rows.append("...")
        rows += [_nested(values[i], indent + 1, summarise, fmt) for i in range(n - EDGEITEMS, n)]
    else:
        rows = [_nested(v, indent + 1, summarise, fmt) for v in values]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t: Any) -> str:
    from tensorweaver.promotion import get_default_dtype

    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.backend != "numpy":
        suffixes.append(f"device='{t.device.name}'")
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not get_default_dtype():
            suffixes.append(f"dtype=tw.{t.dtype.name}")
        body = "[]"
    else:
        host = t.backend.to_host(t.native)
        summarise = host.size > THRESHOLD
        fmt = _Formatter(_summarised(host) if summarise else host)
        body = _nested(host, indent, summarise, fmt)
        if t.dtype not in (get_default_dtype(), dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype=tw.{t.dtype.name}")
    if t._node is not None:
        suffixes.append(f"grad_fn=<{t._node.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
