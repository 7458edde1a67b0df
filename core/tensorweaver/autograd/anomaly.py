"""Anomaly detection for backward (``tw.autograd.detect_anomaly``), as in PyTorch.

While it is on, every graph node records the stack of the forward call that made it, and
backward checks each gradient rule: a rule that fails, or (with ``check_nan``) returns NaN,
emits a ``UserWarning`` naming the node and showing that forward stack, then the error
propagates. Like PyTorch's, the mode is process-wide, not per thread.

Off, it costs nothing: the stack is recorded by a constructor that is installed on
:class:`Node` only while the mode is on, and the engine reads the mode once per backward.
"""

from __future__ import annotations

import os
import traceback
import warnings
import weakref
from typing import Any

from tensorweaver.autograd.node import Node

#: Frames in these files are the framework's own; a recorded stack starts at the caller.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _Mode:
    """The process-wide switch (PyTorch's ``AnomalyMode``)."""

    __slots__ = ("enabled", "check_nan")

    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


MODE = _Mode()
#: node -> the forward stack that made it (entries leave with their nodes).
FORWARD_STACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_plain_init = Node.__init__


def _recording_init(self: Node, *args: Any, **kwargs: Any) -> None:
    _plain_init(self, *args, **kwargs)
    FORWARD_STACKS[self] = _user_stack()


def _user_stack() -> traceback.StackSummary:
    """The current stack up to the innermost frame outside TensorWeaver (lines read later)."""
    frames = list(traceback.walk_stack(None))  # innermost first
    while frames and frames[0][0].f_code.co_filename.startswith(_PACKAGE):
        frames.pop(0)
    frames.reverse()
    return traceback.StackSummary.extract(iter(frames), lookup_lines=False)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    MODE.enabled = bool(enabled)
    MODE.check_nan = bool(check_nan)
    Node.__init__ = _recording_init if MODE.enabled else _plain_init  # type: ignore[method-assign]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return MODE.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, raises on gradients that contain NaN."""
    return MODE.check_nan


class detect_anomaly:
    """Context manager that turns anomaly detection on inside its block (``check_nan``: also
    raise when a backward rule returns NaN). Warns, as PyTorch does, that it slows things."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = MODE.enabled
        self.check_nan = check_nan
        self.prev_check_nan = MODE.check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and "
            "should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Set anomaly detection on or off: at once as a call, restored on exit as a ``with``."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = MODE.enabled
        self.prev_check_nan = MODE.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


def check_nan(node: Node, input_grads: tuple) -> None:
    """Raise PyTorch's error if the rule of ``node`` returned a NaN gradient for an input that
    needs one."""
    if not MODE.check_nan:
        return
    for i, (parent, gi) in enumerate(zip(node.parents, input_grads)):
        if parent is None or gi is None:
            continue
        gi = getattr(gi, "g", gi)  # a Piece (engine.py) carries its slice of the gradient
        if gi.dtype.kind in "fc" and gi.isnan().any().item():
            raise RuntimeError(f"Function '{node.name}' returned nan values in its {i}th output.")


def report_forward_stack(node: Node) -> None:
    """Warn, as PyTorch does, where the forward call that made ``node`` was (a rule failed)."""
    stack = FORWARD_STACKS.get(node)
    if stack is None:
        warnings.warn(
            f"Error detected in {node.name}. No forward pass information available. Enable "
            "detect anomaly during forward pass for more information.",
            stacklevel=2,
        )
        return
    warnings.warn(
        f"Error detected in {node.name}. Traceback of forward call that caused the error:\n"
        + "".join(stack.format()),
        stacklevel=2,
    )
