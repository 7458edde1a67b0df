"""The node of a convolution's ``create_graph`` gradients, as torch 2.13's
ConvolutionBackwardBackward0: one node whose outputs are the input's, the weight's and the
bias's gradients (``output_nr`` 0, 1, 2), over the output's gradient, the input and the
weight, at every rank, transposed or not (before session 33 a 1-D convolution's gradients
were ViewBackward0, tw running it over a height of one, and a bias's SumBackward1), and what
its backward gives for the gradients asked (an empty batch: none, as torch's)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
from snippet_outcomes import refused_in_place, same, same_each, walk
from test_conv_data_writes_session31 import CONVS, _values
from tw_backends import FAST

#: Convolutions of :data:`CONVS` (each rank, transposed or not, groups, dilation, stride,
#: 'same' padding) and the inputs whose gradients are asked for: x, w, b.
KINDS = [
    ("conv1d", "xwb"),
    ("conv1d groups", "wb"),
    ("conv2d groups", "xwb"),
    ("conv3d same", "b"),
    ("conv_transpose1d", "xwb"),
    ("conv_transpose2d", "xb"),
    ("conv_transpose3d", "w"),
]


def _convolution(m: Any, conv: str, bias: bool = True, batch: int | None = None) -> tuple:
    """The input, weight and bias (None unless ``bias``) of ``conv``, and its result."""
    fn, x_shape, w_shape, keywords = CONVS[conv]
    if batch is not None:
        x_shape = (batch, *x_shape[1:])
    x = _values(m, x_shape, -1.0, 1.0).requires_grad_()
    w = _values(m, w_shape, -0.5, 0.7).requires_grad_()
    groups = keywords.get("groups", 1)
    channels = w_shape[1] * groups if "transpose" in fn else w_shape[0]
    b = _values(m, (channels,), 0.1, 0.3).requires_grad_() if bias else None
    return x, w, b, getattr(m.nn.functional, fn)(x, w, b, **keywords)


def _nodes(conv: str, asked: str, bias: bool = True) -> Callable:
    """The create_graph gradients' nodes (name, output_nr, which share one, their
    ``next_functions``) and the gradients of a loss of them with respect to x, w and b."""

    def program(m: Any) -> list:
        x, w, b, y = _convolution(m, conv, bias)
        by_name = {"x": x, "w": w, "b": b}
        inputs = [by_name[c] for c in asked if by_name[c] is not None]
        first = m.autograd.grad((y * y).sum(), inputs, create_graph=True)
        shown = [
            (g.grad_fn.name(), g.output_nr, [h.grad_fn is g.grad_fn for h in first]) for g in first
        ]
        loss = sum((g * g).sum() for g in first)
        every = [t for t in (x, w, b) if t is not None]
        return [shown, walk(first[0].grad_fn, 2), m.autograd.grad(loss, every, allow_unused=True)]

    return program


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("conv, asked", KINDS)
def test_one_node_for_the_three_gradients(conv: str, asked: str, spec: str) -> None:
    same(_nodes(conv, asked), spec, decimals=8)


@pytest.mark.parametrize("spec", FAST)
def test_without_bias_and_empty_batch(spec: str) -> None:
    def empty(conv: str) -> Callable:
        def program(m: Any) -> list:
            x, w, b, y = _convolution(m, conv, batch=0)
            first = m.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
            loss = sum((g * g).sum() + g.sum() for g in first)
            return [
                [g.grad_fn.name() for g in first],
                m.autograd.grad(loss, (x, w, b), allow_unused=True),
            ]

        return program

    programs = {
        "conv1d no bias": _nodes("conv1d", "xw", bias=False),
        "conv_transpose2d no bias": _nodes("conv_transpose2d dilation", "xw", bias=False),
        "conv1d empty": empty("conv1d"),
        "conv2d empty": empty("conv2d"),
    }
    same_each(programs, spec, decimals=8)


def _line_under_hooks(m: Any) -> list:
    """What a 1-D convolution's create_graph backward packs (torch: the output's gradient,
    the input, the weight, as the caller gave them) and its second backward unpacks, and the
    second-order gradients from what unpack gives (doubled)."""
    x, w, b, y = _convolution(m, "conv1d groups")
    g = (y * 1.5).detach().requires_grad_()
    packed, unpacked = [], []

    def pack(t: Any) -> Any:
        packed.append(tuple(t.shape))
        return t

    def unpack(t: Any) -> Any:
        unpacked.append(tuple(t.shape))
        return t * 2

    with m.autograd.graph.saved_tensors_hooks(pack, unpack):
        first = m.autograd.grad(y, (x, w, b), g, create_graph=True)
        # (times constants: the loss itself saves nothing)
        loss = sum((t * k).sum() for t, k in zip(first, (2.0, -1.0, 3.0)))
        second = m.autograd.grad(loss, (g, x, w))
    return [packed, unpacked, second]


def _line_retained(m: Any) -> list:
    """A 1-D convolution's second backward run twice (retaining its graph), a write through
    ``.data`` between the two."""
    x, w, b, y = _convolution(m, "conv_transpose1d")
    first = m.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
    loss = sum((g * g).sum() for g in first)
    before = m.autograd.grad(loss, (x, w, b), retain_graph=True)
    w.data.mul_(-2)
    return [*before, *m.autograd.grad(loss, (x, w, b))]


@pytest.mark.parametrize("spec", FAST)
def test_line_second_backward_reads_as_torch(spec: str) -> None:
    same_each({"hooks": _line_under_hooks, "retained": _line_retained}, spec, decimals=8)


#: name -> (function, input shape, weight shape, keywords): tiny, for finite differences.
TINY: dict[str, tuple[str, tuple, tuple, dict]] = {
    "conv1d groups": ("conv1d", (1, 2, 4), (2, 1, 2), dict(groups=2, dilation=2, padding=1)),
    "conv_transpose1d": ("conv_transpose1d", (1, 1, 3), (1, 2, 2), dict(stride=2)),
}


@pytest.mark.parametrize("conv", TINY)
def test_third_order_by_finite_differences(conv: str) -> None:
    # (the node's own backward under create_graph: its rule differentiated again)
    with tw.device("numpy"):
        fn, x_shape, w_shape, keywords = TINY[conv]
        tw.manual_seed(0)
        x = tw.randn(*x_shape, dtype=tw.float64, requires_grad=True)
        w = tw.randn(*w_shape, dtype=tw.float64, requires_grad=True)
        b = tw.randn(2, dtype=tw.float64, requires_grad=True)

        def gradients(x: Any, w: Any, b: Any) -> tuple:
            y = getattr(tw.nn.functional, fn)(x, w, b, **keywords)
            return tw.autograd.grad((y * y * y).sum(), (x, w, b), create_graph=True)

        assert tw.autograd.gradgradcheck(gradients, (x, w, b))


def _squeezed_back(m: Any) -> list:
    """The create_graph gradients' nodes of squeezes and unsqueezes (torch's: an unsqueeze
    per dropped axis, lowest first; a squeeze at the dim given; a view's: a view)."""
    x = _values(m, (2, 1, 3, 1), -1.0, 1.0).requires_grad_()
    shown = []
    for y in (x.squeeze(), x.squeeze(1), x.squeeze((1, 3)), x.unsqueeze(-1), x.view(6)):
        (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
        shown.append([y.grad_fn.name(), walk(g.grad_fn, 3)])
    return shown


def test_unbatched_line_nodes() -> None:
    same(_nodes("conv1d unbatched", "xb"), "numpy", decimals=8)
    same(_squeezed_back, "numpy")


def _saved(conv: str, bias: bool, freed: bool) -> Callable:
    """PyTorch's ConvolutionBackward0's saved arguments (a 1-D one's as given; ``freed``:
    after backward, its tensors refused) and its ConvolutionBackwardBackward0's."""

    def program(m: Any) -> list:
        x, w, b, y = _convolution(m, conv, bias)
        node = y.grad_fn.next_functions[0][0] if "unbatched" in conv else y.grad_fn
        # (a linear loss: the second backward does not go through y's node, freed or not)
        (gw,) = m.autograd.grad((y * 1.5).sum(), w, create_graph=True, retain_graph=not freed)
        double = gw.grad_fn
        if freed:
            (gw * gw).sum().backward()
        shown = []
        for fn in (node, double):
            shown.append([getattr(fn, a) for a in SAVED_NUMBERS if hasattr(fn, a)])
            for a in ("_saved_input", "_saved_weight", "_saved_grad_output"):
                try:
                    t = getattr(fn, a)
                    shown.append([t, t is x, t is w])
                except (AttributeError, RuntimeError) as e:  # (not saved; freed)
                    shown.append(type(e).__name__)
        return shown

    return program


#: The numbers ConvolutionBackward0 saves (its double's: all but the bias's sizes).
SAVED_NUMBERS = (
    "_saved_stride", "_saved_padding", "_saved_dilation", "_saved_groups",
    "_saved_transposed", "_saved_output_padding", "_saved_bias_sym_sizes_opt",
)  # fmt: skip


@pytest.mark.parametrize("spec", FAST)
def test_saved_arguments_as_torch(spec: str) -> None:
    programs = {
        "conv1d groups": _saved("conv1d groups", True, False),
        "conv1d unbatched, freed": _saved("conv1d unbatched", False, True),
        "conv2d same even": _saved("conv2d same even", False, False),
        "conv_transpose2d, freed": _saved("conv_transpose2d", True, True),
        "conv_transpose1d": _saved("conv_transpose1d", False, False),
    }
    same_each(programs, spec, decimals=8)


def test_same_padding_line_nodes() -> None:
    def program(m: Any) -> list:
        x = _values(m, (1, 2, 6), -1.0, 1.0).requires_grad_()
        w = _values(m, (3, 2, 2), -0.5, 0.7).requires_grad_()
        y = m.nn.functional.conv1d(x, w, padding="same")
        first = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return [walk(g.grad_fn, 2) for g in first]

    same(program, "numpy")


def _padded(pad: tuple, walked: int) -> Callable:
    """F.pad's node (one ConstantPadNdBackward0 on the input, cropping too), the nodes of its
    create_graph gradient (``walked`` deep) and the second-order gradient."""

    def program(m: Any) -> list:
        x = _values(m, (2, 3, 4), -1.0, 1.0).requires_grad_()
        y = m.nn.functional.pad(x, pad, value=0.5)
        (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
        return [y, walk(y.grad_fn, 2), walk(g.grad_fn, walked), m.autograd.grad((g * g).sum(), x)]

    return program


@pytest.mark.parametrize("spec", FAST)
def test_constant_pad_nodes(spec: str) -> None:
    programs = {
        "grows": _padded((1, 2, 0, 1), 2),
        "crops and grows": _padded((2, -1, 1, 1, -1, 0), 0),
        "crops": _padded((-1, -2), 0),
    }
    same_each(programs, spec, decimals=8)


def test_cropping_pad_second_order_node() -> None:
    same_each({"crops": _padded((-1, -2), 2), "zeros": _padded((0, 0), 2)}, "numpy")


def _packed_by(which: str) -> Callable:
    """What a create_graph backward of a convolution packs, and its gradients' nodes and
    their ``next_functions``, where only ``which`` of x, w, b and g require grad (torch's
    node saves g, x and w whichever it is, and exists wherever g or x or w requires grad)."""

    def program(m: Any) -> list:
        x, w, b, y = _convolution(m, "conv2d")
        for t, name in ((x, "x"), (w, "w"), (b, "b")):
            t.requires_grad_(name in which)
        y = m.nn.functional.conv2d(x, w, b)
        g = (y * 1.5).detach().requires_grad_("g" in which)
        packed = []
        with m.autograd.graph.saved_tensors_hooks(
            lambda t: packed.append(t.shape) or t, lambda t: t
        ):
            asked = [t for t, name in ((x, "x"), (w, "w"), (b, "b")) if name in which]
            first = m.autograd.grad(y, asked, g, create_graph=True)
        return [packed, [walk(t.grad_fn, 1) for t in first]]

    return program


@pytest.mark.parametrize("spec", FAST)
def test_packs_and_nodes_by_what_requires_grad(spec: str) -> None:
    same_each({which: _packed_by(which) for which in ("b", "bg", "wb", "x")}, spec)


def _changed_in_place(which: str) -> Callable:
    """The second backward after ``which`` (the input, a non-leaf, or the output's gradient)
    changed in place since the create_graph backward: torch's node checks their versions."""

    def program(m: Any) -> list:
        x0 = _values(m, (2, 3, 6), -1.0, 1.0).requires_grad_()
        w = _values(m, (4, 3, 2), -0.5, 0.7).requires_grad_()
        x = x0 * 1
        y = m.nn.functional.conv1d(x, w)
        g = (y * 2).detach().requires_grad_()
        gx, gw = m.autograd.grad(y, (x, w), g, create_graph=True)
        (x if which == "x" else g).data.mul_(2)  # (no version bump: read as it is then)
        values = m.autograd.grad((gw * gw).sum(), (g, w), allow_unused=True, retain_graph=True)
        with m.no_grad():
            (x if which == "x" else g).mul_(2)
        refused = refused_in_place(lambda: m.autograd.grad((gw * gw).sum() + gx.sum(), (g,)))
        return [values, refused]

    return program


@pytest.mark.parametrize("spec", FAST)
def test_saved_versions_checked_as_torch(spec: str) -> None:
    same_each({which: _changed_in_place(which) for which in ("x", "g")}, spec, decimals=8)


def _line_under_autocast(m: Any) -> list:
    """A 1-D convolution under CPU autocast: its node's inputs are the bfloat16 copies
    (before session 33 tw's showed the float32 leaves: the node's edges were labelled)."""
    x, w, b, _ = _convolution(m, "conv_transpose1d")
    with m.autocast("cpu", dtype=m.bfloat16):
        y = m.nn.functional.conv_transpose1d(x.float(), w.float(), b.float(), stride=2)
    return [y.dtype, walk(y.grad_fn, 2)]


def test_line_node_under_autocast() -> None:
    same(_line_under_autocast, "torch:cpu")


def test_complex_convolution_nodes() -> None:
    def program(m: Any) -> Any:
        x = m.complex(_values(m, (2, 2, 5), -1.0, 1.0), _values(m, (2, 2, 5), 0.5, -0.3))
        w = m.complex(_values(m, (3, 2, 2), -0.5, 0.7), _values(m, (3, 2, 2), 0.2, 0.1))
        y = m.nn.functional.conv1d(x.requires_grad_(), w.requires_grad_(), padding=1)
        return walk(y.grad_fn, 1)

    same(program, "numpy")
