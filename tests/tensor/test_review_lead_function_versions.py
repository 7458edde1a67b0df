"""Version checks of an ``autograd.Function``'s saved tensors, against torch 2.13: backward
raises where a tensor it saved was changed in place after forward, and only there. Inputs are
checked (``_function_reads``); tensors saved that are not inputs (outputs, intermediates) are
not checked yet: strict xfails record those."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch


def functions(lib: Any) -> dict[str, Any]:
    class SaveInput(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            ctx.save_for_backward(x)
            return x * w

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return None, g * x

    class SaveViewOfInput(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x[0])
            return x * 3

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * v

    class SaveDetached(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x.detach())  # shares x's memory and its version
            return x * 3

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (d,) = ctx.saved_tensors
            return g * d

    class SaveOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (y,) = ctx.saved_tensors
            return g * y

    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            x.mul_(2)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors  # torch checks versions here, where they are unpacked
            return g * 2

    class SaveUnread(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * 3

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 3

    return {
        f.__name__: f
        for f in (SaveInput, SaveViewOfInput, SaveDetached, SaveOutput, Dirty, SaveUnread)
    }


def saved_input_changed(lib: Any, f: dict, p: Any) -> Any:
    x, w = p * 1, p * 2
    out = f["SaveInput"].apply(x, w)
    x.add_(1)
    return out


def unsaved_input_changed(lib: Any, f: dict, p: Any) -> Any:
    x, w = p * 1, p * 2
    out = f["SaveInput"].apply(x, w)
    w.add_(1)
    return out


def input_changed_under_saved_view(lib: Any, f: dict, p: Any) -> Any:
    x = p * 1
    out = f["SaveViewOfInput"].apply(x)
    x.add_(1)
    return out


def input_changed_under_saved_detached(lib: Any, f: dict, p: Any) -> Any:
    x = p * 1
    out = f["SaveDetached"].apply(x)
    x.add_(1)  # torch raises; ours gave the gradient of the changed values
    return out


def saved_output_changed(lib: Any, f: dict, p: Any) -> Any:
    out = f["SaveOutput"].apply(p * 1)
    with lib.no_grad():
        out.add_(1)
    return out


def dirty_output_changed_again(lib: Any, f: dict, p: Any) -> Any:
    out = f["Dirty"].apply(p * 1)
    out.add_(1)
    return out


def saved_input_changed_not_read(lib: Any, f: dict, p: Any) -> Any:
    x = p * 1
    out = f["SaveUnread"].apply(x)
    x.add_(1)
    return out


def outcome(case: Callable[..., Any], lib: Any) -> Any:
    p = lib.ones(3, dtype=lib.float64, requires_grad=True)
    try:
        case(lib, functions(lib), p).sum().backward()
    except RuntimeError:  # torch raises at the write into a no-grad view's base, or in backward
        return "RuntimeError"
    return p.grad.tolist()


NOT_CHECKED = pytest.mark.xfail(
    strict=True,
    reason="only inputs' versions are checked (autograd/gradients.py _function_reads); a saved "
    "output or other non-input tensor needs its version recorded at save_for_backward "
    "(autograd/function.py, the lead's) and checked before backward",
)


@pytest.mark.parametrize(
    "case",
    [
        saved_input_changed,
        unsaved_input_changed,
        input_changed_under_saved_view,
        input_changed_under_saved_detached,
        pytest.param(saved_output_changed, marks=NOT_CHECKED),
        pytest.param(
            saved_input_changed_not_read,
            marks=pytest.mark.xfail(
                strict=True,
                reason="torch checks a saved tensor's version when backward unpacks "
                "ctx.saved_tensors; ours checks before backward runs, so a backward that never "
                "reads them raises (autograd/function.py and the engine, the lead's)",
            ),
        ),
        pytest.param(dirty_output_changed_again, marks=NOT_CHECKED),
    ],
)
def test_saved_tensor_versions_like_torch(case: Callable[..., Any]) -> None:
    assert outcome(case, tw) == outcome(case, torch)
