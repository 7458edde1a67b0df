"""Recurrent layers: ``RNNCell``, ``LSTMCell``, ``GRUCell`` and the sequence layers ``RNN``,
``LSTM``, ``GRU``, with PyTorch's parameter names, shapes, gate order and initialisation.

Each step is written with core tensor ops, so it runs and differentiates on every backend.
The input projection ``x @ W_ih^T + b_ih`` of a whole layer is one matmul over all time
steps; only the recurrent projection ``h @ W_hh^T + b_hh`` runs step by step. The sequence
layers also take a ``PackedSequence`` (``tw.nn.utils.rnn``) and return one, with the final
states of each sequence's last valid step.

Gate formulas (``gi`` is the input projection, ``gh`` the recurrent one, both split into
gate blocks in this order along the last axis):

- RNN: ``h' = tanh(gi + gh)`` (or ``relu``).
- LSTM (i, f, g, o): ``c' = σ(f) * c + σ(i) * tanh(g)``, ``h' = σ(o) * tanh(c')``.
- GRU (r, z, n): ``r = σ(gi_r + gh_r)``, ``z = σ(gi_z + gh_z)``,
  ``n = tanh(gi_n + r * gh_n)`` (``gh_n`` includes ``b_hn``), ``h' = (1 - z) * n + z * h``.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.function import apply_fresh
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.nn.utils.rnn.packed_sequence import PackedSequence
from tensorweaver.nn.utils.rnn.packing import packed_from_padded, padded_from_packed, sorted_lengths
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.linalg import autocast_operands
from tensorweaver.tensor import Tensor

State = tuple[Tensor, ...]  # (h,) for RNN and GRU, (h, c) for LSTM
Step = Callable[[Tensor, Tensor, State], State]


def _rnn_tanh_step(gi: Tensor, gh: Tensor, state: State) -> State:
    return (tw.tanh(gi + gh),)


def _rnn_relu_step(gi: Tensor, gh: Tensor, state: State) -> State:
    return (tw.relu(gi + gh),)


def _lstm_step(gi: Tensor, gh: Tensor, state: State) -> State:
    _, c = state
    i, f, g, o = (gi + gh).chunk(4, -1)
    c = tw.sigmoid(f) * c + tw.sigmoid(i) * tw.tanh(g)
    return tw.sigmoid(o) * tw.tanh(c), c


def _gru_step(gi: Tensor, gh: Tensor, state: State) -> State:
    (h,) = state
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = tw.sigmoid(i_r + h_r)
    z = tw.sigmoid(i_z + h_z)
    n = tw.tanh(i_n + r * h_n)
    return (n + z * (h - n),)  # (1 - z) * n + z * h with one product fewer


# mode -> (gate blocks per weight, step)
_MODES: dict[str, tuple[int, Step]] = {
    "RNN_TANH": (1, _rnn_tanh_step),
    "RNN_RELU": (1, _rnn_relu_step),
    "LSTM": (4, _lstm_step),
    "GRU": (3, _gru_step),
}


def _rnn_mode(nonlinearity: str, fn: str) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"{fn}: unknown nonlinearity {nonlinearity!r}; use 'tanh' or 'relu'")
    return "RNN_" + nonlinearity.upper()


def _refuse_proj_size(proj_size: Optional[int], fn: str) -> None:
    if proj_size is not None:
        raise ValueError(
            f"{fn}: proj_size argument is only supported for LSTM, not RNN or GRU (got "
            f"proj_size={proj_size!r})"
        )


def _nonlinearity_repr(module: Module) -> str:
    """The ``extra_repr`` part for a non-default nonlinearity (RNNCell only)."""
    nonlinearity = getattr(module, "nonlinearity", "tanh")
    return "" if nonlinearity == "tanh" else f", nonlinearity={nonlinearity}"


def _reset_uniform(module: Module, hidden_size: int) -> None:
    """PyTorch's recurrent initialisation: every parameter from U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _recurrence(
    x: Tensor,
    initial: State,
    weights: list[Tensor],
    mode: str,
    num_layers: int,
    bidirectional: bool,
    has_bias: bool,
    dropout: float,
    training: bool,
    lengths: Optional[list[int]] = None,
    projected: bool = False,
) -> tuple[Tensor, State]:
    """A whole recurrent layer stack on time-major ``x`` (L, N, H_in), written with tensor
    ops: the output (L, N, D * H) and the final states, each (num_layers * D, N, H).
    ``weights`` holds (w_ih, w_hh[, b_ih, b_hh][, w_hr]) per layer and direction, PyTorch's
    order; with ``projected`` (an LSTM's ``proj_size``) each new h is ``w_hr @ h``.

    With ``lengths`` (one per batch column), a column's state stops changing after its last
    valid step (and the reverse direction starts at that step), so the final states are those
    of each sequence's end; outputs past a sequence's end are meaningless."""
    directions = 2 if bidirectional else 1
    per = (4 if has_bias else 2) + projected
    step = _MODES[mode][1]
    length = x.shape[0]
    masks = [None] * length
    if lengths is not None:
        for t in range(length):
            if min(lengths) <= t:  # some column ended: keep its state
                valid = [[n > t] for n in lengths]
                masks[t] = tw.tensor(valid, dtype=tw.bool, device=x.device)
    finals: list[State] = []
    layer_input = x
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            w = weights[index * per : (index + 1) * per]
            w_hr = w[-1] if projected else None
            w_ih, w_hh, b_ih, b_hh = (*w[:2], None, None) if not has_bias else w[:4]
            state = tuple(s[index] for s in initial)
            steps = F.linear(layer_input, w_ih, b_ih).unbind(0)
            hs: list[Any] = [None] * length
            for t in reversed(range(length)) if direction else range(length):
                new = step(steps[t], F.linear(state[0], w_hh, b_hh), state)
                if w_hr is not None:
                    new = (F.linear(new[0], w_hr), *new[1:])
                mask = masks[t]
                if mask is not None:
                    new = tuple(tw.where(mask, n, old) for n, old in zip(new, state))
                state = new
                hs[t] = state[0]
            outputs.append(tw.stack(hs))
            finals.append(state)
        layer_input = outputs[0] if directions == 1 else tw.cat(outputs, -1)
        if dropout and training and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, tuple(tw.stack([s[i] for s in finals]) for i in range(len(initial)))


