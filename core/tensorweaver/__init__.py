"""TensorWeaver: PyTorch's API on pluggable array backends."""

import math

from tensorweaver import backends, cuda, return_types  # backends first: cuda imports it
from tensorweaver import ops as _ops  # noqa: F401  (attaches Tensor's methods, below)
from tensorweaver.amp import GradScaler, autocast
from tensorweaver.autograd import (
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_anomaly_enabled,
    set_grad_enabled,
)
from tensorweaver.contract.dtypes import DType as dtype
from tensorweaver.contract.dtypes import (
    bfloat16,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from tensorweaver.contract.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from tensorweaver.contract.dtypes import complex64 as cfloat
from tensorweaver.contract.dtypes import complex128 as cdouble
from tensorweaver.contract.dtypes import float16 as half
from tensorweaver.contract.dtypes import float32 as float  # noqa: A001  (PyTorch's alias)
from tensorweaver.contract.dtypes import float64 as double
from tensorweaver.contract.dtypes import int16 as short
from tensorweaver.contract.dtypes import int32 as int  # noqa: A001  (PyTorch's alias)
from tensorweaver.contract.dtypes import int64 as long
from tensorweaver.errors import (
    BackendError,
    DeviceNotFoundError,
    OutOfMemoryError,
    PluginError,
    UnknownBackendError,
)
from tensorweaver.layout import layout, sparse_coo, strided
from tensorweaver.ops import extra_methods as _extra_methods
from tensorweaver.ops import methods as _methods  # noqa: F401
from tensorweaver.ops import out_arguments as _out_arguments
from tensorweaver.ops import special as _special
from tensorweaver.ops import spellings as _spellings
from tensorweaver.ops.complex import (
    angle,
    complex,  # noqa: A004  (PyTorch's name)
    conj,
    conj_physical,
    is_conj,
    polar,
    resolve_conj,
    resolve_neg,
    sgn,
)
from tensorweaver.ops.coordinates import argwhere, where
from tensorweaver.ops.creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from tensorweaver.ops.elementwise import (
    abs,
    add,
    addcdiv,
    addcmul,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clamp,
    cos,
    div,
    eq,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    ge,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    lerp,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    nan_to_num,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    remainder,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tan,
    tanh,
    trunc,
)
from tensorweaver.ops.index import (
    gather,
    index_add,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    nonzero_static,
    scatter,
    scatter_add,
    take_along_dim,
)
from tensorweaver.ops.integer import bitwise_left_shift, bitwise_right_shift, gcd, lcm
from tensorweaver.ops.linalg import bmm, dot, einsum, matmul, mm, outer
from tensorweaver.ops.memory_facts import is_distributed, is_inference, is_same_size
from tensorweaver.ops.methods import adjoint
from tensorweaver.ops.movement import (
    cat,
    concat,
    concatenate,
    flip,
    repeat,
    roll,
    stack,
    tril,
    triu,
)
from tensorweaver.ops.reduce import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    std,
    sum,
    var,
)
from tensorweaver.ops.special import (
    acos,
    acosh,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    copysign,
    cosh,
    deg2rad,
    digamma,
    erfc,
    erfinv,
    exp2,
    float_power,
    i0,
    ldexp,
    lgamma,
    logit,
    polygamma,
    rad2deg,
    signbit,
    sinc,
    sinh,
    xlogy,
)
from tensorweaver.ops.spellings import (
    addbmm,
    addmm,
    addmv,
    addr,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    baddbmm,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    column_stack,
    combinations,
    corrcoef,
    cov,
    diagflat,
    dist,
    dsplit,
    dstack,
    equal,
    fix,
    fliplr,
    flipud,
    fmax,
    fmin,
    ger,
    get_device,
    greater,
    greater_equal,
    heaviside,
    hsplit,
    hstack,
    inner,
    is_neg,
    is_nonzero,
    is_signed,
    isneginf,
    isposinf,
    isreal,
    less,
    less_equal,
    log_softmax,
    moveaxis,
    mv,
    normal,
    not_equal,
    positive,
    ravel,
    renorm,
    rot90,
    row_stack,
    rsub,
    select,
    softmax,
    split_with_sizes,
    swapaxes,
    swapdims,
    take,
    tensor_split,
    vdot,
    vsplit,
    vstack,
)
from tensorweaver.ops.structure import (
    cartesian_prod,
    cdist,
    cross,
    diag,
    diag_embed,
    diagonal,
    diff,
    kron,
    meshgrid,
    repeat_interleave,
    tensordot,
    tile,
    trace,
    tril_indices,
    triu_indices,
)
from tensorweaver.ops.untyped_storage import TypedStorage, UntypedStorage
from tensorweaver.ops.views import (
    as_strided,
    broadcast_to,
    chunk,
    flatten,
    imag,
    movedim,
    narrow,
    permute,
    real,
    reshape,
    split,
    squeeze,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
    view_as_complex,
    view_as_real,
)
from tensorweaver.promotion import get_default_dtype, promote_types, set_default_dtype
from tensorweaver.promotion import result_type_of_two as result_type
from tensorweaver.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from tensorweaver.registry import devices, plugins
from tensorweaver.selection import (
    Device,
    device,
    get_backend,
    get_default_device,
    set_backend,
    set_default_device,
    use_cpu,
    use_gpu,
)
from tensorweaver.tensor import Size, Tensor
from tensorweaver.tensor_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from tensorweaver.version import __version__

