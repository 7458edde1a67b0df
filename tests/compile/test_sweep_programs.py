"""A seeded sweep of tw.compile from the outside: random training programs, built from
layers, losses, optimizers, schedulers and step features, run compiled beside the same
program run eagerly from the same seed and initial weights. After every step the returned
value, the parameters, their gradients, the buffers (BatchNorm's running statistics), the
optimizer's state_dict and the scheduler's learning rate must be the eager ones: bit for bit
under the core's replay and NumPy's compile_graph, within float tolerance under torch's
(inductor fuses). Between steps the driver does what users do: changes the learning rate by
hand, flips train()/eval() and requires_grad, replaces a parameter and adds it to the
optimizer, passes a different Python scalar, feeds a smaller last batch.

The suite runs a share of the sweep; ``TW_SWEEP=N`` runs N programs per backend
(test_sweep_inductor.py runs them under torch's inductor).
"""

from __future__ import annotations

import inspect
import os
import random
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning, HostRead
from tensorweaver.optim import lr_scheduler
from tensorweaver_torch.compile import CompiledGraphs

STEPS = 7
FEATURES, CLASSES, TIME, VOCAB = 6, 4, 5, 9
SHARE = int(os.environ.get("TW_SWEEP", "0"))
#: A global the step reads (the driver's "global" event changes it: a guard, not a constant)
BOOST = 1.0


@dataclass
class Plan:
    """The pieces of one program, drawn from its seed."""

    seed: int
    arch: str
    norm: str
    act: str
    dropout: float
    dtype: Any
    loss: str
    loss_options: dict
    optimizer: str
    optimizer_options: dict
    scheduler: str | None
    scheduler_inside: bool  # scheduler.step() inside the compiled step (else after it)
    clip: float | None
    zero: bool | None  # zero_grad(set_to_none=...), None: the optimizer's default
    accumulate: bool
    inplace: bool  # in-place updates through views of parameters inside the step
    forward_inplace: bool  # in-place updates through views of activations in the forward
    target: str  # what is compiled: "step", "decorated" (@tw.compile(...)) or "model"
    evaluate: bool  # a no_grad evaluation block inside the step
    item: bool  # returns loss.item()
    branch: bool  # halves the gradients when loss.item() is large (a graph break)
    events: dict = field(default_factory=dict)  # step -> what the driver does before it
    keywords: dict = field(default_factory=dict)  # tw.compile's

    def __str__(self) -> str:
        skip = {"seed", "events", "keywords"}
        parts = [f"{k}={v}" for k, v in vars(self).items() if k not in skip]
        return f"seed {self.seed}: " + ", ".join(parts) + f", events={self.events}"