def rnn_reference(*args: Any) -> Tensor:
    """The decomposition of the ``rnn`` composite: ``(x, *initial states, *weights, mode,
    num_layers, bidirectional, has_bias, dropout, training)`` to the output and the final
    states flattened and joined into one vector (one output, so one graph node)."""
    tensors, static = args[:-6], args[-6:]
    n_states = 2 if static[0] == "LSTM" else 1
    output, last = _recurrence(
        tensors[0], tensors[1 : 1 + n_states], list(tensors[1 + n_states :]), *static
    )
    return tw.cat([output.reshape(-1)] + [s.reshape(-1) for s in last])


def rnn_packed_reference(*args: Any) -> Tensor:
    """The decomposition of the ``rnn_packed`` composite: ``(data, *initial states,
    *weights, batch_sizes, mode, num_layers, bidirectional, has_bias, dropout, training)``
    to the packed output and the final states (packed order) flattened and joined into one
    vector, as ``rnn_reference``. Runs the recurrence on the batch padded in packed order,
    each column's state frozen past its length."""
    tensors, batch_sizes, static = args[:-7], list(args[-7]), args[-6:]
    n_states = 2 if static[0] == "LSTM" else 1
    packed, last = _packed_recurrence(
        tensors[0], tensors[1 : 1 + n_states], list(tensors[1 + n_states :]), batch_sizes, static
    )
    return tw.cat([packed.reshape(-1)] + [s.reshape(-1) for s in last])


def _packed_recurrence(
    data: Tensor,
    initial: State,
    weights: list[Tensor],
    batch_sizes: list[int],
    static: tuple,
    projected: bool = False,
) -> tuple[Tensor, State]:
    """``_recurrence`` on packed ``data``: run padded in packed order with each column's
    state frozen past its length, the output packed again; states in packed order."""
    order = range(batch_sizes[0])
    padded = padded_from_packed(data, batch_sizes, order, len(batch_sizes), False, 0.0)
    lengths = sorted_lengths(batch_sizes)
    output, last = _recurrence(
        padded, initial, weights, *static, lengths=lengths, projected=projected
    )
    return packed_from_padded(output, batch_sizes, order, False), last


