"""tw.compile against eager TensorWeaver, NumPy by hand and PyTorch (eager and compiled).

Run: python benchmarks/compiled_step.py [--steps mlp,cnn,tiny] [--batch 256] [--repeat 11]
     [--threads 1]

  mlp   784-512-512-10 MLP, float32, cross-entropy, plain SGD (benchmarks/mlp_step.py's step)
  cnn   benchmarks/torch_models.py's CNN (two 3x3 convolutions), 28x28, batch 64, Adam
        (benchmarks/numpy_cnn.py's step)
  tiny  y = ((a * b) + a).sum(); y.backward() on 16 float32s (pure per-op overhead)

Candidates per step, on the NumPy backend: ``numpy`` (written by hand), ``tw-eager``,
``tw-replay`` (the whole step through ``tw.compile(backend="tensorweaver")``: the core's
replay alone), ``tw-compiled`` (``tw.compile``: the backend's hook also writes into arrays
the step no longer needs), ``tw-compiled-module`` (MLP only: the model compiled, the rest
eager); on torch:cpu: ``torch`` (PyTorch eager), ``torch-compile``
(PyTorch's own: the model through ``torch.compile``, forward and backward, and the
optimizer's step compiled), ``tw-torch-replay`` (``tw.compile(backend="tensorweaver")``:
the core's replay, one call per primitive) and ``tw-torch-compiled`` (``tw.compile``: the
backend hands the step to ``torch.compile``). Every candidate starts from the same weights;
after the warm-up steps (which include every compilation, excluded from the timing) the
compiled steps must agree with the eager ones (bit for bit on NumPy, within float32
rounding on torch). Goals of issue 16: compiled NumPy steps <= 1.0x NumPy by hand,
compiled tiny step <= 2x NumPy's own ops; compiled torch:cpu <= 0.9x PyTorch eager. The tiny
candidates get the same warm-up calls as the trainers (the traces, and torch.compile's
compilation and trials, are not timed), and the compiled ones must replay.

Measured 2026-12-03 on the shared 2-core EPYC (load 4-6 from other jobs; two full runs,
``--threads 1``; ratios within one run): tw-compiled / numpy by hand
  tiny  2.10x, 2.00x (5.02x, 5.06x before the generated guard, the x*1 and same-shape
        reshape simplification and the hook's direct NumPy calls; hand 3.4-5.1 us,
        compiled 7.2-8.4 us, of which ~1.2 us makes the three result Tensors and ~0.8 us
        is the guard)
  MLP   1.03x, 1.03x (1.03x, 1.05x before): the compute alone is 1.03x; the same hand
        step making new parameter arrays (as the functional IR must) is 1.034x the
        in-place one
  CNN   1.03x, 1.05x (1.16x, 1.02x before; runs vary by 10% here): the fused max-pool
        backward (first maximum per window, NaN and inf care) costs ~0.15 ms more than
        the hand one's, the first convolution's weight gradient ~0.1 ms more

Measured 2026-12-04 (load 3-6 from other jobs; ``--steps mlp``): the guard checks modules
and optimizers in line (compiler/state_checks.py): 6-16 us a call against 30-80 us before
(same runs, MLP trainer, SGD or Adam); the replay's own Python (guard, reads, write-backs)
is ~16-21 us of a ~10.5 ms step. MLP tw-compiled / numpy 1.03x, 1.07x, 1.05x, 1.07x in four
runs (1.07x before, same load); tw-torch-compiled / torch 0.98x, 0.97x, 0.91x, 1.06x
(0.92x before). What is left is the compute: the compiled function alone is 1.02-1.03x the
hand step (its cross-entropy +26 us, ReLU gradients +10 us, the SGD update into new arrays
+35 us alone, ~+130 us within the step: the hand step scales its gradients in place,
where ours are kept as ``.grad`` and the update needs a temporary);
writing the update into the parameters instead (donated inputs) measured 1.05x/1.05x
against 1.05x/1.04x, so it is not done. On torch the compiled function alone is 0.935x torch
eager, whose step is ~85-90% matrix products, the same extern kernels under inductor.

Measured 2026-12-05, session 18 (load 2-4 for the first run, 8-12 from other agents for
the rest; ``--repeat 9``; ratios within one run). The tiny step, session 17's compiler
against this session's, run one after the other twice (``--steps tiny``, load ~9):
tw-compiled / numpy 4.69x, 4.94x before, 2.47x, 2.45x after (12.0-13.5 us to 6.6-6.7 us,
hand 2.6-2.7 us); tw-torch-compiled / torch 0.47x, 0.46x before, 0.35x, 0.34x after. Of
the ~11.4 us a call before (perf_counter_ns and process-time instrumentation of each
part): the compiled calls 5.5 us (hand 2.5), the guard 1.1, the result's autograd face
(``released``: three nodes built in a loop) 1.6 plus 0.3 for its Tensor, the two
``.grad`` write-backs (``Tensor._take``) 0.8, the rest ~1. What changed: a constant
``x * 1`` feeding a foreach update is kept as ``x`` (foreach primitives make new arrays),
the NumPy hook accumulates gradients (``foreach_add`` with alpha 1) as one in-line add per
pair and calls ``np.add.reduce`` for ``sum`` without the method's frame (compute 5.5 to
2.5 us, the hand step's own), the result's nodes are built by a function generated per
graph shape (1.6 to 0.5 us), and the guard tests "no gradient hook" as two tests of the
registries when none is registered (1.1 to 0.7 us). What is left, ~4 us over the hand
step: the guard 0.7, the write-backs 0.8 (0.5 with a ``Tensor._pass_on`` that returns at
once for a tensor that is neither an alias nor a view), the result 0.8 (0.3 of it
``Tensor.__init__``), reading the inputs, the error-state switch and the calls 1.
MLP (``--steps mlp``, before and after one after the other, load ~9): tw-compiled / numpy
1.07x before, 1.09x after; tw-torch-compiled / torch 0.86x, 0.87x (unchanged: the MLP step
accumulates no gradient; 1.07x and 1.05x in a run at load 2-4 before the changes, so the
torch ratio moves with the load by more than any change here).

Measured 2026-12-05, session 19 (load 6-9 from other agents; ``--repeat 9``; one
interleaved run with torch eager, the graph forced to torch.compile's form in both): the
torch hook writing a step's in-place updates into the parameters' and optimizer state's
arrays (``GraphRecord.donated``) against new arrays: MLP tw-torch-compiled / torch 0.927x
before, 0.893x after; CNN (Adam) 0.808x, 0.804x.

Measured 2026-12-07, session 34 (load 9-13 from other agents; ``--steps tiny``, CPU time):
the NumPy hook calls the ufunc itself for a binary elementwise call whose operands have at
most one axis (the backend's layout tests cannot apply: one Python frame less a call, two
in the tiny step). tw-compiled / numpy 2.31x, 2.28x before, 2.25x, 2.09x after; in one
process, the same step compiled with and without it, thread CPU time, interleaved (three
runs of 15 rounds): after / before 0.90x, 0.79x, 0.92x (ranges 0.55-1.69: the load).
Of the tiny replay's ~11-14 us (CPU time, hand 5-7 us at that load), each part timed
alone: the compiled calls ~5.7 us (the hand step's own work), the guard ~1.2, the result
Tensor ~0.5 and its three nodes ~0.8, each ``.grad`` write-back ~0.25. MLP, one run at
that load: tw-compiled / numpy 1.14x, tw-torch-compiled / torch 0.92x (the compute, as
measured before).

Measured 2026-12-07, session 36 (load 3-12 from other agents; ``--threads 1``, three runs;
ratios within each run): tw-compiled / numpy MLP 0.98x, 1.10x; tiny 2.31x, 2.02x;
tw-torch-compiled / torch MLP 0.89x, 1.01x. The tiny replay's parts timed alone in one
process (CPU time): guard 1.1-1.4 us, the graph's calls 6.0-6.2 us (the hand step's work and
the error-state switch), result Tensor 0.5 and its nodes 0.5, each ``.grad`` write-back
0.23; no part left costs more than ~1.3 us.
"""

