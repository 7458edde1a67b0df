"""Running a plain PyTorch program twice: as written on torch, and import-rewritten on tensorweaver.

A program in ``programs/`` is an ordinary PyTorch script with a ``main(argv) -> list[float]``
(its training losses) and two options every real training script has in some form:
``--save-init PATH`` (``torch.save(model.state_dict(), PATH)`` right after building the model; a
dict of state dicts for several models) and ``--init PATH`` (``model.load_state_dict(
torch.load(PATH))``). :func:`run_torch` runs it on torch and keeps its initial weights;
:func:`run_tw` converts them into a tensorweaver file, runs the import-rewritten source on a
tensorweaver device with ``--init`` and returns its losses. Nothing in a program is edited but
its imports (:mod:`import_rewrite`).

Randomness *during* training (dropout masks, ``randn_like`` in a VAE, the sampler's order) comes
from two different generators, so :func:`shared_randomness` makes both libraries draw the same
numbers from one NumPy generator for the duration of a run. It replaces library attributes, never
the program's code.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from import_rewrite import rewrite_imports
from tw_backends import FAST, entered

PROGRAMS = Path(__file__).parent / "programs"


def load_program(name: str, framework: str) -> types.ModuleType:
    """The program ``name`` as a fresh module, on ``"torch"`` or (imports rewritten) ``"tw"``.

    Run it inside :func:`registered` when it saves objects of its own classes (pickling and
    the allow-list find a class through its module)."""
    path = PROGRAMS / f"{name}.py"
    source = path.read_text()
    if framework == "tw":
        source = rewrite_imports(source)
    module = types.ModuleType(f"ports_{name}_{framework}")
    module.__file__ = str(path)
    with registered(module):  # a dataclass looks its module up while the class is made
        exec(compile(source, str(path), "exec"), module.__dict__)
    return module


@contextmanager
def registered(module: types.ModuleType) -> Iterator[types.ModuleType]:
    """``module`` in ``sys.modules`` for the duration, as an imported script would be."""
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        sys.modules.pop(module.__name__, None)


def _torch_to_tw(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tw.from_numpy(value.detach().cpu().numpy().copy())
    if isinstance(value, dict):
        return {k: _torch_to_tw(v) for k, v in value.items()}
    raise TypeError(f"initial weights hold a {type(value).__name__}; expected tensors and dicts")


def run_torch(
    name: str, argv: Sequence[str], tmp_path: Path, *, seed: int | None = 0
) -> tuple[list[float], Path]:
    """The program's losses on torch, and its initial weights as a tensorweaver file."""
    torch_init = tmp_path / f"{name}-init.pt"
    module = load_program(name, "torch")
    with registered(module), shared_randomness(torch, seed):
        losses = module.main([*argv, "--save-init", str(torch_init)])
    tw_init = tmp_path / f"{name}-init.tw"
    weights = torch.load(torch_init, weights_only=True)
    with tw.device("numpy"):
        tw.save(_torch_to_tw(weights), tw_init)
    return losses, tw_init


def run_tw(
    name: str, argv: Sequence[str], spec: str, init: Path, *, seed: int | None = 0
) -> list[float]:
    """The import-rewritten program's losses on the tensorweaver device ``spec``."""
    module = load_program(name, "tw")
    with registered(module), entered(spec), shared_randomness(tw, seed):
        return module.main([*argv, "--init", str(init)])


@dataclass(frozen=True)
class Port:
    """One case of a ports test: a program of ``programs/`` with its arguments, how close its
    numbers must come to torch's, and why it is expected to fail (a strict xfail), if it is."""

    program: str
    argv: Sequence[str] = ()
    rtol: float = 1e-4
    atol: float = 1e-6
    xfail: str | None = None
    #: Also on cuPyNumeric (about 0.4 ms an op there: only for the smallest programs).
    cunumeric: bool = False


def port_params(cases: dict[str, Port]) -> list:
    """pytest parameters ``(case, spec)``: every case on NumPy and torch:cpu, and the small
    ones on cuPyNumeric too."""
    out = []
    for case, port in cases.items():
        marks = [pytest.mark.xfail(strict=True, reason=port.xfail)] if port.xfail else []
        for spec in [*FAST, "cunumeric"] if port.cunumeric else FAST:
            extra = [pytest.mark.cunumeric] if spec == "cunumeric" else []
            out.append(pytest.param(case, spec, marks=marks + extra, id=f"{case}-{spec}"))
    return out


