"""The primitive op IR: every operation a backend object must implement.

The core builds every tensor operation, every gradient rule and every layer from
these primitives, so a backend is one readable file of small methods. ``A`` below
is the backend's own array type; ``DType`` objects come from
:mod:`tensorweaver.contract.dtypes`; shapes, axes and widths are tuples of Python
ints; ``value`` and the bounds are Python scalars.

What the core guarantees before it calls a primitive — so backends need not check:

* **Elementwise** (unary, binary, ternary) operands have **one dtype** and either
  **one shape** or one of them is **0-d** (a scalar array). The core does type
  promotion (``cast``) and broadcasting (``expand``) first.
* Axes are **non-negative** and in range, already normalised; ``axes`` tuples are
  sorted and have no duplicates. ``perm`` is a permutation of ``range(ndim)``.
* Index arrays are ``int64`` and in range: the core checks every index a user hands
  it and raises PyTorch's error (``IndexError`` or ``RuntimeError``, naming the op, the
  dimension and the bad value) before a backend sees it (except in a fused composite the
  backend names in ``checked_indices``, see :data:`OPTIONAL`); negative indices are wrapped
  only where PyTorch wraps them (advanced indexing), elsewhere they are errors.
  Boolean masks have been checked against the shape they index.
* Integer ``floordiv``/``remainder`` never receive a zero divisor: the core raises
  ``RuntimeError`` (PyTorch's CPU behaviour) first.
* Dtypes are ones the backend listed in its ``dtypes`` attribute.
* No array has more axes than the backend's ``max_ndim`` (see :data:`OPTIONAL`): the
  core folds axes to stay within it, and raises a clear error where the result itself
  cannot fit.
* Reductions receive a non-empty ``axes`` tuple; ``sum``/``prod`` receive float or
  ``int64`` input (the core widens smaller ints first, as PyTorch does).

What a backend guarantees:

* **Primitives never modify their inputs.** They may return views of them (the core
  writes only into arrays it shares with the host, or that ``memory_users`` or
  ``owns_memory`` shows nothing else uses, through ``write_into``, and into arrays that
  ``owns_memory`` calls private, through ``foreach_inplace``; see below).
* **Every layout its own primitives return is a valid input**, and computes the
  right answer: broadcast views (``expand``, stride 0), transposed and other
  non-contiguous views (``permute``), stepped slices (``slice`` with step > 1), 0-d
  arrays and arrays with a zero-size axis. The core hands these on unchanged (a
  gradient from ``sum`` is an ``expand`` of a 0-d array); ``tw check`` runs every
  primitive and composite, forward and backward, on each of them.
* No primitive copies a device array to the host except ``to_host`` (no
  ``__array__``, ``.flags`` or ``.tolist()`` on the compute path).
* The result has exactly the dtype the table says (usually the input's), and the
  native array exposes ``.shape`` as a sequence of ints.
* Floats follow IEEE 754 (NaN and inf propagate; no warnings, no exceptions).

What stays undefined on accelerators (where PyTorch's CUDA kernels leave it so): the
order in which a reduction or ``scatter_add`` sums (bitwise results may differ from
the CPU's), which write wins among duplicate indices in ``scatter``, and the cost of
the core's checks above (each reads a scalar back from the device). CPU backends
agree with PyTorch's CPU results and exception types exactly.

**Memory shared with the host** (optional, API 2.2; see :data:`OPTIONAL`). A CPU backend may
let ``tw.from_numpy`` and ``Tensor.numpy()`` share memory with NumPy, as PyTorch's CPU
tensors do: ``wrap_host`` wraps a host array without a copy, ``host_view`` shows an array as
NumPy, ``write_into`` writes an in-place result into an array's memory, ``storage`` says
which arrays share memory; a backend defines all four or none. ``layout`` stands apart, and
a backend without host sharing that reports layouts defines ``storage`` with it (the core
compares views' places within one storage only). The core writes into an array only through
``write_into``, and only into arrays it shares with the host or whose memory nothing but its
own tensors uses (``memory_users``, API 2.12; everything else stays functional). A backend
that offers ``write_into`` must not let a primitive return a view of an input where
PyTorch's op copies (``flip``, ``sign`` of bool): only ``reshape``,
``permute``, ``expand``, ``slice`` and the optional ``select`` and ``split`` may return views,
as PyTorch's view ops do, since a write into the host's array is seen by every view of it.

**Composites** (``softmax``, ``conv2d``, …) have reference decompositions in the core.
A backend may speed one up by defining ``fused_<name>(*args) -> (output, saved)`` and
``fused_<name>_backward(saved, grad_output, needs) -> tuple`` of input gradients, one per
array input in argument order: ``needs[i]`` says whether input ``i`` wants a gradient, and
the backend returns ``None`` (and skips the work) where it does not. An optional array
argument (``conv2d``'s bias, ``layer_norm``'s weight and bias) may be None; its ``needs``
entry is then False. See :data:`COMPOSITES` for the arguments. The core uses them when
present and its own decomposition otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Primitive:
    name: str
    group: str
    signature: str
    doc: str


def _table(group: str, rows: list[tuple[str, str, str]]) -> list[Primitive]:
    return [Primitive(name, group, sig, doc) for name, sig, doc in rows]


_DATA = _table(
    "data",
    [
        (
            "from_host",
            "from_host(array: numpy.ndarray, dtype) -> A",
            "Copy a host NumPy array into a new array of `dtype` (cast if its dtype differs).",
        ),
        (
            "to_host",
            "to_host(a) -> numpy.ndarray",
            "Copy to a host NumPy array (bfloat16 arrives as float32).",
        ),
        ("full", "full(shape, value, dtype) -> A", "A new array filled with `value`."),
        (
            "arange",
            "arange(start, stop, step, dtype) -> A",
            "Evenly spaced values in [start, stop), like numpy.arange: ceil((stop - start) / "
            "step) elements (the core checks that this is >= 0 and step != 0); for a float "
            "dtype element i is start + i * step computed in float64 and rounded once to "
            "dtype (PyTorch's CPU values), for an integer dtype it is exact.",
        ),
        (
            "seed",
            "seed(value: int) -> None",
            "Reset the backend's random generator. value is in [0, 2**64) (tw.manual_seed "
            "maps PyTorch's [-2**63, 2**64) there); equal values must give equal streams, and "
            "a generator taking fewer bits may fold the value (e.g. value % 2**63).",
        ),
        (
            "random_uniform",
            "random_uniform(shape, low, high, dtype) -> A",
            "Uniform samples in [low, high) from the backend's generator (float dtypes).",
        ),
        (
            "random_normal",
            "random_normal(shape, mean, std, dtype) -> A",
            "Normal samples from the backend's generator (float dtypes).",
        ),
        (
            "random_integers",
            "random_integers(shape, low, high, dtype) -> A",
            "Uniform integers in [low, high) (integer dtypes).",
        ),
        (
            "cast",
            "cast(a, dtype) -> A",
            "Convert to `dtype`: floats to ints truncate toward zero; nonzero to bool is True. "
            "NaN, infinities and floats outside the integer dtype's range give an unspecified "
            "value (as C's casts and PyTorch's), never an error; the core never relies on it.",
        ),
    ],
)

_UNARY = _table(
    "unary",
    [
        ("neg", "neg(a) -> A", "-a."),
        ("abs", "abs(a) -> A", "|a|."),
        ("sign", "sign(a) -> A", "-1, 0 or 1 (NaN stays NaN)."),
        ("exp", "exp(a) -> A", "e**a (float)."),
        ("log", "log(a) -> A", "Natural log (float); log(0) = -inf, log(<0) = NaN."),
        ("sin", "sin(a) -> A", "Sine (float)."),
        ("cos", "cos(a) -> A", "Cosine (float)."),
        ("tanh", "tanh(a) -> A", "Hyperbolic tangent (float)."),
        ("sqrt", "sqrt(a) -> A", "Square root (float)."),
        ("erf", "erf(a) -> A", "The error function (float), to full precision."),
        ("floor", "floor(a) -> A", "Round down (float)."),
        ("ceil", "ceil(a) -> A", "Round up (float)."),
        ("round", "round(a) -> A", "Round half to even (float)."),
        ("trunc", "trunc(a) -> A", "Round toward zero (float)."),
        ("logical_not", "logical_not(a) -> A", "not a (bool)."),
        ("bitwise_not", "bitwise_not(a) -> A", "~a (integer or bool)."),
    ],
)

_BINARY = _table(
    "binary",
    [
        ("add", "add(a, b) -> A", "a + b."),
        ("sub", "sub(a, b) -> A", "a - b."),
        ("mul", "mul(a, b) -> A", "a * b."),
        ("div", "div(a, b) -> A", "a / b (float)."),
        ("floordiv", "floordiv(a, b) -> A", "floor(a / b), as Python's // (any numeric)."),
        (
            "remainder",
            "remainder(a, b) -> A",
            "Python's % (any numeric; the sign of b): a - floor(a / b) * b for finite operands; "
            "for an infinite b, a where a is zero or has b's sign, else b (numpy.remainder, "
            "torch.remainder; the sign of a zero result is either).",
        ),
        ("pow", "pow(a, b) -> A", "a ** b."),
        ("maximum", "maximum(a, b) -> A", "Elementwise max; NaN if either is NaN."),
        ("minimum", "minimum(a, b) -> A", "Elementwise min; NaN if either is NaN."),
        ("eq", "eq(a, b) -> A", "a == b (bool result)."),
        ("ne", "ne(a, b) -> A", "a != b (bool result)."),
        ("lt", "lt(a, b) -> A", "a < b (bool result)."),
        ("le", "le(a, b) -> A", "a <= b (bool result)."),
        ("gt", "gt(a, b) -> A", "a > b (bool result)."),
        ("ge", "ge(a, b) -> A", "a >= b (bool result)."),
        ("logical_and", "logical_and(a, b) -> A", "a and b (bool)."),
        ("logical_or", "logical_or(a, b) -> A", "a or b (bool)."),
        ("logical_xor", "logical_xor(a, b) -> A", "a xor b (bool)."),
        ("bitwise_and", "bitwise_and(a, b) -> A", "a & b (integer or bool)."),
        ("bitwise_or", "bitwise_or(a, b) -> A", "a | b (integer or bool)."),
        ("bitwise_xor", "bitwise_xor(a, b) -> A", "a ^ b (integer or bool)."),
    ],
)

_TERNARY = _table(
    "ternary",
    [
        (
            "where",
            "where(cond, a, b) -> A",
            "a where cond (bool) is true, else b. a and b share a dtype; shapes follow the "
            "elementwise rule (equal, or 0-d).",
        ),
    ],
)

_REDUCE = _table(
    "reduce",
    [
        ("sum", "sum(a, axes, keepdims) -> A", "Sum over `axes` (dtype kept)."),
        ("prod", "prod(a, axes, keepdims) -> A", "Product over `axes` (dtype kept)."),
        ("max", "max(a, axes, keepdims) -> A", "Maximum over `axes`; NaN propagates."),
        ("min", "min(a, axes, keepdims) -> A", "Minimum over `axes`; NaN propagates."),
        ("any", "any(a, axes, keepdims) -> A", "Logical or over `axes` (bool in, bool out)."),
        ("all", "all(a, axes, keepdims) -> A", "Logical and over `axes` (bool in, bool out)."),
        (
            "argmax",
            "argmax(a, axis, keepdims) -> A",
            "int64 index of the first maximum along one axis (NaN counts as maximum).",
        ),
        (
            "argmin",
            "argmin(a, axis, keepdims) -> A",
            "int64 index of the first minimum along one axis (NaN counts as minimum).",
        ),
        ("cumsum", "cumsum(a, axis) -> A", "Inclusive running sum along one axis (dtype kept)."),
    ],
)

_MOVEMENT = _table(
    "movement",
    [
        ("reshape", "reshape(a, shape) -> A", "Same elements in C order, new shape (no -1)."),
        ("permute", "permute(a, perm) -> A", "Reorder axes: result axis i is input axis perm[i]."),
        (
            "expand",
            "expand(a, shape) -> A",
            "Broadcast to `shape` (same ndim; size-1 axes stretch). May be a view.",
        ),
        (
            "pad",
            "pad(a, widths, value) -> A",
            "Pad axis i with widths[i] = (before, after) copies of `value` (widths >= 0).",
        ),
        (
            "slice",
            "slice(a, starts, stops, steps) -> A",
            "Basic slicing per axis, a[start:stop:step] with 0 <= start <= stop <= size, "
            "step >= 1.",
        ),
        ("flip", "flip(a, axes) -> A", "Reverse the order of elements along `axes`."),
        (
            "cat",
            "cat(arrays, axis) -> A",
            "Join a sequence of arrays (same dtype, same shape but along `axis`).",
        ),
    ],
)

_INDEX = _table(
    "index",
    [
        (
            "gather",
            "gather(a, axis, index) -> A",
            "torch.gather: index has a's ndim and is no longer than a on any axis but `axis` "
            "(it may be shorter); result[i][j][k] = a[i][index[i][j][k]][k] (axis 1), of "
            "index's shape.",
        ),
        (
            "take",
            "take(a, axis, index) -> A",
            "Select along one axis by a 1-d index (numpy.take with axis; index_select).",
        ),
        (
            "scatter",
            "scatter(a, axis, index, src) -> A",
            "Copy of `a` with src written at index along `axis` (torch.scatter: "
            "out[i][index[i][j][k]][k] = src[i][j][k] for axis 1); index and src share a shape "
            "no longer than a's on any axis but `axis` (it may be shorter: only those places are "
            "written; NumPy's put_along_axis would broadcast it instead); with duplicate indices "
            "one of the writes wins.",
        ),
        (
            "scatter_add",
            "scatter_add(a, axis, index, src) -> A",
            "Copy of `a` with src added at index along `axis`, index and src shaped as for "
            "scatter; duplicate indices accumulate.",
        ),
        (
            "nonzero",
            "nonzero(a) -> A",
            "int64 array of shape (n, ndim): the coordinates of the n true/nonzero elements, "
            "in C order. n depends on the data, so a lazy or compiling backend must compute a "
            "(reading back its count is expected; the core calls it only where PyTorch's "
            "result shape depends on the data).",
        ),
    ],
)

_LINALG = _table(
    "linalg",
    [
        (
            "matmul",
            "matmul(a, b) -> A",
            "numpy.matmul for ndim >= 2 operands of one dtype; batch axes broadcast.",
        ),
    ],
)

PRIMITIVES: dict[str, Primitive] = {
    p.name: p for p in _DATA + _UNARY + _BINARY + _TERNARY + _REDUCE + _MOVEMENT + _INDEX + _LINALG
}

#: Names a backend object must define; a plugin lacking any is refused.
REQUIRED: frozenset[str] = frozenset(PRIMITIVES)

UNARY: tuple[str, ...] = tuple(p.name for p in _UNARY)
BINARY: tuple[str, ...] = tuple(p.name for p in _BINARY)
COMPARISONS: tuple[str, ...] = ("eq", "ne", "lt", "le", "gt", "ge")

#: Composites a backend may fuse, with the arguments ``fused_<name>`` receives.
COMPOSITES: dict[str, str] = {
    "rnn": "rnn(x, *initial_states, *weights, mode, num_layers, bidirectional, has_bias, "
    "dropout, training): a recurrent stack as torch.nn.RNN/LSTM/GRU compute it (mode "
    "'RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU'); x (L, N, H_in) time-major, one (h0) or two "
    "(h0, c0) initial states of shape (num_layers * D, N, H), weights (w_ih, w_hh[, b_ih, "
    "b_hh]) per layer and direction in PyTorch's order; returns the output (L, N, D * H) and "
    "the final states flattened and concatenated into one vector",
    "rnn_packed": "rnn_packed(data, *initial_states, *weights, batch_sizes, mode, num_layers, "
    "bidirectional, has_bias, dropout, training): rnn on a packed batch, as torch.nn.RNN/LSTM/"
    "GRU compute it for a PackedSequence; data (sum of lengths, H_in) packed time-major "
    "(longest sequence first), batch_sizes a tuple of Python ints (decreasing, the first "
    "the batch size N), initial states (num_layers * D, N, H) in packed order, the other "
    "arguments as for rnn; returns the packed output (sum of lengths, D * H) and the final "
    "states (each sequence's last valid step, packed order) flattened and concatenated into "
    "one vector",
    "dropout": "dropout(x, p) for 0 < p < 1, in training: each element zeroed with probability "
    "p, the others scaled by 1 / (1 - p), with the backend's own random generator",
    "embedding": "embedding(weight, indices, padding_idx) with weight (V, D) and 1-d int64 "
    "indices in range: the rows weight[indices], (n, D); padding_idx (an int in [0, V) or "
    "None) gets no gradient; only weight has a gradient",
    "relu": "relu(x): max(x, 0); the gradient is 0 where x <= 0 (also for NaN or inf "
    "gradients). The core keeps no reference to x once relu returns: save the output if the "
    "backward needs it (the gradient passes where the output is positive)",
    "cross_entropy": "cross_entropy(x, target, ignore_index) with x (N, C) float logits and "
    "target (N,) int64 class indices, in range or equal to ignore_index: the mean over the "
    "kept targets of -log_softmax(x, 1)[n, target[n]] (NaN when none is kept); only x has a "
    "gradient",
    "linear": "linear(x, weight, bias) with x (..., in), weight (out, in), bias (out,): "
    "x @ weight.T + bias",
    "softmax": "softmax(x, axis)",
    "log_softmax": "log_softmax(x, axis)",
    "conv2d": "conv2d(x, weight, bias, stride: (sh, sw), padding: (ph, pw), dilation: (dh, "
    "dw), groups) with x (N, C, H, W), weight (O, C/groups, kh, kw) and bias (O,) or None "
    "(no bias: its gradient is None)",
    "max_pool2d": "max_pool2d(x, kernel: (kh, kw), stride: (sh, sw), padding: (ph, pw))",
    "layer_norm": "layer_norm(x, weight, bias, normalized_ndim, eps): x standardized over its "
    "last normalized_ndim axes (biased variance), times weight plus bias; weight and bias "
    "have those axes' shape, or are None (no scale, no shift: their gradients are None)",
    "scaled_dot_product_attention": (
        "scaled_dot_product_attention(q, k, v, mask, causal: bool, scale: float) with q (..., "
        "L, E), k (..., S, E), v (..., S, Ev): softmax(q @ k^T * scale + mask) @ v; mask is "
        "None, bool (True = may attend) or of q's dtype (added to the scores), broadcastable "
        "to (..., L, S), and never gets a gradient (is_causal never comes with a mask); a row "
        "whose every key is masked gives zeros. A kernel without a parameter named mask "
        "(written before masks) is called as (q, k, v, causal, scale), unmasked calls only"
    ),
    "conv3d": "conv3d(x, weight, bias, stride: (sd, sh, sw), padding: (pd, ph, pw), dilation: "
    "(dd, dh, dw), groups) with x (N, C, D, H, W), weight (O, C/groups, kd, kh, kw) and bias "
    "(O,) or None (no bias: its gradient is None)",
    "conv_transpose": "conv_transpose(x, weight, bias, stride, padding, output_padding, groups, "
    "dilation) with x (N, C, H, W) or (N, C, D, H, W), weight (C, O/groups, *kernel), bias "
    "(O,) or None, and one int per spatial axis in each tuple: torch.nn.functional."
    "conv_transpose2d/3d (the gradient of a convolution with respect to its input, plus bias)",
    "interpolate": "interpolate(x, mode, size, scales, align_corners, antialias) with x (N, C, "
    "*spatial), 1 to 3 spatial axes: x resampled to (N, C, *size) as torch.nn.functional."
    "interpolate (mode 'nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', "
    "'trilinear' or 'area'; antialias only with bilinear and bicubic); scales, a float per "
    "axis or None, are the scale factors positions are computed with (1 / scale instead of "
    "in / out; size is then floor(in * scale)); x may be an integer dtype in the nearest "
    "modes (no gradient)",
    "grid_sample": "grid_sample(x, grid, mode, padding_mode, align_corners) with x (N, C, H, W) "
    "and grid (N, H_out, W_out, 2), or x (N, C, D, H, W) and grid (N, D_out, H_out, W_out, "
    "3): torch.nn.functional.grid_sample (mode 'bilinear', 'nearest' or 'bicubic' (4-D), "
    "padding_mode 'zeros', 'border' or 'reflection'); x and grid have gradients",
    "ctc_loss": "ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, "
    "zero_infinity) with log_probs (T, N, C) float, targets (N, S) int64 padded (labels in "
    "[0, C) and not blank), input_lengths and target_lengths (N,) int64 (checked): the loss of "
    "each sequence (N,), inf (or 0 with zero_infinity) where no alignment exists; the gradient "
    "of log_probs is PyTorch's, exp(log_probs) - posterior (the true derivative when "
    "log_probs come from log_softmax), zero past each input length; only log_probs has one",
    # Pools, instance norm and embedding bags (issue 15).
    "max_pool_with_indices": "max_pool_with_indices(x, kernel, stride, padding, dilation, "
    "ceil_mode): max_pool's output and, as a second output, the int64 flat index (row-major "
    "over the spatial axes of one (n, c) plane, unpadded) of each window's first maximum "
    "(torch.nn.functional.max_pool1d/2d/3d with return_indices=True); returns ((values, "
    "indices), saved); the indices have no gradient",
    "cross_entropy_nd": "cross_entropy_nd(x, target, ignore_index) with x (N, C, d1, ..., dk) "
    "float logits, k >= 1, and target (N, d1, ..., dk) int64 class indices, in range or "
    "equal to ignore_index: cross_entropy over every position (a segmentation map's pixels), "
    "the mean over the kept targets (NaN when none is kept); only x has a gradient",
    "max_pool": "max_pool(x, kernel, stride, padding, dilation, ceil_mode) with x (N, C, "
    "*spatial), 1 to 3 spatial axes and one int per axis in each tuple: torch.nn.functional."
    "max_pool1d/2d/3d (padding with -inf, at most half the kernel; ceil_mode: the last "
    "window may overhang the end but must start inside the input or its left padding); the "
    "gradient goes to the first maximum of each window in row-major order",
    "avg_pool": "avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, "
    "divisor_override) with x (N, C, *spatial), 1 to 3 spatial axes and one int per axis in "
    "each tuple: torch.nn.functional.avg_pool1d/2d/3d (the divisor counts the zero padding "
    "when count_include_pad, never the ceil_mode overhang; divisor_override, a nonzero int "
    "or None, replaces it)",
    "adaptive_avg_pool": "adaptive_avg_pool(x, output_size) with x (N, C, *spatial) or (C, "
    "*spatial), one int per spatial axis (1 to 3) in output_size: torch.nn.functional."
    "adaptive_avg_pool1d/2d/3d (cell i of an axis averages [floor(i * in / out), ceil((i + 1) "
    "* in / out)))",
    "adaptive_max_pool": "adaptive_max_pool(x, output_size): the maximum of each window "
    "adaptive_avg_pool averages (torch.nn.functional.adaptive_max_pool1d/2d/3d); the gradient "
    "goes to the first maximum of each window in row-major order",
    "instance_norm": "instance_norm(x, weight, bias, eps) with x (N, C, *spatial), at least "
    "two spatial elements: each (sample, channel) plane standardized over its spatial axes "
    "(biased variance), times weight plus bias per channel; weight and bias (C,) or None (no "
    "scale, no shift: their gradients are None)",
    "embedding_bag": "embedding_bag(weight, input, offsets, per_sample_weights, mode, "
    "padding_idx, include_last_offset) with weight (V, D), int64 input in [0, V), either 2-D "
    "(B, W) with offsets None or 1-D with 1-D int64 offsets (checked: start at 0, never "
    "decrease, at most the input's length), per_sample_weights (input's shape, mode 'sum' "
    "only) or None: torch.nn.functional.embedding_bag (mode 'sum', 'mean' or 'max'; entries "
    "equal to padding_idx, an int in [0, V) or None, are left out of their bag; an empty bag "
    "gives zeros); weight and per_sample_weights have gradients",
}


#: Methods a backend may define; the core works without them.
OPTIONAL: dict[str, str] = {
    "from_dlpack": "from_dlpack(obj) -> A: share the memory of a DLPack producer (zero copy); "
    "return None to let the core copy through the host instead",
    "contiguous": "contiguous(a) -> A: a copy in the backend's preferred memory layout (or a "
    "itself when it already has it); the core calls it on gradients it stores in .grad",
    "has_tf32": "attribute, bool: the device has TF32 tensor cores (tw.autocast('tf32'))",
    "set_tf32": "set_tf32(enabled: bool) -> None: let float32 matrix products use TF32",
    "set_num_threads": "set_num_threads(n: int) -> None: the threads this backend's kernels use "
    "(tw.set_num_threads); without it the core steers the BLAS and OpenMP pools through "
    "threadpoolctl",
    "get_num_threads": "get_num_threads() -> int: the threads this backend's kernels use now",
    "checked_indices": 'attribute, frozenset[str]: names of fused composites ("embedding") '
    'and optional primitives ("nll_loss": a target not in [0, C) nor ignore_index) '
    "whose kernel on this device itself raises IndexError('index out of range in self...') "
    "for an out-of-range or negative index; the core then skips its own range check, a read "
    "back to the host, for them (never while tw.compile traces). Absent: the core checks",
    "max_ndim": "attribute, int: the most axes an array may have on this backend (Legate: "
    "6); the core never creates or passes a larger one. Absent: no limit",
    "argsort": "argsort(a, axis) -> int64 A: the stable ascending sort order along axis, NaN "
    "after every number (numpy.argsort(kind='stable')); without it the core sorts on the host",
    "scatter_reduce": "scatter_reduce(a, axis, index, src, reduce) -> A: a copy of a with each "
    "src element combined into the place index names along axis (index: int64, in range, of "
    "src's shape), reduce 'amax' or 'amin' (NaN propagates) or 'prod', a's own value included "
    "(torch.scatter_reduce with include_self=True); without it the core sorts and scans",
    # API 2.2: memory shared with host NumPy arrays (see "Memory shared with the host" above).
    "wrap_host": "wrap_host(array: numpy.ndarray) -> A | None: an array that IS the host "
    "array's memory (no copy; tw.from_numpy); the core passes only native-byte-order arrays "
    "of a dtype the backend lists, with non-negative strides. None: the backend cannot "
    "share host memory (the core copies)",
    "host_view": "host_view(a) -> numpy.ndarray | None: a NumPy array over a's own memory "
    "(no copy; Tensor.numpy()); None where a is not in host memory or has no NumPy dtype "
    "(bfloat16): the core copies with to_host",
    "write_into": "write_into(dst, src) -> bool: write src's values (same shape and dtype; it "
    "may overlap dst) into dst's memory, and return True; return False, writing nothing, "
    "where dst cannot be written (read-only, broadcast) — the core then rebinds",
    "storage": "storage(a) -> object | None: the object that owns a's memory, the same for "
    "every array of this backend over that memory and alive as long as any of them is; "
    "hashable by identity. The core counts in-place writes per storage (autograd's version "
    "check). None: a's memory is never written in place",
    "layout": "layout(a) -> (strides, storage_offset, data_ptr) | None: a's strides and "
    "offset into its storage in elements, and the address of its first element "
    "(Tensor.stride, is_contiguous, storage_offset, data_ptr); None: the core reports "
    "C-contiguous strides, offset 0 and address 0",
    # API 2.3: elementwise and special functions (tw.special, the trigonometric family, ...);
    # the core computes each through the host where a backend lacks it (ops/host_fallback.py).
    # Float in, the same float dtype out; IEEE special values as torch's CPU kernels give them.
    **{
        name: f"{name}(a) -> A: {doc} (float)"
        for name, doc in (
            ("acos", "arccos, NaN outside [-1, 1]"),
            ("asin", "arcsin, NaN outside [-1, 1]"),
            ("atan", "arctan"),
            ("sinh", "hyperbolic sine"),
            ("cosh", "hyperbolic cosine"),
            ("asinh", "inverse hyperbolic sine"),
            ("acosh", "inverse hyperbolic cosine, NaN below 1"),
            ("atanh", "inverse hyperbolic tangent, ±inf at ±1, NaN outside"),
            ("lgamma", "log|gamma(a)|, inf at the poles 0, -1, -2, ..."),
            ("digamma", "d/da lgamma(a): -inf at +0, inf at -0, NaN at negative integers"),
            ("erfinv", "the inverse of erf, ±inf at ±1, NaN outside [-1, 1]"),
            ("erfc", "1 - erf(a) without cancellation (tiny, not 0, for large a)"),
            ("erfcx", "exp(a**2) * erfc(a), finite for large a"),
            ("i0", "the modified Bessel function of the first kind, order 0"),
            ("i0e", "exp(-|a|) * i0(a)"),
            ("i1", "the modified Bessel function of the first kind, order 1"),
            ("i1e", "exp(-|a|) * i1(a)"),
            ("ndtri", "the inverse of the standard normal CDF, ±inf at 1 and 0"),
            ("log_ndtr", "log of the standard normal CDF, accurate in the lower tail"),
            ("sigmoid", "1 / (1 + exp(-a)), accurate relative to its value in both tails"),
        )
    },
    "atan2": "atan2(a, b) -> A: the angle of the point (b, a), in [-pi, pi] (float)",
    "polygamma": "polygamma(n: int, a) -> A: the n-th derivative of digamma (n >= 0; float)",
    "zeta": "zeta(a, q) -> A: the Hurwitz zeta function sum((q + k) ** -a, k >= 0), "
    "torch.special.zeta's values (float)",
    # API 2.3: linear algebra (tw.linalg), with the same host fallback.
    # Each takes float32/float64 batches of matrices (..., m, n), any batch shape (empty
    # too); `info` and `pivots` are int32 of the batch shape, as LAPACK's.
    "linalg_cholesky_ex": "linalg_cholesky_ex(a) -> (L, info): the lower Cholesky factor "
    "read from a's lower triangle (square); info: the order of the first leading minor that "
    "is not positive-definite, else 0 (L is then unspecified there; torch.linalg.cholesky_ex)",
    "linalg_lu_factor_ex": "linalg_lu_factor_ex(a) -> (LU, pivots, info): LAPACK getrf with "
    "partial pivoting (pivots 1-based, min(m, n) of them); info: the first zero pivot of U "
    "(1-based), else 0 (torch.linalg.lu_factor_ex)",
    "linalg_solve_ex": "linalg_solve_ex(a, b) -> (X, info): A X = B, a square, b (..., n, k) "
    "of a's batch shape; info as linalg_lu_factor_ex's (X unspecified where nonzero)",
    "linalg_solve_triangular": "linalg_solve_triangular(a, b, upper: bool, unitriangular: "
    "bool) -> X: A X = B reading only a's upper or lower triangle (its diagonal taken as ones "
    "if unitriangular); b of a's batch shape",
    "linalg_qr": "linalg_qr(a, mode: 'reduced' | 'complete') -> (Q, R): numpy.linalg.qr",
    "linalg_eigh": "linalg_eigh(a, uplo: 'L' | 'U') -> (eigenvalues ascending, eigenvectors "
    "as columns) of the symmetric matrix read from that triangle: numpy.linalg.eigh",
    "linalg_svd": "linalg_svd(a, full_matrices: bool) -> (U, S, Vh), S descending: "
    "numpy.linalg.svd",
    "linalg_det": "linalg_det(a) -> the determinants (batch shape), a's dtype",
    "linalg_slogdet": "linalg_slogdet(a) -> (sign, log|det|), both a's dtype; a singular "
    "matrix gives (0, -inf)",
    # API 2.4: linear algebra added in 2.4 (triangles, eig).
    "linalg_eig": "linalg_eig(a) -> (eigenvalues, eigenvectors as columns) of square "
    "float32/float64/complex64/complex128 matrices, always complex (complex64 for float32): "
    "numpy.linalg.eig's (LAPACK geev: each eigenvector of unit norm), complex even where "
    "every eigenvalue is real",
    "tril": "tril(a, k: int) -> A: a with the elements above its k-th diagonal zeroed, on the "
    "last two axes, any dtype (numpy.tril); without it the core masks",
    "triu": "triu(a, k: int) -> A: a with the elements below its k-th diagonal zeroed (numpy.triu)",
    "linalg_function": "linalg_function(name: str, arrays: tuple, static: tuple, grad: bool) -> "
    "(outputs: tuple, saved) | None: the whole function torch.linalg.<name> (torch.<name> for "
    "cholesky_solve) on the arrays then the static arguments in torch's order (names: "
    "cholesky_ex solve_ex inv_ex solve_triangular cholesky_solve det slogdet eigh eigvalsh eig "
    "eigvals svd svdvals qr lu_factor_ex lu lu_solve householder_product pinv matrix_rank "
    "matrix_exp; and cholesky solve inv lu_factor, which raise as torch's for a failed "
    "factorization: LinAlgError, RuntimeError for lu_factor), torch's values; None for a name "
    "it does not compute (the core composes it and checks the factorization). With grad, "
    "saved is what fused_linalg_backward needs; used only with it",
    "fused_linalg_backward": "fused_linalg_backward((saved, i), grad_output, needs) -> one "
    "gradient per array of linalg_function (None where needs[j] is False) from output i's",
    "fused_linalg_outputs_backward": "fused_linalg_outputs_backward((saved, indices), "
    "grad_outputs, needs) -> as fused_linalg_backward, from the gradients of several outputs "
    "at once (grad_outputs: one per index in indices, None for an output without one); "
    "optional beside it: the core then records one node per call, not one per output",
    "rewrite_linalg_output": "rewrite_linalg_output((saved, i), new) -> None: write new (of "
    "output i's shape and dtype) into output i of a linalg_function call recorded with grad, "
    "as a write through .data (no version bump), so fused_linalg_backward reads it (as "
    "torch's nodes read their saved results); without it such a write is not seen by backward",
    "write_linalg_output": "write_linalg_output(dst, src) -> bool: write src (of dst's shape "
    "and dtype) into dst's memory as a write through .data does (no version bump), for the "
    "core's linalg formulas after a create_graph backward; False where it did not write. "
    "Without it the core uses write_into, unless the backend defines rewrite_linalg_output",
    # API 2.4: complex numbers (a backend that lists complex64/complex128 in its dtypes).
    # Such a backend also takes complex arrays in every arithmetic primitive that makes sense
    # for them (add sub mul div neg pow exp log sqrt sin cos tanh eq ne sum prod matmul, the
    # movement and indexing primitives, cast, full, from_host/to_host, and the optional
    # acos asin atan asinh acosh atanh with C99's principal values); abs of a complex
    # array is its float modulus; cast of complex to a real dtype keeps the real part.
    "real": "real(a) -> A: the real parts of a complex array (float32 for complex64)",
    "imag": "imag(a) -> A: the imaginary parts of a complex array (float32 for complex64)",
    "conj": "conj(a) -> A: the complex conjugate, a new array (not a lazy view)",
    "complex": "complex(re, im) -> A: the complex array re + i*im from two float32 (or two "
    "float64) arrays of one shape, each part exactly as given (inf stays inf)",
    # API 2.4: discrete Fourier transforms (tw.fft).
    # Complex arrays of one precision in and out (complex64 stays complex64); dims distinct,
    # non-negative and non-empty, in any order (only the last is special, for fft_r2c and
    # fft_c2r), every size along them >= 1 (batch axes may be empty). norm scales the
    # result: "none" by 1, "by_root_n" by 1/sqrt(N), "by_n" by 1/N, N the product of the
    # signal sizes along dims (the output's for fft_c2r), as torch's internal
    # _fft_c2c/_fft_r2c/_fft_c2r take it (numpy.fft's norm= is direction-relative).
    "fft_c2c": "fft_c2c(a, dims, norm, forward: bool) -> A: the complex DFT of complex a over "
    "dims, exp(-2j*pi*k*m/n) along each if forward else exp(+2j*pi*k*m/n), scaled by norm "
    "(numpy.fft.fftn / ifftn); a's dtype",
    "fft_r2c": "fft_r2c(a, dims, norm, onesided: bool) -> A: the forward DFT (fft_c2c's) of real "
    "float32/float64 a over dims, complex of a's precision; onesided keeps the bins 0..n//2 of "
    "the last of dims only (numpy.fft.rfftn), else all of them",
    "fft_c2r": "fft_c2r(a, dims, norm, last_dim_size: int) -> A: numpy.fft.irfftn's transform "
    "(inverse fft_c2c over all dims but the last, then the inverse real DFT of the one-sided "
    "spectrum along the last, the imaginary parts of its bin 0 and, for even sizes, bin n//2 "
    "ignored) to last_dim_size points along the last of dims (a has last_dim_size // 2 + 1 "
    "there), scaled by norm; real, float of a's precision",
    # API 2.4: optimizer steps over many tensors at once (foreach).
    "foreach_norm": "foreach_norm(xs, ord) -> list[A]: [the ord-norm of all of x's elements, "
    "0-d of x's dtype, for x in xs]; xs non-empty floating-point arrays, ord 1.0, 2.0 or inf "
    "(clip_grad_norm_'s norms; no gradient)",
    "foreach_add": "foreach_add(xs, ys, alpha) -> list[A]: [x + y * alpha for x, y in zip(xs, "
    "ys)], new arrays (xs and ys unchanged); xs and ys lists of one length, each pair one "
    "shape and floating-point dtype (either may be a zero-stride or strided view), alpha a "
    "Python number taken in that dtype (y * alpha rounded first, as the core's mul then add; "
    "a fused multiply-add is within rounding; float16/bfloat16 as PyTorch's CPU add: x + y * "
    "alpha in float32, alpha rounded to the dtype, rounded once, except where its scalar loop "
    "rounds y * alpha to the dtype first: its TensorIterator sorts the dimensions by the "
    "inputs' strides (fastest first), merges them from the fastest while both step evenly: "
    "that inner loop is vectorized where each input steps one element along it or one steps "
    "none, then its last (length mod 32) elements take the scalar loop (x86 AVX2 and AVX-512 "
    "alike), else all do; torch with one thread (above 32768 elements its threads split "
    "the loop, each part with its own tail))",
    "foreach_mul": "foreach_mul(xs, scalar) -> list[A]: [x * scalar for x in xs], new arrays; "
    "xs floating-point, scalar a Python number taken in each x's dtype",
    "foreach_add_scalar": "foreach_add_scalar(xs, scalar) -> list[A]: [x + scalar for x in xs]",
    "foreach_div_scalars": "foreach_div_scalars(xs, scalars) -> list[A]: [x / s for x, s in "
    "zip(xs, scalars)], one Python number per array",
    "foreach_sqrt": "foreach_sqrt(xs) -> list[A]: [sqrt(x) for x in xs]",
    "foreach_maximum": "foreach_maximum(xs, ys) -> list[A]: [maximum(x, y) for x, y in zip(xs, "
    "ys)] (NaN propagates)",
    "foreach_lerp": "foreach_lerp(xs, ys, weight) -> list[A]: [x + weight * (y - x) for x, y "
    "in zip(xs, ys)] (the core's lerp; torch's own formula is within rounding)",
    "foreach_addcmul": "foreach_addcmul(xs, ys, zs, value) -> list[A]: [x + y * z * value for "
    "x, y, z in zip(xs, ys, zs)] (y * z rounded first)",
    "foreach_addcdiv": "foreach_addcdiv(xs, ys, zs, values) -> list[A]: [x + y / z * v for x, "
    "y, z, v in zip(xs, ys, zs, values)] (y / z rounded first), one Python number per array. "
    "Every foreach primitive returns new arrays and takes scalars in each array's dtype",
    # API 2.7: optimizer updates written in place. A backend defines both or neither. The
    # core calls foreach_inplace only with arrays for which owns_memory said True and that
    # no Python object but its own tensors refers to (it counts references); without them
    # every update allocates a new array (foreach_<name>) and the tensor is rebound to it.
    "owns_memory": "owns_memory(a) -> bool: whether writing into a's memory could change no "
    "other array of the backend, save arrays that hold a Python reference to the object a "
    "itself (NumPy's views hold their base in .base; the core counts those references). "
    "False for a view of another array, for an array that another array views without "
    "referring to a (torch's views keep the storage), for read-only memory",
    "foreach_inplace": "foreach_inplace(name, xs, *args) -> bool: write foreach_<name>(xs, "
    "*args) (name one of add, mul, add_scalar, div_scalars, sqrt, maximum, lerp, addcmul, "
    "addcdiv) into each x's own memory, bit for bit the out-of-place primitive's values, and "
    "return True; return False, writing nothing, for a name it cannot write in place. mul's "
    "scalar may be a 0-d array of the xs' dtype (clip_grad_norm_'s factor)",
    # API 2.8: the negative log-likelihood by the backend's own kernels (nll_loss and
    # cross_entropy's class-index forms). A backend defines both or neither; without them
    # the core composes gather, sums and a scatter into zeros.
    "nll_loss": "nll_loss(x, target, weight, reduction, ignore_index) -> (A, A): with x (N, "
    "C) float, target (N,) int64 whose every element lies in [0, C) or equals ignore_index "
    "(the core checks), weight (C,) of x's dtype or None (all ones), reduction 'none', "
    "'mean' or 'sum': the losses -weight[t] * x[n, t] (0 where t is ignore_index), reduced "
    "(the mean divides by the summed weights of the kept targets: NaN when none is kept), "
    "and that total weight as a 0-d array of x's dtype (torch.ops.aten.nll_loss_forward)",
    "nll_loss_backward": "nll_loss_backward(grad, x, target, weight, reduction, "
    "ignore_index, total_weight) -> A: the gradient of nll_loss with respect to x (x's "
    "shape; zero but at each kept target), grad of the loss's shape, total_weight the one "
    "nll_loss returned (torch.ops.aten.nll_loss_backward)",
    # API 2.9: the core's range checks (indices, class targets) read back both extremes at once.
    "aminmax": "aminmax(a) -> A: the (2,) array [least, greatest] of all of a's elements (a "
    "non-empty, of any shape, layout and dtype but complex), a's dtype; both NaN where a float "
    "a holds a NaN (torch.aminmax's values, stacked). The core reads it back in one transfer; "
    "without it the core reduces with min and max and concatenates (three calls, one transfer)",
    # API 2.10: the range checks' read of both extremes as Python numbers, in one call,
    # and strides without layout's address.
    "host_aminmax": "host_aminmax(a) -> (least, greatest): aminmax(a)'s two values read back "
    "to the host as a tuple of Python numbers, as A.tolist() gives them (int, float or bool; "
    "both float NaN where a float a holds a NaN; a as for aminmax), in one transfer. Without "
    "it the core calls aminmax (or min and max) and to_host; while tw.compile traces a step "
    "it does so anyway (its replay repeats that read)",
    "strides": "strides(a) -> tuple[int, ...] | None: layout(a)'s strides alone, for a "
    "backend whose address read costs more than its strides (Tensor.stride, is_contiguous); "
    "a backend defining it defines layout too",
    # API 2.11: views cut along one axis in one call (x[i], select, unbind; split, chunk):
    # without them the core slices (and reshapes) once per piece.
    "select": "select(a, axis, index) -> A: a[..., index, ...] with index on axis (0 <= index "
    "< a.shape[axis]; the core wraps and checks it), that axis dropped: slice's element for "
    "element, and a view where slice would be one (torch.select)",
    "split": "split(a, axis, sizes) -> sequence[A]: a cut along axis into consecutive pieces "
    "of sizes (a tuple of ints >= 0 summing to a.shape[axis]), each as slice would give it "
    "(torch.split_with_sizes)",
    # API 2.12: writes into a base with many live views. The core writes an in-place result
    # into the base's own memory (write_into) where it can prove that nothing but its own
    # tensors sees that memory: the views then hold the new values already and are not read
    # again (one view op each). A backend defining it defines write_into and storage. Without
    # it the core does so only where owns_memory(a) holds and counts NumPy's way (one
    # reference to a per view); elsewhere it rebinds the base and reads each view again.
    "memory_users": "memory_users(a, views) -> int | None: views is a list of distinct arrays "
    "that this backend's view primitives (reshape, permute, expand, slice, select, split) "
    "made from a, directly or from one another, each referred to by the list and one other "
    "Python reference. Return how many references to the Python object a those views hold "
    "themselves (NumPy: one per view, its .base; torch 2.13: one for any number of views, "
    "its Python object kept alive while a C++ view refers to it), where a write into a's "
    "memory could change no array but a and views, and nothing but Python references refers "
    "to a (the core counts those: its tensors, and any other holder, which makes it refuse). "
    "Return None where anything else may see that memory: a is a view of another array, "
    "read-only, or memory another library lent (from_numpy, DLPack); another array, "
    "detached alias or autograd graph of the library uses it, or one of views, or a view "
    "not in views; an export (DLPack capsule) of it or of a view exists. Never write, never "
    "copy; cost O(len(views)), a few integer tests per view. None is always safe",
    # API 2.13: a linalg input written through .data between the call and backward. Torch's
    # node reads the tensor it saved, so the new values; a backend whose linalg_function
    # record holds its own leaf of the input defines this to read them too.
    "rebind_linalg_input": "rebind_linalg_input((saved, j), new) -> callable | None: make "
    "a linalg_function call recorded with grad read new (input j's shape and dtype) as its "
    "input j, where a write through .data replaced the tensor's array since the call; never "
    "a write into the old array (a view's base or a NumPy array may share it). For the "
    "backward about to run alone: where the record shares what it changed with other "
    "records, return a callable that puts it back (the core calls it once that backward "
    "has read the record). Without it the backend's backward reads the input as it was",
    # API 2.4: compiled graphs (tw.compile's compile_graph hook).
    "compile_graph": "compile_graph(graph) -> callable | None: a faster form of a tw.compile'd "
    "step's backend calls. graph (tensorweaver.compiler.record.GraphRecord) has fn(*inputs) -> "
    "tuple of output arrays, which calls this backend's methods in the eager step's order, "
    "inputs and outputs (value names), calls ((primitive, args, result) in order), values "
    "(shape and native dtype of each array as traced), constants, source, methods, mode "
    "(tw.compile's) and rebind(replacements) (fn with some methods swapped). Return a "
    "callable with fn's signature and results (it may assume the traced shapes and dtypes, "
    "never the Python float inputs, which change every step), or None to let the core "
    "replay fn; never write into the inputs. Without it the core replays fn",
    # API 2.5: random stream states (tw.get_rng_state, tw.random.fork_rng, checkpoint).
    # A backend defines both or neither. Without them the core cannot put a stream back:
    # where it must (fork_rng, checkpoint's preserve_rng_state) it restarts the stream from
    # a seed drawn from it and warns once; tw.get_rng_state then covers the host's only.
    "get_rng_state": "get_rng_state() -> bytes: the whole state of the backend's random "
    "stream (what seed sets and the random_* primitives and fused kernels that draw "
    "advance), without advancing it; every state of one backend object has one length",
    "set_rng_state": "set_rng_state(state: bytes) -> None: continue the stream from a state "
    "this backend object's get_rng_state returned (the core checks its length), so the "
    "draws that followed it repeat exactly; raise ValueError for bytes that are no state",
    # API 2.6: torch.special's functions without a gradient (Airy, Bessel functions of integer
    # order, orthogonal polynomials), with the same host fallback; float32 or float64 in (the
    # core computes integer input in the default float dtype), that dtype out, torch.special's
    # values at the edges. The polynomials take x and n broadcast to one shape, n in x's dtype
    # (truncated to an integer degree; 0 for a negative one, as torch's).
    **{
        name: f"{name}(a) -> A: {doc} (float)"
        for name, doc in (
            ("airy_ai", "the Airy function Ai; 0 above 103.892, NaN at ±inf"),
            ("bessel_j0", "the Bessel function of the first kind J0"),
            ("bessel_j1", "the Bessel function of the first kind J1"),
            ("bessel_y0", "the Bessel function of the second kind Y0, NaN below 0, -inf at 0"),
            ("bessel_y1", "the Bessel function of the second kind Y1, NaN below 0, -inf at 0"),
            ("modified_bessel_i0", "the modified Bessel function I0"),
            ("modified_bessel_i1", "the modified Bessel function I1"),
            ("modified_bessel_k0", "the modified Bessel function K0, NaN below 0, inf at 0"),
            ("modified_bessel_k1", "the modified Bessel function K1, NaN below 0, inf at 0"),
            ("scaled_modified_bessel_k0", "exp(a) * K0(a)"),
            ("scaled_modified_bessel_k1", "exp(a) * K1(a)"),
            ("spherical_bessel_j0", "sin(a) / a, 1 at 0"),
        )
    },
    **{
        name: f"{name}(x, n) -> A: {doc}, degree n (float)"
        for name, doc in (
            ("chebyshev_polynomial_t", "the Chebyshev polynomial of the first kind T_n(x)"),
            ("chebyshev_polynomial_u", "the Chebyshev polynomial of the second kind U_n(x)"),
            ("chebyshev_polynomial_v", "the Chebyshev polynomial of the third kind V_n(x)"),
            ("chebyshev_polynomial_w", "the Chebyshev polynomial of the fourth kind W_n(x)"),
            ("shifted_chebyshev_polynomial_t", "T_n(2x - 1)"),
            ("shifted_chebyshev_polynomial_u", "U_n(2x - 1)"),
            ("shifted_chebyshev_polynomial_v", "V_n(2x - 1)"),
            ("shifted_chebyshev_polynomial_w", "W_n(2x - 1)"),
            ("hermite_polynomial_h", "the physicists' Hermite polynomial H_n(x)"),
            ("hermite_polynomial_he", "the probabilists' Hermite polynomial He_n(x)"),
            ("laguerre_polynomial_l", "the Laguerre polynomial L_n(x)"),
            ("legendre_polynomial_p", "the Legendre polynomial P_n(x)"),
        )
    },
}


def missing_primitives(backend: object) -> list[str]:
    """The required primitive names that ``backend`` does not define as callables."""
    return sorted(n for n in REQUIRED if not callable(getattr(backend, n, None)))