clip = clamp
pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None
expand = _methods.Tensor.expand
true_divide = divide = div
multiply = mul
subtract = sub
negative = neg
absolute = abs
is_tensor = lambda obj: isinstance(obj, Tensor)  # noqa: E731


def is_storage(obj: object) -> bool:
    """PyTorch's ``is_storage``: whether ``obj`` is a storage object (an ``UntypedStorage``,
    as ``Tensor.untyped_storage()`` gives, or a ``TypedStorage``, ``Tensor.storage()``'s): a
    tensor, an array or a number is not."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def typename(obj: object) -> str:
    """PyTorch's name of ``obj``'s type: ``x.type()`` for a tensor (``'torch.FloatTensor'``),
    else the dotted module and qualified name (a builtin's without a module: ``'int'``); a
    class or function names itself."""
    if isinstance(obj, Tensor):
        return obj.type()
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    module = getattr(obj, "__module__", None) or type(obj).__module__
    return named.__qualname__ if module == "builtins" else f"{module}.{named.__qualname__}"


def is_floating_point(input: Tensor) -> bool:
    return input.dtype.is_floating_point


def is_complex(input: Tensor) -> bool:
    return input.dtype.is_complex


def numel(input: Tensor) -> int:
    return input.numel()


def clone(input: Tensor, *, memory_format: object = None) -> Tensor:
    return input.clone(memory_format=memory_format)


def detach(input: Tensor) -> Tensor:
    return input.detach()


_extra_methods.attach(Tensor)

# PyTorch's out= for the functions written without one (the lazy ones get it on loading).
globals().update(
    {
        _n: _out_arguments.given_out(_n, globals()[_n])
        for _n in _out_arguments.OUT
        if _n in globals()
    }
)

# torch.relu_(x), torch.exp_(x), ...: the in-place methods as functions.
globals().update({_n: _spellings.inplace_function(_n) for _n in _spellings.FUNCTIONS_INPLACE})
globals().update({_n: _spellings.inplace_function(_n) for _n in _special.FUNCTIONS_INPLACE})

# Heavier parts load on first use, so that `import tensorweaver` stays fast.
_LAZY = {
    "nn": "tensorweaver.nn",
    "optim": "tensorweaver.optim",
    "utils": "tensorweaver.utils",
    "autograd": "tensorweaver.autograd",
    "models": "tensorweaver.models",
    "training": "tensorweaver.training",
    "amp": "tensorweaver.amp",
    "cpu": "tensorweaver.cpu",
    "testing": "tensorweaver.testing",
    "serialization": "tensorweaver.serialization",
    "distributed": "tensorweaver.distributed",
    "version": "tensorweaver.version",
    "special": "tensorweaver.special",
    "distributions": "tensorweaver.distributions",
    "array_api": "tensorweaver.array_api",
    "accelerator": "tensorweaver.accelerator",
    "linalg": "tensorweaver.linalg",
    "fft": "tensorweaver.fft",
    "signal": "tensorweaver.signal",
    "func": "tensorweaver.func",
    "jit": "tensorweaver.jit",
    "profiler": "tensorweaver.profiler",
    "mps": "tensorweaver.mps",
    "xpu": "tensorweaver.xpu",
    "multiprocessing": "tensorweaver.multiprocessing",
    "compiler": "tensorweaver.compiler",
    "masked": "tensorweaver.masked",
}

_from = _methods.names_in


# Functions whose module loads on first use: name -> (module, attribute).
_LAZY_ATTRS = {
    "asarray": ("tensorweaver.array_api.creation", "asarray"),
    "save": ("tensorweaver.serialization", "save"),
    "load": ("tensorweaver.serialization", "load"),
    "SafetensorsError": ("tensorweaver.serialization", "SafetensorsError"),
    "fit": ("tensorweaver.training", "fit"),
    "predict": ("tensorweaver.training", "predict"),
    "evaluate": ("tensorweaver.training", "evaluate"),
    "History": ("tensorweaver.training", "History"),
    "check": ("tensorweaver.check", "check"),
    "compile": ("tensorweaver.compiler", "compile"),
    "vmap": ("tensorweaver.func", "vmap"),
    "to_torch_module": ("tensorweaver.interop.torch_module", "to_torch_module"),
    "from_torch_module": ("tensorweaver.interop.torch_module", "from_torch_module"),
    "inverse": ("tensorweaver.linalg.legacy", "inverse"),
    "lu_solve": ("tensorweaver.linalg.legacy", "lu_solve_legacy"),
    **_from("ops.index_write", "index_copy index_fill index_put masked_scatter"),
    **_from(
        "ops.numeric",
        "allclose aminmax clamp_max clamp_min cummax cummin cumprod fmod frac hypot "
        "index_reduce isclose logaddexp logaddexp2 logcumsumexp nanmean nansum scatter_reduce "
        "std_mean var_mean",
    ),
    **_from(
        "ops.order_stats",
        "bincount bucketize histc kthvalue median mode nanmedian nanquantile quantile "
        "searchsorted unique unique_consecutive",
    ),
    **_from("ops.sampling", "bernoulli multinomial"),
    **_from(
        "ops.scatter_views", "as_strided_scatter diagonal_scatter select_scatter slice_scatter"
    ),
    **_from("ops.sort", "argsort msort sort topk"),
    **_from(
        "ops.torch_level",
        "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d layer_norm "
        "group_norm instance_norm batch_norm rms_norm embedding dropout dropout_ alpha_dropout "
        "alpha_dropout_ feature_alpha_dropout feature_alpha_dropout_ threshold threshold_ celu "
        "celu_ selu selu_ rrelu rrelu_ prelu hardshrink pixel_shuffle pixel_unshuffle "
        "channel_shuffle cosine_similarity pairwise_distance binary_cross_entropy_with_logits "
        "kl_div ctc_loss cosine_embedding_loss hinge_embedding_loss margin_ranking_loss "
        "poisson_nll_loss triplet_margin_loss bilinear max_pool1d max_pool1d_with_indices "
        "max_pool2d max_pool3d avg_pool1d adaptive_avg_pool1d adaptive_max_pool1d "
        "constant_pad_nd convolution grid_sampler affine_grid_generator feature_dropout "
        "feature_dropout_",
    ),
    **_from("ops.creation_spellings", "empty_strided fill frombuffer logspace range scalar_tensor"),
    **_from("ops.casting", "can_cast"),
    **_from("default_tensor_type", "set_default_tensor_type"),
    **_from("ops.inplace_shape", "resize_as_"),
    **_from("ops.membership", "isin"),
    **_from(
        "ops.foreach_lists",
        "_foreach_abs _foreach_abs_ _foreach_add _foreach_add_ _foreach_addcdiv "
        "_foreach_addcdiv_ _foreach_addcmul _foreach_addcmul_ _foreach_copy_ _foreach_div "
        "_foreach_div_ _foreach_exp _foreach_exp_ _foreach_lerp _foreach_lerp_ _foreach_mul "
        "_foreach_mul_ _foreach_neg _foreach_neg_ _foreach_norm _foreach_sqrt _foreach_sqrt_ "
        "_foreach_sub _foreach_sub_ _foreach_zero_",
    ),
    **_from("ops.flat_index", "put unravel_index"),
    **_from("ops.histograms", "histogram histogramdd"),
    **_from("ops.integration", "cumulative_trapezoid trapezoid trapz"),
    **_from("ops.finite_differences", "gradient"),
    **_from("ops.unsafe_splits", "unsafe_chunk unsafe_split unsafe_split_with_sizes"),
    **_from(
        "ops.view_copies",
        "alias_copy as_strided_copy diagonal_copy expand_copy narrow_copy permute_copy "
        "select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy "
        "transpose_copy unbind_copy unfold_copy unsqueeze_copy view_as_complex_copy "
        "view_as_real_copy view_copy",
    ),
    **_from(
        "memory_formats",
        "channels_last channels_last_3d contiguous_format memory_format preserve_format",
    ),
    **_from("ops.float_parts", "frexp nextafter"),
    **_from("ops.multivariate_gamma", "mvlgamma"),
    **_from("ops.incomplete_gamma", "igamma igammac"),
    **_from("ops.vandermonde", "vander"),
    **_from("ops.chained_products", "chain_matmul"),
    **_from("ops.condensed_distances", "pdist"),
    **_from("ops.count_draws", "binomial poisson"),
    **_from("ops.short_time_fourier", "istft stft"),
    **_from(
        "ops.signal_windows",
        "bartlett_window blackman_window hamming_window hann_window kaiser_window",
    ),
    **_from("dtype_info", "finfo iinfo"),
    **_from("printing", "get_printoptions set_printoptions"),
    **_from(
        "switches",
        "are_deterministic_algorithms_enabled get_float32_matmul_precision "
        "is_deterministic_algorithms_warn_only_enabled set_float32_matmul_precision "
        "use_deterministic_algorithms",
    ),
    **_from(
        "threads",
        "get_num_threads set_num_threads get_num_interop_threads set_num_interop_threads",
    ),
    **_from(
        "amp",
        "clear_autocast_cache get_autocast_dtype is_autocast_cache_enabled is_autocast_enabled "
        "set_autocast_cache_enabled set_autocast_dtype set_autocast_enabled "
        "is_autocast_cpu_enabled set_autocast_cpu_enabled get_autocast_cpu_dtype "
        "set_autocast_cpu_dtype get_autocast_gpu_dtype set_autocast_gpu_dtype",
    ),
    **_from("linalg.determinants", "logdet slogdet"),
    **_from(
        "linalg.legacy",
        "cholesky det lu lu_unpack matrix_exp orgqr pinverse qr svd triangular_solve",
    ),
    **_from("linalg.products", "matrix_power"),
    **_from("linalg.solvers", "cholesky_inverse cholesky_solve"),
    **_from("linalg.householder", "geqrf ormqr"),
    **_from("linalg.lowrank", "pca_lowrank svd_lowrank"),
}


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    if name in _LAZY_ATTRS:
        module, attr = _LAZY_ATTRS[name]
        value = getattr(importlib.import_module(module), attr)
        if name in _out_arguments.OUT:
            value = _out_arguments.given_out(name, value)
        globals()[name] = value  # once only
        return value
    raise AttributeError(f"module 'tensorweaver' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_LAZY_ATTRS})
