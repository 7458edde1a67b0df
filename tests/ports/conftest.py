"""Ports run their programs on the backends each test names; ``cunumeric`` marks the cases
that also run on cuPyNumeric (the small ones: about 0.4 ms an op there).

Every ports test compares a program's numbers on tensorweaver with the same program's on
torch (``check_port``); torch runs each program and arguments once per session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from port_harness import Port, assert_losses_match, run_torch, run_tw
from threadpoolctl import threadpool_limits


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cunumeric: this port also runs on the cuPyNumeric backend (small programs)"
    )


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Torch (and tw's torch backend) on one intra-op thread while these run: the ops are
    tiny, and on a busy machine torch's waiting pool threads made the runs 3-4x slower.
    NumPy's BLAS too: there a (200, 64) @ (64, 48) product took ~15 ms with its default
    threads against ~20 us with one, whenever the machine was busy."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def torch_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Port], tuple[list[float], Path]]:
    """A port's torch losses and initial weights, computed once for every backend (a run
    that raised raises again, without running)."""
    done: dict[tuple, tuple[list[float], Path] | BaseException] = {}

    def run(port: Port) -> tuple[list[float], Path]:
        key = (port.program, tuple(port.argv))
        if key not in done:
            try:
                done[key] = run_torch(port.program, port.argv, tmp_path_factory.mktemp("port"))
            except Exception as e:
                done[key] = e
        result = done[key]
        if isinstance(result, BaseException):
            raise result
        return result

    return run


@pytest.fixture
def check_port(
    torch_run: Callable[[Port], tuple[list[float], Path]],
) -> Callable[[Port, str], None]:
    """Runs a port on torch (once) and on the tensorweaver device ``spec``, and compares
    every number the program returns."""

    def check(port: Port, spec: str) -> None:
        torch_losses, init = torch_run(port)
        tw_losses = run_tw(port.program, port.argv, spec, init)
        assert_losses_match(tw_losses, torch_losses, rtol=port.rtol, atol=port.atol)

    return check