from __future__ import annotations

from typing import Any, Callable

import harness
import mlp_step
import numpy as np
import numpy_cnn
import tensorweaver as tw
import tensorweaver.nn.functional as TF
import torch
import torch_models
from mlp_step import SIZES, Trainer

TINY = 16
TRACES = 3  # gradients appear on the first step, then two traces agree
#: Steps before timing: the traces, a replay that compiles, then on torch six that time the
#: compiled graph against the replay (the first compiles again: torch.compile's first graph
#: takes the optimizer's numbers as constants), so that the faster one is chosen.
WARM_UP = TRACES + 7


class TorchCompiled(Trainer):
    """PyTorch's own compiled step: the model through ``torch.compile`` (forward and
    backward) and the optimizer's step compiled, as PyTorch's tutorials do it."""

    def __init__(self, trainer: Trainer) -> None:
        super().__init__(
            torch.compile(trainer.model), trainer.optim, trainer.cross_entropy, trainer.x, trainer.y
        )
        self._update = torch.compile(trainer.optim.step)

    def step(self) -> Any:
        self.optim.zero_grad()
        loss = self.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self._update()
        return loss


def tw_model(build: Callable, params: list[np.ndarray], device: str) -> Any:
    with tw.device(device):
        model = build(tw)
    with tw.no_grad():
        for p, host in zip(model.parameters(), params):
            p.copy_(tw.tensor(host, device=device))
    return model


