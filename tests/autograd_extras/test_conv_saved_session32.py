"""What a convolution's node saves, as torch 2.13's ConvolutionBackward0 (its input and weight)
and ConvolutionBackwardBackward0 (the output's gradient, the input and the weight): under
``saved_tensors_hooks`` it packs the input, then the weight, and backward reads what unpack
gives (before session 32 numpy's and torch's fused kernels and every transposed convolution
packed nothing, the core's reference its inner pieces); after a ``create_graph`` backward the
second backward reads the input and weight as a write through ``.data`` left them (before,
the gradient's graph kept forward-time copies: the padded, unfolded input)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
from snippet_outcomes import same, same_each
from test_conv_data_writes_session31 import CONVS, _convolved, _values
from tw_backends import FAST


def _packed(conv: str) -> Callable:
    """The shapes packed by a convolution's node, in order, and the gradients its backward
    takes from what unpack gives (doubled here: the gradients show it)."""

    def program(m: Any) -> list:
        packed = []

        def pack(t: Any) -> Any:
            packed.append(tuple(t.shape))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 2):
            x, w, b, y = _convolved(m, conv)
        (y * y).sum().backward()
        return [packed, x.grad, w.grad, b.grad]

    return program


def _changed_after_packing(conv: str) -> Callable:
    """An input changed in place after the forward under identity hooks: no error (a packed
    tensor has no version check), and backward reads its new values."""

    def program(m: Any) -> list:
        fn, x_shape, w_shape, keywords = CONVS[conv]
        x0 = _values(m, x_shape, -1.0, 1.0).requires_grad_()
        w = _values(m, w_shape, -0.5, 0.7).requires_grad_()
        x = x0 * 1
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = getattr(m.nn.functional, fn)(x, w, None, **keywords)
        x.mul_(3)
        return list(m.autograd.grad((y * y).sum(), (x0, w)))

    return program


#: The kinds of :data:`CONVS` that call ``nn.functional`` (the others are modules).
FUNCTIONAL = [conv for conv in CONVS if not CONVS[conv][0].startswith("Conv")]

#: One of each rank, transposed or not, with the 1-D lifting, 'same' padding and groups.
KINDS = [
    "conv1d unbatched",
    "conv1d groups",
    "conv2d same even",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
]


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("conv", KINDS)
def test_convolution_packs_input_then_weight(conv: str, spec: str) -> None:
    same_each({"packed": _packed(conv), "changed": _changed_after_packing(conv)}, spec, decimals=9)


@pytest.mark.parametrize("conv", [conv for conv in CONVS if conv not in FUNCTIONAL])
def test_padded_convolution_module_packs_as_torch(conv: str) -> None:
    same(_packed(conv), "numpy", decimals=9)


def _padded(mode: str, dims: int, count: str) -> Callable:
    """``count`` ('packed': the shapes packed; 'unpacked': how many unpacks) while ``pad`` in
    ``mode`` over ``dims`` dimensions runs forward and backward (unpack doubles: the
    gradient shows what reaches it)."""

    def program(m: Any) -> list:
        x = _values(m, (1, 2, *[4] * dims), -1.0, 1.0).requires_grad_()
        packed, unpacked = [], []

        def unpack(t: Any) -> Any:
            unpacked.append(tuple(t.shape))
            return t * 2

        with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.shape) or t, unpack):
            y = m.nn.functional.pad(x, (1, 2) * dims, mode=mode)
        (y * y).sum().backward()
        return [packed if count == "packed" else len(unpacked), x.grad]

    return program


#: (mode, dims) of ``pad``: what PyTorch's nodes save differs by mode, not by rank.
PADDINGS = [("reflect", 1), ("replicate", 3), ("circular", 2)]


@pytest.mark.parametrize("mode, dims", PADDINGS)
def test_padding_packs_as_torch(mode: str, dims: int) -> None:
    same(_padded(mode, dims, "packed"), "numpy", decimals=9)


@pytest.mark.parametrize("mode, dims", PADDINGS)
def test_padding_unpacks_as_torch(mode: str, dims: int) -> None:
    same(_padded(mode, dims, "unpacked"), "numpy", decimals=9)


#: :data:`KINDS` less the 1-D groups and the 2-D transposed one (``_retained_second``'s).
SECOND_KINDS = [kind for kind in KINDS if kind not in ("conv1d groups", "conv_transpose2d")]


def _second_after_write(conv: str, write: str) -> Callable:
    """The gradients of the sum of squared first-order gradients (``create_graph``) after
    ``write`` between the two backward passes, which PyTorch's ConvolutionBackwardBackward0
    sees (it reads the input's and weight's memory)."""

    def program(m: Any) -> list:
        x, w, b, y = _convolved(m, conv)
        first = m.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
        if write == "x.data.add_":
            x.data.add_(1)
        else:
            w.data = w.data * 2 - 0.5
        return list(m.autograd.grad(sum((g * g).sum() for g in first), (x, w, b)))

    return program


def _hooked_second_after_write(m: Any) -> list:
    """Under hooks whose pack copies: the second backward reads the copies, not the write."""
    with m.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        x, w, b, y = _convolved(m, "conv2d")
        first = m.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
    x.data.add_(1)
    return list(m.autograd.grad(sum((g * g).sum() for g in first), (x, w, b)))


def _retained_second(m: Any) -> list:
    """The second backward run twice (retaining its graph), a write between the two."""
    x, w, b, y = _convolved(m, "conv_transpose2d")
    first = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
    loss = sum((g * g).sum() for g in first)
    before = m.autograd.grad(loss, (x, w), retain_graph=True)
    x.data.mul_(-2)
    return [*before, *m.autograd.grad(loss, (x, w))]


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("conv", [*SECOND_KINDS, "conv2d", "Conv1d circular"])
def test_second_backward_reads_a_data_write(conv: str, spec: str) -> None:
    programs = {write: _second_after_write(conv, write) for write in ("x.data.add_", "w.data =")}
    if conv == "conv2d":
        programs["hooked"] = _hooked_second_after_write
        programs["retained"] = _retained_second
    same_each(programs, spec, decimals=8)


def _double_backward_names(conv: str) -> Callable:
    def program(m: Any) -> list:
        x, w, b, y = _convolved(m, conv)
        first = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return [g.grad_fn.name() for g in first]

    return program


@pytest.mark.parametrize("spec", FAST)
def test_double_backward_node_is_pytorch_one(spec: str) -> None:
    names = ("conv2d", "conv2d groups", "conv3d", "conv_transpose2d", "conv_transpose3d")
    same_each({conv: _double_backward_names(conv) for conv in names}, spec)


@pytest.mark.parametrize("spec", FAST)
def test_double_backward_node_of_line_and_bias(spec: str) -> None:
    def program(m: Any) -> list:
        x, w, b, y = _convolved(m, "conv1d")
        first = m.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
        return [g.grad_fn.name() for g in first]

    same(program, spec)


def _packed_by_create_graph(m: Any) -> list:
    """What a create_graph backward of a convolution packs (torch: its
    ConvolutionBackwardBackward0 packs the output's gradient, the input, the weight)."""
    x, w, b, y = _convolved(m, "conv2d")
    g = (y * 1.5).detach().requires_grad_()
    packed = []

    def pack(t: Any) -> Any:
        packed.append(tuple(t.shape))
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        m.autograd.grad(y, (x, w, b), g, create_graph=True)
    return packed


@pytest.mark.parametrize("spec", FAST)
def test_create_graph_packs_as_torch(spec: str) -> None:
    same(_packed_by_create_graph, spec)


#: name -> (function, input shape, weight shape, keywords): tiny, for finite differences.
TINY: dict[str, tuple[str, tuple, tuple, dict]] = {
    "conv2d groups": ("conv2d", (1, 2, 3, 3), (2, 1, 2, 2), dict(groups=2, padding=1)),
    "conv_transpose1d": ("conv_transpose1d", (1, 1, 3), (1, 2, 2), dict(stride=2)),
}


@pytest.mark.parametrize("conv", TINY)
def test_second_order_by_finite_differences(conv: str) -> None:
    # (NumPy's alone: the nodes differentiated are the core's reference on every backend,
    # and test_second_backward_reads_a_data_write compares their values with torch's)
    with tw.device("numpy"):
        fn, x_shape, w_shape, keywords = TINY[conv]
        tw.manual_seed(0)
        x = tw.randn(*x_shape, dtype=tw.float64, requires_grad=True)
        w = tw.randn(*w_shape, dtype=tw.float64, requires_grad=True)

        def gradients(x: Any, w: Any) -> tuple:
            y = getattr(tw.nn.functional, fn)(x, w, **keywords)
            return tw.autograd.grad((y * y * y).sum(), (x, w), create_graph=True)

        # (the create_graph gradients' own backward: the nodes that read g, x and w)
        assert tw.autograd.gradcheck(gradients, (x, w))


#: A few cases on cuPyNumeric, where every convolution goes by the core's reference.
CUNUMERIC_PROGRAMS = {
    "packed": _packed("conv2d"),
    "changed": _changed_after_packing("conv1d"),
    "second": _second_after_write("conv_transpose2d", "x.data.add_"),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("program", CUNUMERIC_PROGRAMS)
def test_convolution_saves_as_torch_cunumeric(program: str) -> None:
    same(CUNUMERIC_PROGRAMS[program], "cunumeric", decimals=8)