def assert_losses_match(
    got: Sequence[float], expected: Sequence[float], *, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Equal length, finite, and each loss within tolerance of torch's."""
    assert len(got) == len(expected), f"{len(got)} losses, torch had {len(expected)}"
    got_a, expected_a = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert np.isfinite(got_a).all(), f"non-finite losses: {got}"
    np.testing.assert_allclose(got_a, expected_a, rtol=rtol, atol=atol)


# -- the same random numbers on both sides ---------------------------------------------------


def _size(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


@contextmanager
def shared_randomness(lib: Any, seed: int | None) -> Iterator[None]:
    """While active, ``lib`` (torch or tensorweaver) draws its random numbers from one NumPy
    generator seeded with ``seed``: factories, dropout, the random sampler's order, and
    ``Normal.rsample``'s noise.

    ``seed=None`` leaves the library's own generators in place.
    """
    if seed is None:
        yield
        return
    # The library's own generator too: what is not drawn from ``rng`` (a layer's initial
    # uniform_ on torch) otherwise depended on the tests run before in the process, and one
    # port's float32 loss near zero met its tolerance or not by the order of the tests.
    lib.manual_seed(seed)
    rng = np.random.default_rng(seed)
    F = lib.nn.functional

    def made(values: np.ndarray, dtype: Any, device: Any, requires_grad: bool = False) -> Any:
        dtype = lib.get_default_dtype() if dtype is None else dtype
        out = lib.tensor(values, dtype=dtype, device=device)
        return out.requires_grad_() if requires_grad else out

    def factory(draw: Any) -> Any:
        def make(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                 **_: Any) -> Any:  # fmt: skip
            return made(draw(_size(size)), dtype, device, requires_grad)

        return make

    def like(draw: Any) -> Any:
        def make(t: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                 **_: Any) -> Any:  # fmt: skip
            dtype = t.dtype if dtype is None else dtype
            return made(draw(tuple(t.shape)), dtype, t.device if device is None else device,
                        requires_grad)  # fmt: skip

        return make

    def randperm(n: int, *, dtype: Any = None, device: Any = None, **_: Any) -> Any:
        return lib.tensor(rng.permutation(n), dtype=dtype or lib.int64, device=device)

    def randint(*args: Any, size: Any = None, dtype: Any = None, device: Any = None,
                **bounds: Any) -> Any:  # fmt: skip
        # torch's two forms, each argument by position or by keyword: randint(high, size)
        # and randint(low=0, high, size); the keywords the draw ignores (generator, ...)
        # stay in bounds
        if size is None:
            *args, size = args
        low, high = bounds.get("low", 0), bounds.get("high")
        if len(args) == 2:
            low, high = args
        elif len(args) == 1 and high is None:
            high = args[0]
        elif len(args) == 1:
            low = args[0]
        drawn = rng.integers(low, high, _size((size,)))
        return lib.tensor(drawn, dtype=dtype or lib.int64, device=device)

    def multinomial(input: Any, num_samples: int, replacement: bool = False, **_: Any) -> Any:
        weights = np.asarray(input.detach().cpu().numpy(), dtype=np.float64)
        rows = weights.reshape(-1, weights.shape[-1])
        drawn = np.stack(
            [rng.choice(r.size, num_samples, replace=replacement, p=r / r.sum()) for r in rows]
        ).reshape(*weights.shape[:-1], num_samples)
        return lib.tensor(drawn, dtype=lib.int64, device=input.device)

    def masked(input: Any, p: float, training: bool, inplace: bool, mask_shape: tuple) -> Any:
        if not training or p == 0.0:
            return input
        keep = lib.tensor(rng.random(mask_shape) >= p, dtype=input.dtype, device=input.device)
        scale = keep * (1.0 / (1.0 - p)) if p < 1.0 else keep
        return input.mul_(scale) if inplace else input * scale

    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
        return masked(input, p, training, inplace, tuple(input.shape))

    def channel_dropout(spatial: int) -> Any:
        def drop(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
            shape = tuple(input.shape)
            keep = shape[: len(shape) - spatial] + (1,) * spatial
            return masked(input, p, training, inplace, keep)

        return drop

    def standard_normal(shape: Any, dtype: Any, device: Any) -> Any:
        return made(rng.standard_normal(_size((shape,))), dtype, device)

    def sampler_order(self: Any) -> Iterator[int]:
        return iter(rng.permutation(len(self.data_source)).tolist())

    def sampler_array(self: Any) -> np.ndarray:
        return rng.permutation(len(self.data_source))

    replacements = [
        (lib, "randn", factory(rng.standard_normal)),
        (lib, "rand", factory(rng.random)),
        (lib, "randn_like", like(rng.standard_normal)),
        (lib, "rand_like", like(rng.random)),
        (lib, "randperm", randperm),
        (lib, "randint", randint),
        (lib, "multinomial", multinomial),
        (lib.Tensor, "multinomial", multinomial),
        (F, "dropout", dropout),
        (F, "dropout1d", channel_dropout(1)),
        (F, "dropout2d", channel_dropout(2)),
        (F, "dropout3d", channel_dropout(3)),
        (lib.utils.data.RandomSampler, "__iter__", sampler_order),
    ]
    if hasattr(lib.utils.data.RandomSampler, "order"):
        # tensorweaver's loader reads a RandomSampler's whole epoch order at once
        replacements.append((lib.utils.data.RandomSampler, "order", sampler_array))
    # Normal.rsample's noise: torch draws it through its module's _standard_normal (Tensor
    # .normal_), tensorweaver through the randn its module imported
    normal = lib.distributions.normal
    if hasattr(normal, "_standard_normal"):
        replacements.append((normal, "_standard_normal", standard_normal))
    else:
        replacements.append((normal, "randn", factory(rng.standard_normal)))
    with ExitStack() as stack:
        patcher = stack.enter_context(pytest.MonkeyPatch.context())
        for owner, name, value in replacements:
            patcher.setattr(owner, name, value)
        yield
