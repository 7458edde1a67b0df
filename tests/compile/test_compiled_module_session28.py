"""``tw.compile(module)`` is torch's ``OptimizedModule``: a module (a submodule of a bigger
one) around ``_orig_mod`` whose attribute reads, writes and deletes reach the module, whose
chained module methods return the compiled wrapper, whose ``state_dict`` keys start with
``_orig_mod.``, and whose copies compile their own module afresh (reader I's D8-D11).

Structure is compared with ``torch.compile`` objects that are never called (no inductor
compile); values with eager torch, which ``torch.compile`` must equal."""

from __future__ import annotations

import copy
import io
import warnings
from typing import Any

import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import grid, same


def _compiled(m: Any, module: Any) -> Any:
    """``module`` compiled by ``m`` (torch's is never called in these tests, and its backend
    is "eager": the wrapper is the same, without inductor's set-up)."""
    if m is tw:
        return tw.compile(module)
    # torch.compile's first use turns torch.distributions' argument checks off for the
    # whole process: put them back for the tests after this one
    validating = torch.distributions.Distribution._validate_args
    try:
        return torch.compile(module, backend="eager")
    finally:
        torch.distributions.Distribution.set_default_validate_args(validating)


def _replayed(module: Any) -> Any:
    """``module`` compiled by tw with the replay alone (torch:cpu's hook would hand the graph
    to inductor: seconds)."""
    return tw.compile(module, backend="tensorweaver")


def _linear(m: Any, n_in: int = 2, n_out: int = 2) -> Any:
    lin = m.nn.Linear(n_in, n_out).double()
    with m.no_grad():
        lin.weight.copy_(m.linspace(-1, 1, n_in * n_out, dtype=m.float64).reshape(n_out, n_in))
        lin.bias.fill_(0.25)
    return lin


def _parameter_set_on_the_compiled_module(m: Any) -> tuple:
    lin = _linear(m)
    compiled = _compiled(m, lin)
    compiled.weight = m.nn.Parameter(m.zeros(2, 2, dtype=m.float64))
    return lin.weight is compiled.weight, bool((lin.weight == 0).all()), len(compiled._parameters)


def _attributes_written_and_deleted_through_the_wrapper(m: Any) -> tuple:
    lin = _linear(m)
    compiled = _compiled(m, lin)
    compiled.scale = 3
    compiled.training = False
    written = lin.scale, "scale" in vars(compiled), lin.training, compiled.training
    del compiled.scale
    return written, hasattr(lin, "scale")


def _compiled_block_in_a_sequential(m: Any) -> tuple:
    compiled = _compiled(m, _linear(m))
    seq = m.nn.Sequential(compiled, m.nn.ReLU())
    return (
        isinstance(compiled, m.nn.Module),
        len(list(seq.parameters())),
        seq[0] is compiled,
        list(seq.state_dict()),
        [name for name, _ in seq.named_modules()],
    )


def _state_dict_keys(m: Any) -> tuple:
    lin = _linear(m)
    compiled = _compiled(m, lin)
    plain_keys = {k: v.clone() for k, v in lin.state_dict().items()}
    try:
        compiled.load_state_dict(plain_keys)
        refused = None
    except RuntimeError as e:
        refused = "Missing key(s)" in str(e) and "Unexpected key(s)" in str(e)
    loaded = compiled.load_state_dict({f"_orig_mod.{k}": v * 2 for k, v in plain_keys.items()})
    return (
        list(compiled.state_dict()),
        [name for name, _ in compiled.named_parameters()],
        refused,
        (list(loaded.missing_keys), list(loaded.unexpected_keys)),
        lin.weight,
        compiled._orig_mod is lin,
        compiled.get_parameter("_orig_mod.bias") is lin.bias,
    )


def _chained_methods_keep_the_compiled_module(m: Any) -> list:
    compiled = _compiled(m, m.nn.Linear(2, 2))
    kept = [
        r is compiled
        for r in (
            compiled.eval(),
            compiled.train(),
            compiled.double(),
            compiled.float(),
            compiled.to(m.float64),
            compiled.requires_grad_(False),
        )
    ]
    return kept, compiled.weight.dtype, compiled.weight.requires_grad, compiled.training


def _compiling_keeps_the_training_flag(m: Any) -> tuple:
    lin = _linear(m).eval()
    compiled = _compiled(m, lin)
    return lin.training, compiled.training


def _dir_and_len(m: Any) -> tuple:
    lin = _compiled(m, _linear(m))
    seq = _compiled(m, m.nn.Sequential(_linear(m), m.nn.ReLU()))
    names = dir(lin)
    try:
        bool(lin)
        truth = None
    except TypeError as e:
        truth = str(e)
    return "weight" in names, "_orig_mod" in names, "forward" in names, len(seq), truth


