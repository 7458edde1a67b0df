"""What a small program gives under torch and under tensorweaver, in a form the two can be
compared in: the review and corner-case tests run one program ``fn(m)`` with ``m`` = torch
and ``m`` = tensorweaver and compare what each gives (:func:`same`)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorweaver as tw
import torch
from tw_backends import entered


def outcome(fn: Callable[[Any], Any], m: Any) -> Any:
    """What ``fn(m)`` gives, as :func:`plain` shows it; an exception as its class name."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__
    return plain(r, m)


def plain(r: Any, m: Any) -> Any:
    """``r`` comparable across torch and tw: a tensor as its dtype, shape and values (rounded
    to 5 decimals, NaN as a string, zeros unsigned), a dtype as its name, tuples and lists
    element by element, anything else as itself."""
    if isinstance(r, (tuple, list)):
        return tuple(plain(x, m) for x in r)
    if isinstance(r, m.dtype):
        return str(r).split(".")[-1]
    if not isinstance(r, m.Tensor):
        return r
    values = np.asarray(r.detach().resolve_conj().resolve_neg().tolist(), dtype=complex).ravel()
    # (+ 0 makes -0.0 and 0.0 one value: the sign of a zero is no finding here)
    shown = ["nan" if v != v else repr(complex(np.round(v, 5)) + 0) for v in values]
    return str(r.dtype).split(".")[-1], tuple(r.shape), shown


def same(fn: Callable[[Any], Any], spec: str) -> None:
    """Assert that ``fn`` gives on the tw device ``spec`` what it gives under torch."""
    want = outcome(fn, torch)
    with entered(spec):
        assert outcome(fn, tw) == want


def inference(m: Any, n: int = 3) -> Any:
    """``arange(1.0, n + 1.0)`` made in inference mode."""
    with m.inference_mode():
        return m.arange(1.0, n + 1.0)