def plan(seed: int) -> Plan:
    """The program of ``seed``."""
    r = random.Random(seed)
    arch = r.choice(["mlp", "mlp", "conv1d", "conv2d", "lstm", "gru", "attention"])
    loss = r.choice(["cross_entropy", "cross_entropy", "nll", "mse"])
    loss_options: dict = {}
    if loss == "cross_entropy":
        if r.random() < 0.5:
            loss_options["ignore_index"] = r.choice([-100, CLASSES - 1])
        if r.random() < 0.4:
            loss_options["label_smoothing"] = r.choice([0.1, 0.25])
        if r.random() < 0.4:
            loss_options["weight"] = [0.5, 1.0, 2.0, 1.5]
    elif loss == "nll" and r.random() < 0.5:
        loss_options["ignore_index"] = CLASSES - 1
    optimizer = r.choice(["sgd", "sgd", "adam", "adamw", "rmsprop", "adagrad"])
    options: dict = {}
    if optimizer == "sgd":
        options = {"lr": 0.1, "momentum": r.choice([0.0, 0.9])}
        options["nesterov"] = options["momentum"] > 0 and r.random() < 0.5
        options["weight_decay"] = r.choice([0.0, 0.01])
    elif optimizer in ("adam", "adamw"):
        options = {"lr": 0.01, "amsgrad": r.random() < 0.5, "weight_decay": r.choice([0, 0.01])}
    elif optimizer == "rmsprop":
        options = {"lr": 0.01, "momentum": r.choice([0.0, 0.5]), "centered": r.random() < 0.5}
    else:
        options = {"lr": 0.1, "lr_decay": r.choice([0.0, 0.01])}
    scheduler = r.choice([None, None, "step", "exponential", "cosine", "onecycle"])
    events: dict = {}
    # (OneCycleLR needs a max_lr in every group: no group added)
    names = ["lr", "eval", "requires_grad", "scalar", "input_grad", "global"]
    if scheduler != "onecycle":
        names.append("replace")
    for name in names:
        if r.random() < 0.3:
            events.setdefault(r.randrange(2, STEPS - 1), []).append(name)
    if r.random() < 0.3:
        events.setdefault(STEPS - 1, []).append("small")
    keywords = r.choice(
        [{}, {"mode": "reduce-overhead"}, {"dynamic": False}, {"mode": "max-autotune"}]
    )
    item = r.random() < 0.3
    keywords["fullgraph"] = r.random() < 0.3
    if r.random() < 0.3:
        keywords["backend"] = "inductor"
    return Plan(
        seed=seed,
        arch=arch,
        norm=r.choice(["none", "layer", "batch"]),
        act=r.choice(["relu", "tanh", "gelu", "sigmoid"]),
        dropout=r.choice([0.0, 0.0, 0.3]),
        dtype=r.choice([tw.float32, tw.float32, tw.float64]),
        loss=loss,
        loss_options=loss_options,
        optimizer=optimizer,
        optimizer_options=options,
        scheduler=scheduler,
        scheduler_inside=r.random() < 0.2,
        clip=r.choice([None, None, 0.5]),
        zero=r.choice([None, True, False]),
        accumulate=r.random() < 0.3,
        inplace=r.random() < 0.3,
        forward_inplace=r.random() < 0.3,
        target=r.choice(["step", "step", "decorated", "model"]),
        evaluate=r.random() < 0.25,
        item=item,
        branch=r.random() < 0.2,
        events=events,
        keywords=keywords,
    )


class Net(nn.Module):
    """One of the sweep's architectures: a body, an optional norm, a head to CLASSES."""

    def __init__(self, p: Plan) -> None:
        super().__init__()
        self.arch = p.arch
        act = {"relu": nn.ReLU(), "tanh": nn.Tanh(), "gelu": nn.GELU(), "sigmoid": nn.Sigmoid()}
        self.act = act[p.act]
        self.drop = nn.Dropout(p.dropout)
        hidden = 8
        # No parameter whose gradient is zero in exact arithmetic (a bias before BatchNorm,
        # the attention key's bias): adaptive optimizers (g / sqrt(sum g**2)) turn its
        # rounding noise into steps of the learning rate's size, which a fusing backend's
        # different rounding would show as a difference that is none.
        bias = p.norm != "batch"
        if p.arch == "mlp":
            self.body = nn.Linear(FEATURES, hidden, bias=bias)
        elif p.arch == "conv1d":
            self.body = nn.Conv1d(2, 3, 3, padding=1, bias=bias)
            hidden = 3
        elif p.arch == "conv2d":
            self.body = nn.Conv2d(2, 3, 3, padding=1, bias=bias)
            hidden = 3
        elif p.arch in ("lstm", "gru"):
            self.embed = nn.Embedding(VOCAB, 5)
            kind = nn.LSTM if p.arch == "lstm" else nn.GRU
            layers = 1 + p.seed % 2
            self.body = kind(5, hidden, layers, batch_first=True, dropout=p.dropout * (layers > 1))
        else:
            self.embed = nn.Linear(FEATURES, hidden)
            self.body = nn.MultiheadAttention(
                hidden, 2, dropout=p.dropout, bias=False, batch_first=True
            )
        if p.norm == "layer":
            self.norm = nn.LayerNorm(hidden)
        elif p.norm == "batch":
            spatial = {"conv1d": nn.BatchNorm1d, "conv2d": nn.BatchNorm2d}
            self.norm = spatial.get(p.arch, nn.BatchNorm1d)(hidden)
        else:
            self.norm = None
        self.head = nn.Linear(hidden, CLASSES)
        self.forward_inplace = p.forward_inplace

    def forward(self, x: tw.Tensor) -> tw.Tensor:
        if self.arch == "mlp":
            h = self.body(x)
        elif self.arch in ("conv1d", "conv2d"):
            h = self.body(x)
            if isinstance(self.norm, nn.modules.batchnorm._BatchNorm):
                h = self.norm(h)
            h = h.flatten(2).mean(2)
        elif self.arch in ("lstm", "gru"):
            out, _ = self.body(self.embed(x))
            h = out[:, -1]
        else:
            e = self.embed(x)
            out, _ = self.body(e, e, e)
            h = out.mean(1)
        if self.norm is not None and not (
            self.arch in ("conv1d", "conv2d")
            and isinstance(self.norm, nn.modules.batchnorm._BatchNorm)
        ):
            h = self.norm(h)
        h = self.act(h)
        if self.forward_inplace:
            h = h * 1.0
            h[:, :1] *= 1.5
            h.transpose(0, 1)[-1].add_(0.25)
            h.view(-1)[1:3].mul_(0.5)
        return self.head(self.drop(h))