def _unpack(packed: Tensor, shape: tuple[int, ...], initial: State) -> tuple[Tensor, State]:
    """The output of ``shape`` and the final states from ``rnn``'s (or ``rnn_packed``'s)
    joined vector."""
    shapes = (tuple(shape), *(tuple(s.shape) for s in initial))
    output, *states = apply_fresh(_Unpacked, packed, shapes)  # (several new tensors)
    return output, tuple(states)


class _Unpacked(tw.autograd.Function):
    """The pieces of ``rnn``'s joined vector, reshaped: tensors of their own, no views
    (PyTorch's outputs may be changed in place or ``detach_()``-ed, which a view refuses),
    from one node, where a split, a reshape and a clone per piece made seven nodes (torch:cpu,
    the word-LM's 2-layer LSTM of 200 at bptt 20, batch 4, interleaved on a loaded machine:
    forward 67 against 190-208 us, forward and backward 360-438 against 479-581 us)."""

    @staticmethod
    def forward(ctx: Any, packed: Tensor, shapes: tuple) -> tuple:
        ctx.set_materialize_grads(False)  # (an unused final state's zeros: made in backward)
        ctx.shapes, ctx.dtype = shapes, packed.dtype
        backend, native, start = packed.backend, packed.native, 0
        pieces = []
        for shape in shapes:
            stop = start + math.prod(shape)
            piece = backend.reshape(backend.slice(native, (start,), (stop,), (1,)), shape)
            pieces.append(Tensor(piece, backend, packed.dtype))
            start = stop
        return tuple(pieces)

    @staticmethod
    def backward(ctx: Any, *grads: Optional[Tensor]) -> tuple:
        sizes = [math.prod(shape) for shape in ctx.shapes]
        given = next(g for g in grads if g is not None)  # (the packed vector's device)
        if tw.is_grad_enabled():  # create_graph: the gradient as a graph of core ops
            flat = [
                tw.zeros(n, dtype=ctx.dtype, device=given.device) if g is None else g.reshape(-1)
                for g, n in zip(grads, sizes)
            ]
            return tw.cat(flat), None
        backend = given.backend
        natives = [
            backend.full((n,), 0, ctx.dtype) if g is None else backend.reshape(g.native, (n,))
            for g, n in zip(grads, sizes)
        ]
        return Tensor(backend.cat(natives, 0), backend, ctx.dtype), None


# --------------------------------------------------------------------------------- cells


