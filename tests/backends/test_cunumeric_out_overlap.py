"""``out=`` that shares elements with an input, on cuPyNumeric, against torch 2.13 (found by
the error inputs of torch's op database: ``index_select`` and ``take``).

torch refuses the call (its kernels would read what they already wrote). The core tells
overlap from the optional ``storage`` and ``layout`` primitives; this plugin keeps its views'
places beside the arrays (a Legate store has no address), so the call is refused as torch's.
"""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


def _select_into_own_rows(lib) -> None:
    x = lib.arange(18.0).reshape(3, 6)
    lib.index_select(x, 0, lib.tensor([0, 2]), out=x[1:3])


def test_out_overlapping_an_input_is_refused_as_in_torch() -> None:
    with pytest.raises(RuntimeError, match="single memory location"):
        _select_into_own_rows(torch)
    with entered("cunumeric"), pytest.raises(RuntimeError, match="single memory location"):
        _select_into_own_rows(tw)