def _deepcopy_of_a_compiled_module(m: Any) -> tuple:
    net = _linear(m, 2, 1)
    with m.no_grad():
        net.weight.fill_(1.0)
        net.bias.fill_(0.0)
    compiled = _replayed(net) if m is tw else net  # (torch.compile gives eager's values)
    x = m.ones(1, 2, dtype=m.float64)
    for _ in range(4):  # graph confirmed
        compiled(x)
    copied = copy.deepcopy(compiled)
    with m.no_grad():
        copied.weight.fill_(5.0)
    return [copied(x) for _ in range(3)], compiled(x), net.weight


def _shallow_copy_shares_the_module(m: Any) -> tuple:
    net = _linear(m, 2, 1)
    compiled = _replayed(net) if m is tw else net
    x = grid(m, 1, 2)
    for _ in range(4):
        compiled(x)
    copied = copy.copy(compiled)
    with m.no_grad():
        net.weight.fill_(2.0)
    return [copied(x) for _ in range(3)], compiled(x)


def _deepcopy_of_a_model_holding_a_compiled_block(m: Any) -> tuple:
    block = _linear(m)
    model = m.nn.Sequential(_replayed(block) if m is tw else block, m.nn.Tanh())
    x = grid(m, 3, 2) / 4
    for _ in range(4):
        model(x)
    twin = copy.deepcopy(model)
    with m.no_grad():
        twin[0].weight.mul_(-1.0)
    return [twin(x) for _ in range(3)], model(x)


def _compiled_block_trained_inside_a_model(m: Any) -> tuple:
    block = _linear(m, 2, 3)
    model = m.nn.Sequential(_replayed(block) if m is tw else block, m.nn.Tanh(), _linear(m, 3, 1))
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    x = grid(m, 4, 2) / 8
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, list(model.parameters())


PROGRAMS = {
    "parameter_set": _parameter_set_on_the_compiled_module,
    "attributes_written_and_deleted": _attributes_written_and_deleted_through_the_wrapper,
    "block_in_a_sequential": _compiled_block_in_a_sequential,
    "state_dict_keys": _state_dict_keys,
    "chained_methods": _chained_methods_keep_the_compiled_module,
    "training_flag_kept": _compiling_keeps_the_training_flag,
    "dir_and_len": _dir_and_len,
    "deepcopy": _deepcopy_of_a_compiled_module,
    "shallow_copy": _shallow_copy_shares_the_module,
    "deepcopy_of_a_model_holding_one": _deepcopy_of_a_model_holding_a_compiled_block,
    "trained_inside_a_model": _compiled_block_trained_inside_a_model,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compiled_module_like_torch(name: str, spec: str) -> None:
    same(PROGRAMS[name], spec)


def test_the_compiled_call_runs() -> None:
    net = _linear(tw)
    compiled = _replayed(net).eval()
    x = grid(tw, 3, 2)
    with tw.no_grad():
        want = net(x)
        got = [compiled(x) for _ in range(4)] + [compiled.forward(x)]
    assert compiled.traces == 2 and len(compiled.graph_source()) == 1  # then replays
    assert all(tw.equal(g, want) for g in got)
    copied = copy.deepcopy(compiled)
    assert copied.traces == 0 and copied.graph_source() == []
    assert copied._orig_mod is not net and copied.forward is not compiled.forward


def test_hooks_on_the_wrapper_run_around_the_compiled_call() -> None:
    net = _linear(tw)
    compiled = _replayed(net)
    seen = []
    compiled.register_forward_hook(lambda mod, args, out: seen.append(mod) or out * 2)
    x = grid(tw, 1, 2)
    with tw.no_grad():
        want = net(x) * 2
        got = [compiled(x) for _ in range(4)]
    assert all(mod is compiled for mod in seen) and len(seen) == 4
    assert all(tw.equal(g, want) for g in got) and compiled.traces == 2
    assert not net._forward_hooks  # (the module's own hooks are its own)


def test_global_hooks_warn_once_the_wrapper_runs_them() -> None:
    compiled = _replayed(_linear(tw))
    x = grid(tw, 1, 2)
    seen = []
    handle = tw.nn.modules.module.register_module_forward_hook(lambda mod, *a: seen.append(mod))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            compiled(x)  # (the wrapper without hooks of its own is the compiled call itself)
        assert seen == [compiled._orig_mod]
        compiled.register_forward_pre_hook(lambda *a: None)
        with pytest.warns(UserWarning, match="global module hooks"):  # as torch's wrapper
            compiled(x)
        assert seen[-1] is compiled
    finally:
        handle.remove()


def _saved_and_loaded_whole(m: Any) -> tuple:
    lin = _linear(m)
    buffer = io.BytesIO()
    m.save(_compiled(m, lin), buffer)
    buffer.seek(0)
    loaded = m.load(buffer, weights_only=False)
    return type(loaded).__name__, list(loaded.state_dict()), loaded._orig_mod.weight


def test_whole_compiled_module_saved_and_loaded(spec: str) -> None:
    same(_saved_and_loaded_whole, spec)
