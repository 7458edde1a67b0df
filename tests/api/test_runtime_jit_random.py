"""tw.jit (eager stand-ins for TorchScript's entry points) and tw.random.fork_rng."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import jit


class _Net(tw.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = tw.nn.Linear(3, 2)

    @jit.export
    def twice(self, x):
        return self.forward(x) * 2

    @jit.ignore
    def debug(self):
        return "python"

    @jit.unused
    def unused(self):
        return "still runs"

    def forward(self, x):
        if not jit.is_scripting():
            return self.lin(x)
        raise AssertionError("never scripted")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_script_and_trace_return_the_module_which_runs_eagerly() -> None:
    net = _Net()
    x = tw.randn(4, 3)
    assert jit.script(net) is net and jit.trace(net, (x,)) is net
    assert jit.trace(net.forward, example_inputs=x) == net.forward
    np.testing.assert_allclose(
        np.asarray(jit.script(net)(x).detach()), np.asarray(net.lin(x).detach())
    )
    assert net.twice(x).shape == (4, 2) and net.debug() == "python"
    assert net.unused() == "still runs"
    with pytest.raises(RuntimeError, match="eval mode"):
        jit.freeze(net)
    assert jit.freeze(net.eval()) is net
    assert not isinstance(jit.script(net), (jit.ScriptModule, jit.ScriptFunction))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_queries_and_helpers_as_torch_outside_torchscript() -> None:
    assert jit.is_scripting() is torch.jit.is_scripting() is False
    assert jit.is_tracing() is torch.jit.is_tracing() is False
    value = [1, 2]
    assert jit.annotate(list[int], value) is value
    assert jit.Final is torch.jit.Final
    future = jit.fork(lambda a, b=1: a + b, 2, b=3)
    assert jit.wait(future) == 5 == torch.jit.wait(torch.jit.fork(lambda a, b=1: a + b, 2, b=3))


@pytest.mark.parametrize("name", ["script", "trace", "freeze"])
def test_deprecation_warnings_as_torch(name: str) -> None:
    module = torch.nn.Linear(2, 2).eval()
    args = (torch.ones(1, 2),) if name == "trace" else ()
    with pytest.warns(DeprecationWarning, match=f"jit.{name}` is deprecated"):
        getattr(torch.jit, name)(torch.jit.script(module) if name == "freeze" else module, *args)
    with pytest.warns(DeprecationWarning, match=f"jit.{name}` is deprecated"):
        getattr(jit, name)(_Net().eval(), *args)


def test_ignore_arguments_as_torch() -> None:
    with pytest.warns(FutureWarning):
        assert jit.ignore(True)(len) is len
    assert jit.ignore(drop=False)(len) is len
    with pytest.raises(RuntimeError):
        torch.jit.ignore("x")
    with pytest.raises(RuntimeError, match="must be a bool"):
        jit.ignore("x")


def test_jit_save_and_load_point_to_tw_save(tmp_path) -> None:
    with pytest.raises(RuntimeError, match=r"tw\.save"):
        jit.save(_Net(), tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match=r"tw\.load"):
        jit.load(tmp_path / "m.pt")


def test_fork_rng_restores_the_default_generator_exactly() -> None:
    tw.manual_seed(0)
    expected = tw.randperm(10).tolist()
    tw.manual_seed(0)
    with tw.random.fork_rng():
        tw.randperm(10)
    assert tw.randperm(10).tolist() == expected


def test_fork_rng_makes_later_backend_draws_independent_of_the_block() -> None:
    after = []
    for draws in (0, 3):
        tw.manual_seed(1)
        tw.rand(2)  # the backend exists before the block
        with tw.random.fork_rng(devices=[]):
            for _ in range(draws):
                tw.rand(5)
        after.append(tw.rand(4).tolist())
    assert after[0] == after[1]
    tw.manual_seed(1)
    tw.rand(2)
    with tw.random.fork_rng(enabled=False):
        tw.rand(5)
    assert tw.rand(4).tolist() != after[0]