def inputs(p: Plan, n: int, step: int, device: str) -> tuple:
    """The batch of ``step`` (the same on both sides)."""
    rng = np.random.default_rng(1000 * p.seed + step)
    if p.arch == "mlp":
        x = rng.standard_normal((n, FEATURES))
    elif p.arch == "conv1d":
        x = rng.standard_normal((n, 2, TIME))
    elif p.arch == "conv2d":
        x = rng.standard_normal((n, 2, 3, 3))
    elif p.arch in ("lstm", "gru"):
        x = rng.integers(0, VOCAB, (n, TIME))
    else:
        x = rng.standard_normal((n, TIME, FEATURES))
    y = rng.integers(0, CLASSES, n)
    if "ignore_index" in p.loss_options:
        y[rng.random(n) < 0.25] = p.loss_options["ignore_index"]
        y[0] = y[n // 2] = 0  # not every target of a micro-batch ignored (a NaN loss)
    dtype = None if x.dtype.kind == "i" else p.dtype
    return tw.tensor(x, dtype=dtype, device=device), tw.tensor(y, device=device)


def loss_of(p: Plan, out: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
    options = dict(p.loss_options)
    if "weight" in options:
        options["weight"] = tw.tensor(options["weight"], dtype=out.dtype, device=out.device)
    if p.loss == "cross_entropy":
        return F.cross_entropy(out, y, **options)
    if p.loss == "nll":
        return F.nll_loss(F.log_softmax(out, 1), y, **options)
    return F.mse_loss(out, F.one_hot(y, CLASSES).to(out.dtype))


def optimizer_of(p: Plan, params: list) -> Any:
    kind = {
        "sgd": tw.optim.SGD,
        "adam": tw.optim.Adam,
        "adamw": tw.optim.AdamW,
        "rmsprop": tw.optim.RMSprop,
        "adagrad": tw.optim.Adagrad,
    }[p.optimizer]
    return kind(params, **p.optimizer_options)


def scheduler_of(p: Plan, opt: Any) -> Any:
    if p.scheduler == "step":
        return lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    if p.scheduler == "exponential":
        return lr_scheduler.ExponentialLR(opt, gamma=0.8)
    if p.scheduler == "cosine":
        return lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    if p.scheduler == "onecycle":
        cycle = p.optimizer in ("adam", "adamw") or p.optimizer_options.get("momentum", 0) > 0
        return lr_scheduler.OneCycleLR(
            opt, max_lr=0.05, total_steps=STEPS + 1, cycle_momentum=cycle
        )
    return None


@dataclass
class Program:
    """A built program: its model, optimizer, scheduler and step function."""

    plan: Plan
    model: Net
    opt: Any
    sched: Any
    step: Callable
    forward: Callable  # the model, or what wrapped it


def build(p: Plan, device: str, wrap: Callable = lambda f: f) -> Program:
    """The program of ``p``; its forward goes through ``wrap`` when the model is what is
    compiled."""
    tw.manual_seed(p.seed)
    with tw.device(device):
        model = Net(p).to(p.dtype)
    forward = wrap(model) if p.target == "model" else model
    opt = optimizer_of(p, list(model.parameters()))
    sched = scheduler_of(p, opt)

    def step(x: tw.Tensor, y: tw.Tensor, scale: float) -> Any:
        if p.zero is None:
            opt.zero_grad()
        else:
            opt.zero_grad(set_to_none=p.zero)
        halves = [(x[: len(x) // 2], y[: len(y) // 2]), (x[len(x) // 2 :], y[len(y) // 2 :])]
        total = 0.0
        for xb, yb in halves if p.accumulate else [(x, y)]:
            loss = loss_of(p, forward(xb), yb) * scale * BOOST
            if p.accumulate:
                loss = loss / 2
            loss.backward()
            total = total + loss.detach()
        if p.branch and total.item() > 1.3:  # the branch
            for param in model.parameters():
                if param.grad is not None:
                    param.grad.mul_(0.5)
        if p.clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), p.clip)
        if p.inplace:
            with tw.no_grad():
                model.head.weight.view(-1)[:3].mul_(0.99)  # through a view of a parameter
                model.head.bias[0] = model.head.bias[0].clamp(-0.5, 0.5)
        opt.step()
        if sched is not None and p.scheduler_inside:
            sched.step()
        if p.evaluate:
            was = model.training
            model.eval()
            with tw.no_grad():
                score = model(x).softmax(1).amax(1).mean()
            model.train(was)
            total = total + 0.0 * score
        return total.item() if p.item else total  # the read

    return Program(p, model, opt, sched, step, forward)


def before(prog: Program, step: int, scale: float) -> float:
    """What the driver does before ``step``; returns the Python scalar to pass."""
    p, model, opt = prog.plan, prog.model, prog.opt
    for event in p.events.get(step, []):
        if event == "lr":
            for group in opt.param_groups:
                group["lr"] = group["lr"] * 0.5
        elif event == "eval":
            model.train(not model.training)
        elif event == "requires_grad":
            model.head.bias.requires_grad_(not model.head.bias.requires_grad)
        elif event == "replace":
            # A new parameter in the head, added to the optimizer as a group of its own.
            new = nn.Parameter(model.head.bias.detach().clone() + 0.1)
            model.head.bias = new
            opt.add_param_group({"params": [new]})
            if prog.sched is not None:  # (PyTorch's schedulers pair base_lrs with the groups
                # strictly: a group added later needs its own, as a user adds it)
                prog.sched.base_lrs.append(opt.param_groups[-1]["lr"])
        elif event == "global":
            global BOOST
            BOOST = 1.5
        elif event == "scalar":
            scale = 0.5 if scale == 1.0 else 1.0
    return scale


def run(p: Plan, device: str, compiled: bool, hook: bool) -> tuple[list, Any]:
    """Each step's snapshot, and the compiled function (None eagerly)."""
    keywords = dict(p.keywords)
    if not hook:
        keywords["backend"] = "tensorweaver"

    def wrap(f: Callable) -> Any:
        if not compiled:
            return f
        return tw.compile(**keywords)(f) if p.target == "decorated" else tw.compile(f, **keywords)

    global BOOST
    BOOST = 1.0
    prog = build(p, device, wrap)
    fn = prog.step if p.target == "model" else wrap(prog.step)
    tw.manual_seed(p.seed + 1)
    snaps, scale = [], 1.0
    for i in range(STEPS):
        scale = before(prog, i, scale)
        n = 6 if "small" in p.events.get(i, []) else 8
        x, y = inputs(p, n, i, device)
        if any("input_grad" in p.events.get(k, []) for k in range(i + 1)):
            x.requires_grad_(x.dtype.is_floating_point)  # from then on: x.grad as eagerly
        out = fn(x, y, scale)
        if prog.sched is not None and not p.scheduler_inside:
            prog.sched.step()
        snaps.append(snapshot(prog, out))
        snaps[-1]["x.grad"] = None if x.grad is None else np.asarray(x.grad)
    return snaps, prog.forward if p.target == "model" else fn


def snapshot(prog: Program, out: Any) -> dict:
    """What the step left behind, as NumPy arrays and Python values."""
    model, opt, sched = prog.model, prog.opt, prog.sched
    snap: dict = {"out": out if isinstance(out, float) else np.asarray(out)}
    for name, t in model.named_parameters():
        snap[f"param {name}"] = np.asarray(t.detach())
        snap[f"grad {name}"] = None if t.grad is None else np.asarray(t.grad)
        snap[f"requires_grad {name}"] = t.requires_grad
    for name, t in model.named_buffers():
        snap[f"buffer {name}"] = np.asarray(t)
    state = opt.state_dict()
    for index, entry in state["state"].items():
        for key, value in entry.items():
            snap[f"state {index} {key}"] = (
                np.asarray(value) if isinstance(value, tw.Tensor) else value
            )
    for i, group in enumerate(state["param_groups"]):
        for key, value in group.items():
            snap[f"group {i} {key}"] = value
    if sched is not None:
        snap["last_lr"] = sched.get_last_lr()
    snap["training"] = model.training
    return snap


def compare(p: Plan, eager: list, compiled: list, exact: bool) -> None:
    for i, (want, got) in enumerate(zip(eager, compiled)):
        assert want.keys() == got.keys(), f"{p}\nstep {i}: {set(want) ^ set(got)}"
        for key in want:
            a, b = want[key], got[key]
            where = f"{p}\nstep {i}, {key}"
            if isinstance(a, np.ndarray):
                assert isinstance(b, np.ndarray) and a.dtype == b.dtype, where
                if exact:
                    np.testing.assert_array_equal(b, a, err_msg=where)
                else:
                    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5, err_msg=where)
            elif isinstance(a, float) and not exact:
                assert b == pytest.approx(a, rel=1e-4, abs=1e-5, nan_ok=True), where
            elif isinstance(a, float):
                assert a == b or (a != a and b != b), where
            else:
                assert a == b, where


def sweep(seed: int, device: str, hook: bool = False) -> tuple[Any, list]:
    """Run program ``seed`` eagerly and compiled, compare; return the compiled function
    and the CompileWarnings it gave."""
    p = plan(seed)
    if (p.item or p.branch) and p.keywords["fullgraph"] and p.target != "model":
        # fullgraph=True refuses the step's first .item(), naming its line
        lines, start = inspect.getsourcelines(build)
        marker = "# the branch" if p.branch else "# the read"
        line = start + next(i for i, text in enumerate(lines) if marker in text)
        with pytest.raises(HostRead, match=rf"test_sweep_programs\.py:{line}\b"):
            run(p, device, True, hook)
        return None, []
    eager, _ = run(p, device, False, hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        compiled, fn = run(p, device, True, hook)
    compare(p, eager, compiled, exact=not (hook and device.startswith("torch")))
    return fn, [w for w in caught if issubclass(w.category, CompileWarning)]


@pytest.fixture
def core_replay_on_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    # The torch hook (inductor, seconds a graph) has its share in test_sweep_inductor.py.
    monkeypatch.setattr(CompiledGraphs, "compile_graph", None)


SEEDS = range(SHARE or 24)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_compiled_program_steps_as_eagerly_on_numpy(seed: int) -> None:
    sweep(seed, "numpy", hook=True)


@pytest.mark.parametrize("seed", range(SHARE or 6))
def test_a_compiled_program_steps_as_eagerly_on_torch(seed: int, core_replay_on_torch) -> None:
    sweep(seed, "torch:cpu", hook=False)
