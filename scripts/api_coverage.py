"""How much of the PyTorch API a user touches exists in tensorweaver, by name.

``python scripts/api_coverage.py`` reads the name list ``scripts/pytorch-api-names.txt`` and
reports, per namespace and in total, how many resolve on tensorweaver (``torch`` read as
``tensorweaver``, ``torch.Tensor`` as ``tensorweaver.Tensor``); ``--missing`` lists the rest.
``--generate`` rewrites the list from the installed torch: the public names of ``torch.nn``,
``torch.nn.functional``, ``torch.nn.init``, ``torch.optim`` (with ``lr_scheduler``) and
``torch.utils.data``; of ``torch`` and ``torch.Tensor`` the ones that are ops (a function of
``torch`` that is also a Tensor method) or everyday names (dtypes, factories, grad modes, random
state, devices, I/O) — minus internals (quantization, sparse layouts, cuDNN/MKL-DNN kernels, JIT,
``*_copy`` view variants). ``linalg``, ``fft``, ``special`` and ``distributions`` are another
issue's count and are left out. A name counts as present when the attribute exists; whether it
behaves as PyTorch's is the tests' job.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections import Counter
from pathlib import Path

NAMES = Path(__file__).with_name("pytorch-api-names.txt")

#: Internals a user of the Python API does not call.
INTERNAL = re.compile(
    r"quantiz|qscheme|q_|int_repr|sparse|mkldnn|cudnn|miopen|fbgemm|nested|_copy$|^is_same_size$"
    r"|coalesce|indices|values$|crow|ccol|^to_padded|storage|share_memory|_coalesced|^dsmm|^hsmm"
    r"|^hspmm|^smm$|^sspaddmm|^saddmm|ipu|xla|hpu|mtia|vulkan|^conj_physical|^resolve_|_nnz"
    r"|^is_inference$|^segment_reduce|^align_|^refine_names|^rename|^names$|^has_names"
    r"|^unflatten_dense|^sym_|^map2?_|^apply_$|^data_ptr$|^untyped|^record_stream|^pin_memory"
    r"|^is_pinned|^module_load$|^dim_order$|^smm$|^Tensor$|Type$|dispatch|torch_function"
    r"|^assert_|grouped_mm|scaled_mm|^native_|conv_tbc|datapipe|DataPipe|^DataChunk$|_validation"
    r"|determinism|^non_deterministic$|reinforce|volatile|output_nr|is_maia|is_set_to|^name$"
    r"|grad_dtype|hash_tensor|const_data_ptr|dense_dim|^Container$|Options$|^lstsq$|^eig$"
    r"|^symeig$|^solve$|^slice_inverse$|^nonzero_static$|^unsafe_|^NLLLoss2d$"
)

#: Everyday ``torch`` names that are not Tensor methods.
TORCH_EVERYDAY = """
Tensor Size Generator device dtype finfo iinfo
bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 half float double short int
long cfloat cdouble complex64 complex128
tensor as_tensor asarray from_numpy from_dlpack zeros zeros_like ones ones_like empty empty_like
full full_like arange linspace logspace eye rand rand_like randn randn_like randint randint_like
randperm normal bernoulli multinomial poisson manual_seed seed initial_seed get_rng_state
set_rng_state default_generator no_grad enable_grad set_grad_enabled is_grad_enabled
inference_mode is_inference_mode_enabled get_default_dtype set_default_dtype get_default_device
set_default_device set_printoptions get_num_threads set_num_threads is_tensor is_floating_point
is_complex is_nonzero numel save load cat concat concatenate stack hstack vstack dstack
column_stack row_stack split chunk tensor_split meshgrid einsum broadcast_tensors broadcast_shapes
broadcast_to cdist cartesian_prod combinations tril_indices triu_indices block_diag atleast_1d
atleast_2d atleast_3d searchsorted bucketize clamp where result_type promote_types can_cast
autocast compile cuda backends autograd nn optim utils amp accelerator testing serialization
inf nan pi e newaxis use_deterministic_algorithms are_deterministic_algorithms_enabled
set_float32_matmul_precision get_float32_matmul_precision from_file frombuffer
""".split()


def _public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_") and not INTERNAL.search(n)}


def generate() -> list[str]:
    """The name list from the installed torch (see the module docstring for the rule)."""
    import torch
    import torch.nn.functional as F
    import torch.utils.data as data

    methods = {n for n in _public(torch.Tensor) if callable(getattr(torch.Tensor, n, None))}
    attributes = {n for n in _public(torch.Tensor) if n not in methods}
    ops = {n for n in _public(torch) if n in methods and callable(getattr(torch, n))}
    names = [f"torch.{n}" for n in sorted(ops | {n for n in TORCH_EVERYDAY if hasattr(torch, n)})]
    names += [f"torch.Tensor.{n}" for n in sorted(methods | attributes)]
    nn_classes = set(torch.nn.modules.__all__) | {"Module", "Parameter", "Buffer"}
    names += [f"torch.nn.{n}" for n in sorted(nn_classes) if hasattr(torch.nn, n)]
    names += [f"torch.nn.functional.{n}" for n in sorted(_public(F)) if _is_function(F, n)]
    names += [f"torch.nn.init.{n}" for n in sorted(_public(torch.nn.init)) if n.endswith("_")]
    names += [f"torch.nn.utils.{n}" for n in NN_UTILS]
    names += [f"torch.optim.{n}" for n in sorted(_classes(torch.optim))]
    names += [f"torch.optim.lr_scheduler.{n}" for n in sorted(_classes(torch.optim.lr_scheduler))]
    names += [f"torch.utils.data.{n}" for n in sorted(_public(data)) if n in data.__all__]
    return names


NN_UTILS = """clip_grad_norm_ clip_grad_value_ parameters_to_vector vector_to_parameters
rnn.pad_sequence rnn.pack_padded_sequence rnn.pad_packed_sequence rnn.pack_sequence
rnn.unpack_sequence rnn.unpad_sequence rnn.PackedSequence""".split()


def _is_function(module: object, name: str) -> bool:
    value = getattr(module, name)
    return callable(value) and getattr(value, "__module__", "").startswith("torch")


def _classes(module: object) -> set[str]:
    return {
        n
        for n in _public(module)
        if isinstance(getattr(module, n), type)
        and getattr(module, n).__module__.startswith("torch")
    }


def resolves(name: str) -> bool:
    """Whether the PyTorch name ``name`` exists on tensorweaver."""
    parts = name.split(".")
    obj: object = importlib.import_module("tensorweaver")
    for i, part in enumerate(parts[1:], start=1):
        if not hasattr(obj, part):
            try:  # a submodule not imported by its package's __init__
                obj = importlib.import_module(".".join(["tensorweaver", *parts[1 : i + 1]]))
                continue
            except ImportError:
                return False
        obj = getattr(obj, part)
    return True


def namespace(name: str) -> str:
    head = name.rsplit(".", 1)[0]
    return head if head != "torch.nn.utils.rnn" else "torch.nn.utils"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generate", action="store_true", help="rewrite the list from torch")
    parser.add_argument("--missing", action="store_true", help="list the names tw lacks")
    args = parser.parse_args(argv)
    if args.generate:
        NAMES.write_text("\n".join(generate()) + "\n")
    names = NAMES.read_text().split()
    present = {n: resolves(n) for n in names}
    total, found = Counter(), Counter()
    for n, ok in present.items():
        total[namespace(n)] += 1
        found[namespace(n)] += ok
    for ns in sorted(total):
        print(f"{ns:28s} {found[ns]:4d} / {total[ns]:4d}  {100 * found[ns] / total[ns]:5.1f} %")
    n_found = sum(present.values())
    print(f"{'total':28s} {n_found:4d} / {len(names):4d}  {100 * n_found / len(names):5.1f} %")
    if args.missing:
        print("\n".join(n for n, ok in present.items() if not ok))


if __name__ == "__main__":
    main()
