"""``tw.backends.opt_einsum``: PyTorch's switch for ordering ``einsum`` contractions with the
opt_einsum package.

``tw.einsum`` contracts its operands left to right, pair by pair, and never calls opt_einsum, so
these settings are remembered for scripts that set them and change nothing here.
``is_available()`` says whether the package is installed, as PyTorch's does.
"""

from __future__ import annotations

import importlib
import importlib.util


def is_available() -> bool:
    """Whether the opt_einsum package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


#: PyTorch's defaults: on when opt_einsum is installed, strategy "auto".
enabled = is_available()
strategy = "auto"


def get_opt_einsum() -> object:
    """The opt_einsum module when installed, else None."""
    return importlib.import_module("opt_einsum") if is_available() else None