class RNNCellBase(Module):
    """PyTorch's base of the recurrent cells (custom cells subclass it; ``isinstance``
    checks): input-to-hidden and hidden-to-hidden weights (and biases) of ``num_chunks``
    stacked gates, initialised from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(tw.empty(gates, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(tw.empty(gates, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(tw.empty(gates, device=device, dtype=dtype))
            self.bias_hh = Parameter(tw.empty(gates, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        return text + _nonlinearity_repr(self)


class _CellBase(RNNCellBase):
    """One recurrent step on ``(N, input_size)`` or unbatched ``(input_size,)`` input."""

    _mode: str  # each cell's: its weights' gate count and its step

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, device: Any, dtype: Any
    ) -> None:
        super().__init__(input_size, hidden_size, bias, _MODES[self._mode][0], device, dtype)

    def _step_mode(self) -> str:
        return self._mode

    def _run(self, input: Tensor, state: Optional[State]) -> State:
        fn = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{fn}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for i, s in enumerate(state or ()):
            if s.dim() not in (1, 2):
                what = "hidden" if len(state) == 1 else f"hx[{i}]"
                raise ValueError(f"{fn}: Expected {what} to be 1D or 2D, got {s.dim()}D instead")
        mode = self._step_mode()
        batched = input.dim() == 2
        for i, s in enumerate(state or ()):  # PyTorch's class (and words) from here on
            if s.dim() != input.dim():
                raise RuntimeError(
                    f"{fn}: hidden{i} of shape {tuple(s.shape)} does not fit input of shape "
                    f"{tuple(input.shape)}: give ({self.hidden_size},) for unbatched input, "
                    f"(N, {self.hidden_size}) for a batch"
                )
        if not batched:
            input = input.unsqueeze(0)
            state = None if state is None else tuple(s.unsqueeze(0) for s in state)
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"{fn}: input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        if state is None:
            zeros = tw.zeros(
                input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device
            )
            state = (zeros,) * (2 if mode == "LSTM" else 1)
        for i, s in enumerate(state):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"{fn}: Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                    f"{s.shape[0]}"
                )
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"{fn}: hidden{i} has inconsistent hidden_size: got {s.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
        step = _MODES[mode][1]
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        gh = F.linear(state[0], self.weight_hh, self.bias_hh)
        new = step(gi, gh, state)
        return new if batched else tuple(s.squeeze(0) for s in new)


class RNNCell(_CellBase):
    """``h' = tanh(x @ W_ih^T + b_ih + h @ W_hh^T + b_hh)`` (or ``relu``); weights
    ``(hidden, input)`` and ``(hidden, hidden)``."""

    _mode = "RNN_TANH"  # the weights' layout; the step follows ``nonlinearity``

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity  # checked when run, as PyTorch

    def _step_mode(self) -> str:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"RNNCell: Unknown nonlinearity: {self.nonlinearity}")
        return "RNN_" + self.nonlinearity.upper()

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        """The next hidden state; ``hx`` defaults to zeros."""
        return self._run(input, None if hx is None else (hx,))[0]


class LSTMCell(_CellBase):
    """One LSTM step with gates (i, f, g, o) stacked in ``weight_ih`` ``(4*hidden, input)``
    and ``weight_hh`` ``(4*hidden, hidden)``."""

    _mode = "LSTM"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(
        self, input: Tensor, hx: Optional[tuple[Tensor, Tensor]] = None
    ) -> tuple[Tensor, Tensor]:
        """``(h', c')``; ``hx = (h, c)`` defaults to zeros."""
        if hx is not None:
            if not isinstance(hx, (tuple, list)):
                raise TypeError(
                    f"LSTMCell: hx must be a tuple (h, c) of Tensors, not {type(hx).__name__}"
                )
            if len(hx) != 2:
                raise RuntimeError(f"LSTMCell: lstm_cell expects two hidden states, got {len(hx)}")
        h, c = self._run(input, None if hx is None else tuple(hx))
        return h, c


class GRUCell(_CellBase):
    """One GRU step with gates (r, z, n) stacked in ``weight_ih`` ``(3*hidden, input)`` and
    ``weight_hh`` ``(3*hidden, hidden)``."""

    _mode = "GRU"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        """The next hidden state; ``hx`` defaults to zeros."""
        return self._run(input, None if hx is None else (hx,))[0]


# ------------------------------------------------------------------------ sequence layers


def _check_batch_sizes(fn: str, sizes: list[int], data: Tensor) -> None:
    """A packed batch's ``batch_sizes`` must not grow (each step keeps a prefix of the
    sequences) and must not ask for more rows than ``data`` has: PyTorch's kernels refuse
    both with a RuntimeError."""
    if any(later > earlier for earlier, later in zip(sizes, sizes[1:])):
        raise RuntimeError(
            f"{fn}: the packed batch_sizes {sizes} grow; they must not increase (sequences "
            "sorted by decreasing length, as pack_padded_sequence makes them)"
        )
    if sum(sizes) > data.shape[0]:
        raise RuntimeError(
            f"{fn}: the packed batch_sizes {sizes} sum to {sum(sizes)} rows but the data has "
            f"{data.shape[0]} (shape {tuple(data.shape)}); build it with pack_padded_sequence"
        )


class RNNBase(Module):
    """A stack of ``num_layers`` recurrent layers over a sequence, optionally bidirectional.

    Parameters of layer ``k`` are ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}``, and the same with ``_reverse`` for the backward direction, registered
    in PyTorch's order so that state dicts are interchangeable. Layer ``k > 0`` reads the
    concatenated outputs of both directions of layer ``k - 1``, through dropout when training.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        fn = type(self).__name__
        if mode not in _MODES:
            raise ValueError(
                f"{fn}: Unrecognized RNN mode: {mode!r}; use one of {', '.join(_MODES)}"
            )
        # PyTorch's checks, order and exception classes
        if (
            isinstance(dropout, bool)
            or not isinstance(dropout, numbers.Number)  # NumPy scalars, fractions: as PyTorch
            or not 0 <= dropout <= 1
        ):
            raise ValueError(f"{fn}: dropout should be a number in range [0, 1], got {dropout!r}")
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{fn}: {name} should be of type bool, got: {type(value).__name__}")
        for name, value in (
            ("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)
        ):  # fmt: skip
            if not isinstance(value, int):
                raise TypeError(f"{fn}: {name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{fn}: {name} must be greater than zero, got {value}")
        if isinstance(proj_size, bool) or not hasattr(type(proj_size), "__index__"):
            raise TypeError(  # PyTorch's class (its torch.empty refuses the size)
                f"{fn}: proj_size should be of type int, got: {type(proj_size).__name__}"
            )
        proj_size = operator.index(proj_size)  # NumPy integers too, as PyTorch
        if proj_size < 0:
            raise ValueError(
                f"{fn}: proj_size should be a positive integer or zero to disable projections, "
                f"got {proj_size!r}"
            )
        if proj_size and mode != "LSTM":
            raise ValueError(f"{fn}: proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError(
                f"{fn}: proj_size ({proj_size}) has to be smaller than hidden_size ({hidden_size})"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(  # PyTorch's words: filters match on them
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        layers = self._weight_shapes()
        for shapes in layers:
            for name, shape in shapes.items():
                setattr(self, name, Parameter(tw.empty(*shape, device=device, dtype=dtype)))
        self._name_weights(layers)
        self.reset_parameters()

    def _weight_shapes(self) -> list[dict[str, tuple[int, ...]]]:
        """Each layer and direction's weights, name to shape, in PyTorch's order."""
        gates = _MODES[self.mode][0] * self.hidden_size
        directions = 2 if self.bidirectional else 1
        state_size = self.proj_size or self.hidden_size  # the size of h (and of each output)
        layers = []
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else state_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {"weight_ih": (gates, layer_input), "weight_hh": (gates, state_size)}
                if self.bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if self.proj_size:
                    shapes.update(weight_hr=(self.proj_size, self.hidden_size))
                layers.append({kind + suffix: shape for kind, shape in shapes.items()})
        return layers

    def _name_weights(self, layers: list[dict[str, tuple[int, ...]]]) -> None:
        """PyTorch's bookkeeping, read by its users: ``_all_weights`` (each layer and
        direction's weight names) and ``_flat_weights_names`` (all of them, in order)."""
        self._all_weights = [list(shapes) for shapes in layers]
        self._flat_weights_names = [name for names in self._all_weights for name in names]

    def __getattr__(self, name: str) -> Any:
        # A layer saved whole by tw.save before the bookkeeping existed comes back without it
        # (tw.load runs no __setstate__): named here from its configuration, on first use.
        if name in ("_all_weights", "_flat_weights_names") and "mode" in self.__dict__:
            self._name_weights(self._weight_shapes())
            return self.__dict__[name]
        return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        # PyTorch reads its list afresh once a weight is replaced: a list assigned to
        # _flat_weights ends there
        if "_flat_weights_assigned" in self.__dict__ and name in self._flat_weights_names:
            del self.__dict__["_flat_weights_assigned"]
        super().__setattr__(name, value)

    def _init_flat_weights(self) -> None:
        """PyTorch's: ``_flat_weights`` read afresh from the weights (a list assigned to it
        ends here); subclasses and tools written for PyTorch call it."""
        self.__dict__.pop("_flat_weights_assigned", None)

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        self._init_flat_weights()  # as PyTorch after .to() and the like
        return super()._apply(fn)

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """Nothing to do: weights are never packed into one buffer here (PyTorch compatibility
        for code that calls it before running on cuDNN)."""

    @property
    def _flat_weights(self) -> list[Any]:
        """Every weight, per layer and direction, in PyTorch's order, as it is now (a weight
        replaced by assignment is seen here; a deleted one is None, as in PyTorch's list)."""
        params = self._parameters
        weights = [
            params[name] if name in params else getattr(self, name, None)
            for name in self._flat_weights_names
        ]
        assigned = self.__dict__.get("_flat_weights_assigned")
        if assigned:
            weights = [assigned.get(n, w) for n, w in zip(self._flat_weights_names, weights)]
        return weights

    @_flat_weights.setter
    def _flat_weights(self, weights: list[Any]) -> None:
        # Code written for PyTorch assigns the list (adapters, custom layers); as there, it
        # runs until a weight is assigned, _init_flat_weights() or a conversion.
        self._init_flat_weights()
        current = self._flat_weights  # the weights themselves: only other entries are kept
        self.__dict__["_flat_weights_assigned"] = {
            name: w
            for name, w, now in zip(self._flat_weights_names, weights, current)
            if w is not now
        }

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _check_input(
        self,
        input: Tensor,
        weights: list[Any],
        expected_dim: int,
        dtype_error: type[Exception] = ValueError,
    ) -> None:
        """PyTorch's checks of the input (or packed data): its dtype, rank and size; and that
        every weight is there."""
        fn = type(self).__name__
        missing = [n for n, w in zip(self._flat_weights_names, weights) if w is None]
        if missing:  # PyTorch would run on the deleted tensor; it is gone here
            raise RuntimeError(
                f"{fn}: weight {missing[0]!r} is None or was deleted; assign a tensor to it first"
            )
        weight = weights[0]
        if input.dtype != weight.dtype:
            raise dtype_error(
                f"{fn}: input dtype ({input.dtype}) does not match weight dtype "
                f"({weight.dtype}). Convert input: input.to({weight.dtype}), or convert model: "
                f"model.to({input.dtype})"
            )
        if input.dim() != expected_dim:
            raise RuntimeError(
                f"{fn}: input must have {expected_dim} dimensions, got {input.dim()}"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{fn}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def _initial_states(self, hx: Optional[State], batch: int, like: Tensor) -> State:
        """``hx`` (or zeros) as ``(layers * directions, N, H)`` tensors, checked as PyTorch
        (a RuntimeError naming the expected size)."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        sizes = [(count, batch, self.proj_size or self.hidden_size)]
        if self.mode == "LSTM":
            sizes.append((count, batch, self.hidden_size))
        if hx is None:
            return tuple(tw.zeros(*size, dtype=like.dtype, device=like.device) for size in sizes)
        for i, (s, size) in enumerate(zip(hx, sizes)):
            which = "hidden" if len(sizes) == 1 else f"hidden[{i}]"
            if tuple(s.shape) != size:
                raise RuntimeError(
                    f"{type(self).__name__}: Expected {which} size {size}, got {list(s.shape)} "
                    "(it is (num_layers * num_directions, N, hidden_size) even with batch_first)"
                )
            if s.dtype != like.dtype:
                raise RuntimeError(
                    f"{type(self).__name__}: {which} has dtype {s.dtype} but the input has "
                    f"{like.dtype}; give them one dtype"
                )
        return hx

    def _static(self) -> tuple[Any, ...]:
        """The non-tensor arguments of ``_recurrence`` and the ``rnn`` composite."""
        return (self.mode, self.num_layers, self.bidirectional, self.bias, self.dropout,
                self.training)  # fmt: skip

    def _run(
        self, input: Union[Tensor, PackedSequence], hx: Optional[State]
    ) -> tuple[Union[Tensor, PackedSequence], State]:
        """The output and final states for ``input`` and initial states ``hx`` (each given or
        zeros), in PyTorch's layouts, after PyTorch's checks in PyTorch's order; under
        autocast, in the dtype PyTorch's CPU kernels compute in."""
        low = autocast_dtype()
        if low is None:
            return self._run_in(input, hx, self._flat_weights)
        input, hx, weights = self._autocast(low, input, hx)
        with tw.autocast("cpu", enabled=False):  # the operands are cast already
            return self._run_in(input, hx, weights)

    def _autocast(
        self, low: Any, input: Union[Tensor, PackedSequence], hx: Optional[State]
    ) -> tuple[Union[Tensor, PackedSequence], Optional[State], list[Any]]:
        """The operands as PyTorch's CPU autocast leaves them: an RNN's matrix products are on
        autocast's list (every operand but float64 in ``low``), as are those of an LSTM with
        ``proj_size`` (PyTorch's oneDNN kernel cannot project: it runs the layer step by step)
        and the oneDNN layer PyTorch runs another LSTM with for a float32 input; a GRU, or an
        LSTM given the other low-precision dtype, computes in ``low`` only for an input
        already in ``low``, else in its weights' dtype (PyTorch's oneDNN LSTM takes a bfloat16
        or float16 input only on CPUs with such kernels, and raises where it lacks one for
        ``low``: there the result depends on the CPU, here it does not). Operands left in
        different dtypes raise PyTorch's RuntimeError."""
        data = input.data if isinstance(input, PackedSequence) else input
        weights = self._flat_weights
        stepwise = self.mode.startswith("RNN") or getattr(self, "proj_size", 0) > 0
        one_dnn = self.mode == "LSTM" and data.dtype is tw.float32
        if stepwise or one_dnn or data.dtype is low:
            cast = list(autocast_operands(low, data, *weights))
            data, weights = cast[0], cast[1:]
        elif data.dtype.itemsize < 8 and data.dtype.is_floating_point:
            data = data.to(weights[0].dtype)
        if data.dtype is not weights[0].dtype:
            raise RuntimeError(
                f"{type(self).__name__} under autocast: mat1 and mat2 must have the same dtype, "
                f"but got {data.dtype.name} and {weights[0].dtype.name}; autocast leaves a "
                "float64 input alone: give a float32 or lower-precision input"
            )
        if hx is not None:
            hx = tuple(s.to(data.dtype) for s in hx)
        input = input._replace(data=data) if isinstance(input, PackedSequence) else data
        return input, hx, weights

    def _run_in(
        self, input: Union[Tensor, PackedSequence], hx: Optional[State], weights: list[Any]
    ) -> tuple[Union[Tensor, PackedSequence], State]:
        """:meth:`_run` with the layer's ``weights`` given."""
        if isinstance(input, PackedSequence):
            return self._run_packed(input, hx, weights)
        fn = type(self).__name__
        if input.dim() not in (2, 3):
            raise ValueError(
                f"{fn}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead"
            )
        batched = input.dim() == 3
        if hx is not None and any(s.dim() != input.dim() for s in hx):
            layout = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(
                f"For {layout} input, hx should also be {input.dim()}-D but got "
                f"{', '.join(f'{s.dim()}-D' for s in hx)} tensor ({fn})"
            )
        if not batched:
            input = input.unsqueeze(1)
            hx = None if hx is None else tuple(s.unsqueeze(1) for s in hx)
        elif self.batch_first:
            input = input.transpose(0, 1)
        self._check_input(input, weights, 3)
        initial = self._initial_states(hx, input.shape[1], input)
        if input.shape[0] == 0:
            raise RuntimeError(
                f"{fn}: Expected sequence length to be larger than 0 in RNN; give at least one "
                "time step"
            )
        if self.proj_size:  # no backend kernel takes projections: the recurrence's own ops
            output, last = _recurrence(input, initial, weights, *self._static(), projected=True)
        elif getattr(input.backend, "fused_rnn", None) is None:
            output, last = _recurrence(input, initial, weights, *self._static())
        else:
            packed = fused_or_reference(
                "rnn", rnn_reference, (input, *initial, *weights), *self._static()
            )
            shape = (input.shape[0], input.shape[1], self._width())
            output, last = _unpack(packed, shape, initial)
        if not batched:
            return output.squeeze(1), tuple(s.squeeze(1) for s in last)
        return (output.transpose(0, 1) if self.batch_first else output), last

    def _run_packed(
        self, input: PackedSequence, hx: Optional[State], weights: list[Any]
    ) -> tuple[PackedSequence, State]:
        """A packed batch: the backend's fused ``rnn_packed`` kernel where it has one, else
        the recurrence on the batch padded (in packed order) with each column's state frozen
        past its length, packed again. ``hx`` and the final states are in the batch's
        original order, as in PyTorch."""
        data, sizes = input.data, input.batch_sizes.tolist()
        # PyTorch's LSTM skips its checks for packed input: its matmul refuses the dtype
        self._check_input(data, weights, 2, RuntimeError if self.mode == "LSTM" else ValueError)
        if hx is not None and input.sorted_indices is not None:
            hx = tuple(s.index_select(1, input.sorted_indices) if s.dim() == 3 else s for s in hx)
        _check_batch_sizes(type(self).__name__, sizes, data)
        initial = self._initial_states(hx, sizes[0], data)
        if sizes[0] == 0:  # no sequence at all: no step runs (PyTorch gives empty results)
            empty = tw.zeros(0, self._width(), dtype=data.dtype, device=data.device)
            return input._replace(data=empty), initial
        if self.proj_size or getattr(data.backend, "fused_rnn_packed", None) is None:
            packed, last = _packed_recurrence(
                data, initial, weights, sizes, self._static(), projected=bool(self.proj_size)
            )
        else:
            joined = fused_or_reference(
                "rnn_packed",
                rnn_packed_reference,
                (data, *initial, *weights),
                tuple(sizes),
                *self._static(),
            )
            packed, last = _unpack(joined, (data.shape[0], self._width()), initial)
        if input.unsorted_indices is not None:
            last = tuple(s.index_select(1, input.unsorted_indices) for s in last)
        return input._replace(data=packed), last

    def _width(self) -> int:
        """The output's feature size: both directions' states side by side."""
        return (self.proj_size or self.hidden_size) * (2 if self.bidirectional else 1)

    def extra_repr(self) -> str:
        # PyTorch's RNN, LSTM and GRU print no nonlinearity (only RNNCell does).
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t @ W_ih^T + b_ih + h_{t-1} @ W_hh^T + b_hh)`` (or ``relu``)
    per layer. ``forward(input, hx=None)`` returns ``(output, h_n)``: ``output`` holds the last
    layer's ``h_t`` for every step (both directions concatenated), ``h_n`` every layer's final
    state."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
        proj_size: Optional[int] = None,  # refused, even 0, as PyTorch refuses it (LSTM only)
    ) -> None:
        _refuse_proj_size(proj_size, type(self).__name__)
        self.nonlinearity = nonlinearity
        mode = _rnn_mode(nonlinearity, "RNN")
        super().__init__(
            mode,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        output, (h_n,) = self._run(input, None if hx is None else (hx,))
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory with gates (i, f, g, o). ``forward(input, hx=None)`` with
    ``hx = (h_0, c_0)`` returns ``(output, (h_n, c_n))``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device,
            dtype,
        )

    def forward(
        self, input: Tensor, hx: Optional[tuple[Tensor, Tensor]] = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if isinstance(hx, Tensor):
            hx = _lstm_state_rows(input, hx)
        if hx is not None:  # PyTorch's classes: it indexes hx[0] and hx[1]
            if not isinstance(hx, (tuple, list)):
                raise TypeError(
                    f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, not {type(hx).__name__}"
                )
            if len(hx) < 2:
                raise IndexError(f"LSTM: hx must be a tuple (h_0, c_0), got {len(hx)} tensor")
            if len(hx) > 2:
                raise RuntimeError(
                    f"LSTM: lstm expects two hidden states (h_0, c_0), got {len(hx)} tensors"
                )
        output, (h_n, c_n) = self._run(input, None if hx is None else tuple(hx))
        return output, (h_n, c_n)


def _lstm_state_rows(input: Union[Tensor, PackedSequence], hx: Tensor) -> tuple[Tensor, Tensor]:
    """``(hx[0], hx[1])`` of a single tensor passed as an LSTM's state (a GRU's ``h_0``, say):
    PyTorch indexes it as it would a pair, so rows of the wrong rank raise its RuntimeError and
    an unbatched input runs; its kernel takes a state only as a tuple, which a batched input's
    rows become only when a packed input's order permutes them."""
    rows = (hx[0], hx[1])
    if isinstance(input, PackedSequence):
        refused = input.sorted_indices is None
    else:
        refused = input.dim() == 3 and rows[0].dim() == 3 and rows[1].dim() == 3
    if refused:
        raise TypeError(
            f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, not a Tensor of shape "
            f"{tuple(hx.shape)}; pass (hx[0], hx[1])"
        )
    return rows


class GRU(RNNBase):
    """Gated recurrent unit with gates (r, z, n), ``n = tanh(W_in x + b_in + r * (W_hn h +
    b_hn))``. ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
        proj_size: Optional[int] = None,  # refused, even 0, as PyTorch refuses it (LSTM only)
    ) -> None:
        _refuse_proj_size(proj_size, type(self).__name__)
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        output, (h_n,) = self._run(input, None if hx is None else (hx,))
        return output, h_n
