"""``repr(tensor)`` laid out as PyTorch lays it out, and PyTorch's print options.

The layout is PyTorch's: one width and notation for all elements (fixed, ``1.``-style for
integer-valued floats, or scientific when magnitudes span more than 1000x, exceed 1e8 or
fall below 1e-4), summarisation with ``...`` past ``threshold`` elements keeping
``edgeitems`` at each end of every axis, wrapping at ``linewidth``, then the suffixes.
:func:`set_printoptions` and :func:`get_printoptions` take PyTorch's keywords and profiles.

Naming rule, one for every object TensorWeaver prints: where PyTorch prints its module
prefix ``torch.`` before an object TensorWeaver defines (a dtype, ``Size``,
``return_types``), TensorWeaver prints ``tensorweaver.`` (``dtype=tensorweaver.float64``);
strings that PyTorch code compares as values keep PyTorch's spelling (``Tensor.type()``
gives ``torch.FloatTensor``, and ParameterDict prints it).

Devices: as PyTorch, a tensor on a CPU prints no device and one on an accelerator does;
a CPU tensor on a backend other than the current one (``tw.get_backend()``) does too, since
it cannot meet the current backend's tensors in an op. The suffix names the TensorWeaver
device, backend included (``device='torch:cuda:0'`` where PyTorch prints ``'cuda:0'``).

Deliberate differences from PyTorch's text, all from the naming rule: the longer
``tensorweaver.`` may move a suffix onto a line of its own where PyTorch's fits, and a
device names its backend.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.autograd.view_regeneration import STALE_VIEWS, regenerate
from tensorweaver.contract import dtypes

#: PyTorch's profiles: precision, threshold, edgeitems, linewidth.
PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


class _PrintOptions:
    """The process-wide print options (PyTorch keeps one set per process too)."""

    def __init__(self) -> None:
        self.precision, self.threshold, self.edgeitems, self.linewidth = PROFILES["default"]
        self.sci_mode: bool | None = None


OPTIONS = _PrintOptions()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``profile`` (``default``,
    ``short`` or ``full``) first, then each option given; ``sci_mode`` None lets the values
    decide (it is reset to None whenever it is not given, as in PyTorch)."""
    if profile is not None:
        if profile not in PROFILES:
            raise ValueError(
                f"set_printoptions: unknown profile {profile!r}; use one of "
                f"{', '.join(map(repr, PROFILES))}"
            )
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = PROFILES[
            profile
        ]
    if precision is not None:
        OPTIONS.precision = precision
    if threshold is not None:
        OPTIONS.threshold = threshold
    if edgeitems is not None:
        OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        OPTIONS.linewidth = linewidth
    OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as keywords :func:`set_printoptions` takes back."""
    return {
        "precision": OPTIONS.precision,
        "threshold": OPTIONS.threshold,
        "edgeitems": OPTIONS.edgeitems,
        "linewidth": OPTIONS.linewidth,
        "sci_mode": OPTIONS.sci_mode,
    }


class _Formatter:
    """One width and one notation for every element, chosen from the finite nonzero values."""

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not floating:
            for v in values.reshape(-1).tolist():
                self.width = max(self.width, len(str(v)))
            return
        flat = values.reshape(-1)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite).astype(np.float64)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (
            high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
            if OPTIONS.sci_mode is None
            else OPTIONS.sci_mode
        )
        precision = OPTIONS.precision
        items = finite.tolist()
        if self.sci_mode:
            self.width = max(len(f"{v:.{precision}e}") for v in items)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in items)
        else:
            self.width = max(len(f"{v:.{precision}f}") for v in items)

    def format(self, value: Any) -> str:
        precision = OPTIONS.precision
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{precision}f}"
        return " " * (self.width - len(text)) + text


class _ComplexFormatter:
    """PyTorch's complex layout: the real parts share one formatter (and width), the
    imaginary parts another, written ``real+imagj`` with the imaginary part unpadded."""

    def __init__(self, values: np.ndarray) -> None:
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)
        self.width = self.real.width + self.imag.width + 1  # + the "j"

    def format(self, value: complex) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.real.format(value.real) + sign + imag


def _summarised(values: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows: ``edgeitems`` from each end of every axis."""
    edge = OPTIONS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim > 1 and not edge:
        return values[(slice(0, 0),) * values.ndim]
    if values.shape[0] > 2 * edge:
        values = np.concatenate([values[:edge], values[-edge:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarised(v) for v in values])


def _vector(values: np.ndarray, indent: int, summarise: bool, fmt: _Formatter) -> str:
    per_line = max(1, (OPTIONS.linewidth - indent) // (fmt.width + 2))
    items = values.tolist()
    edge = OPTIONS.edgeitems
    if summarise and not edge:
        data = ["..."]
    elif summarise and len(items) > 2 * edge:
        data = [fmt.format(v) for v in items[:edge]] + [" ..."]
        data += [fmt.format(v) for v in items[-edge:]]
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
    edge = OPTIONS.edgeitems
    if summarise and n > 2 * edge:
        shown = [*range(edge), None, *range(n - edge, n)]
    else:
        shown = list(range(n))
    rows = ["..." if i is None else _nested(values[i], indent + 1, summarise, fmt) for i in shown]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(parts) + ")"


def _prefix(t: Any) -> str:
    """``tensor(`` for tensors and parameters, else the subclass's name (as PyTorch)."""
    from tensorweaver.nn.parameter import Parameter
    from tensorweaver.tensor import Tensor

    kind = type(t)
    return "tensor(" if kind is Tensor or kind is Parameter else f"{kind.__name__}("


def tensor_repr(t: Any) -> str:
    """``repr(t)``, character for character as PyTorch prints its twin (see the module doc)."""
    from tensorweaver.promotion import default_complex_dtype, get_default_dtype
    from tensorweaver.selection import current_backend

    prefix = _prefix(t)
    indent = len(prefix)
    suffixes = []
    # As PyTorch: a CPU tensor names no device; but one on a backend other than the current
    # one does, since it cannot meet the current backend's tensors in an op.
    if t.backend.device.kind != "cpu" or t.backend is not current_backend():
        suffixes.append(f"device='{t.device}'")
    default = get_default_dtype()
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:  # PyTorch names even the default complex dtype here
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype not in (default, default_complex_dtype(), dtypes.int64, dtypes.bool_):
            suffixes.append(f"dtype={t.dtype}")
        host = t.backend.to_host(t.native)
        summarise = host.size > OPTIONS.threshold
        shown = _summarised(host) if summarise else host
        fmt: Any = (
            _ComplexFormatter(shown)
            if t.dtype.is_complex
            else _Formatter(shown, t.dtype.is_floating_point)
        )
        body = _nested(host, indent, summarise, fmt)
    if STALE_VIEWS:  # (a view a write missed shows its rebuilt grad_fn, as PyTorch's)
        regenerate(t)
    if t._node is not None:
        suffixes.append(f"grad_fn=<{t._node.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