def torch_model(build: Callable, params: list[np.ndarray]) -> Any:
    model = build(torch)
    with torch.no_grad():
        for p, host in zip(model.parameters(), params):
            p.copy_(torch.from_numpy(host))
    return model


def trainers(
    build: Callable, optimizer: Callable, params: list, x: np.ndarray, y: np.ndarray
) -> dict[str, Trainer]:
    """The eager and compiled tw and torch trainers of one model, warmed up."""
    out: dict[str, Trainer] = {}
    for name, device, backend in (
        ("tw-eager", "numpy", None),
        ("tw-replay", "numpy", "tensorweaver"),
        ("tw-compiled", "numpy", "inductor"),
        ("tw-torch", "torch:cpu", None),
        ("tw-torch-replay", "torch:cpu", "tensorweaver"),
        ("tw-torch-compiled", "torch:cpu", "inductor"),
    ):
        model = tw_model(build, params, device)
        data = tw.tensor(x, device=device), tw.tensor(y, device=device)
        trainer = Trainer(model, optimizer(tw, model), TF.cross_entropy, *data)
        if backend is not None:
            trainer.step = tw.compile(trainer.step, backend=backend)
        out[name] = trainer
    model = torch_model(build, params)
    data = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    out["torch"] = Trainer(model, optimizer(torch, model), torch.nn.functional.cross_entropy, *data)
    model = torch_model(build, params)
    data = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    out["torch-compile"] = TorchCompiled(
        Trainer(model, optimizer(torch, model), torch.nn.functional.cross_entropy, *data)
    )
    for trainer in out.values():
        for _ in range(WARM_UP):
            trainer.step()
    for name in ("tw-replay", "tw-compiled", "tw-torch-replay", "tw-torch-compiled"):
        step = out[name].step
        if step.traces != TRACES or len(step.graph_source()) != 1:
            raise AssertionError(f"{name} does not replay")
    check(out)
    return out


def check(out: dict[str, Trainer]) -> None:
    """Compiled steps agree with eager ones after the warm-up."""
    params = {name: t.parameters() for name, t in out.items()}
    for name in ("tw-replay", "tw-compiled"):
        for got, want in zip(params[name], params["tw-eager"]):
            if not np.array_equal(got, want):
                raise AssertionError(f"{name}: compiled NumPy steps differ from the eager ones")
    for name in ("tw-torch-replay", "tw-torch-compiled", "tw-eager", "torch-compile"):
        for got, want in zip(params[name], params["torch"]):
            # Adam steps of lr 1e-3 each, whose sign can flip on a rounding-sized gradient
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)


def mlp_candidates(batch: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    params = mlp_step.init_weights(rng)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], batch)

    def sgd(lib: Any, model: Any) -> Any:
        return lib.optim.SGD(model.parameters(), lr=mlp_step.LR)

    ours = trainers(torch_models.mlp, sgd, params, x, y)
    module = mlp_step.tw_trainer(mlp_step.tw_mlp(params, "numpy"), x, y, "numpy")
    module.model = forward = tw.compile(module.model)
    for _ in range(WARM_UP):
        module.step()
    if forward.traces != 2 or len(forward.graph_source()) != 1:
        raise AssertionError("the compiled module does not replay")
    for got, want in zip(module.parameters(), ours["tw-eager"].parameters()):
        if not np.array_equal(got, want):
            raise AssertionError("compiled module steps differ from the eager ones")
    by_hand = mlp_step.NumpyMLP(params)
    return {
        "numpy": lambda: by_hand.step(x, y),
        **{name: t.step for name, t in ours.items() if name != "tw-torch"},
        "tw-compiled-module": module.step,
    }


def cnn_candidates(batch: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    params = numpy_cnn.init_weights(rng)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, batch)

    def adam(lib: Any, model: Any) -> Any:
        lr, betas, eps = numpy_cnn.LR, numpy_cnn.BETAS, numpy_cnn.EPS
        return lib.optim.Adam(model.parameters(), lr=lr, betas=betas, eps=eps)

    ours = trainers(torch_models.cnn, adam, params, x, y)
    by_hand = numpy_cnn.NumpyCNN(params)
    return {
        "numpy": lambda: by_hand.step(x, y),
        **{name: t.step for name, t in ours.items() if name != "tw-torch"},
    }


def tiny_candidates() -> dict[str, Callable[[], Any]]:
    host_a = np.linspace(-1, 1, TINY, dtype=np.float32)
    host_b = np.linspace(2, 3, TINY, dtype=np.float32)
    grads = [np.zeros(TINY, np.float32), np.zeros(TINY, np.float32)]

    def by_hand() -> Any:
        y = ((host_a * host_b) + host_a).sum()
        grads[0] += host_b + 1  # dy/da
        grads[1] += host_a  # dy/db
        return y

    def step(a: Any, b: Any) -> Any:
        y = ((a * b) + a).sum()
        y.backward()
        return y

    compiled: dict[str, Any] = {}

    def tw_step(device: str, name: str = "") -> Callable[[], Any]:
        a = tw.tensor(host_a, device=device, requires_grad=True)
        b = tw.tensor(host_b, device=device, requires_grad=True)
        fn = step
        if name:
            fn = compiled[name] = tw.compile(step)
        return lambda: fn(a, b)

    ta = torch.tensor(host_a, requires_grad=True)
    tb = torch.tensor(host_b, requires_grad=True)
    out = {
        "numpy": by_hand,
        "tw-eager": tw_step("numpy"),
        "tw-compiled": tw_step("numpy", "tw-compiled"),
        "torch": lambda: step(ta, tb),
        "tw-torch-compiled": tw_step("torch:cpu", "tw-torch-compiled"),
    }
    # The same warm-up as the trainers': the traces, and on torch the compilation and the
    # trials that choose between the compiled graph and the replay, are not timed.
    for candidate in out.values():
        for _ in range(WARM_UP):
            candidate()
    for name, fn in compiled.items():
        if fn.traces != TRACES or len(fn.graph_source()) != 1:
            raise AssertionError(f"{name} does not replay")
    return out


def report(title: str, unit: str, scale: float, medians: dict[str, float]) -> None:
    print(title)
    for name, t in medians.items():
        print(f"  {name:20s}{t * scale:9.3f} {unit}")
    ms = medians
    for a, b in (
        ("tw-compiled", "numpy"),
        ("tw-replay", "numpy"),
        ("tw-compiled-module", "numpy"),
        ("tw-eager", "numpy"),
        ("tw-compiled", "tw-eager"),
        ("tw-torch-compiled", "torch"),
        ("tw-torch-replay", "torch"),
        ("torch-compile", "torch"),
        ("tw-torch-compiled", "torch-compile"),
    ):
        if a in ms and b in ms:
            print(f"  {a + ' / ' + b:36s}{ms[a] / ms[b]:6.2f}x")


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=200)
    p.add_argument("--batch", type=int, default=256, help="the MLP's batch")
    p.add_argument("--steps", default="mlp,cnn,tiny", help="comma-separated: mlp, cnn, tiny")
    args = p.parse_args()
    harness.setup_torch(torch)
    print(harness.describe(args, torch))
    steps = args.steps.split(",")
    if "mlp" in steps:
        mlp = harness.measure(mlp_candidates(args.batch), args)
        report(f"MLP {'-'.join(map(str, SIZES))}, batch {args.batch}, SGD", "ms", 1e3, mlp)
    if "cnn" in steps:
        cnn = harness.measure(cnn_candidates(torch_models.CNN_BATCH), args)
        report(f"CNN 2x conv 3x3, batch {torch_models.CNN_BATCH}, Adam", "ms", 1e3, cnn)
    if "tiny" in steps:
        tiny = harness.measure(tiny_candidates(), args)
        report(f"tiny step on {TINY} float32s", "us", 1e6, tiny)


if __name__ == "__main__":
    main()
