"""tw.use_deterministic_algorithms and tw.set_float32_matmul_precision, as PyTorch's."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch


@pytest.fixture(autouse=True)
def _restore() -> None:
    yield
    tw.use_deterministic_algorithms(False)
    tw.set_float32_matmul_precision("highest")


def test_deterministic_switch_reads_back_and_reaches_torch() -> None:
    tw.use_deterministic_algorithms(True, warn_only=True)
    assert tw.are_deterministic_algorithms_enabled() is True
    assert tw.is_deterministic_algorithms_warn_only_enabled() is True
    assert torch.are_deterministic_algorithms_enabled() is True
    tw.use_deterministic_algorithms(False)
    assert not tw.are_deterministic_algorithms_enabled()
    assert not torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize("mode", ["x", 1, None])
def test_deterministic_switch_wants_a_bool_like_torch(mode: object) -> None:
    with pytest.raises(TypeError) as theirs:
        torch.use_deterministic_algorithms(mode)
    with pytest.raises(type(theirs.value), match="must be bool"):
        tw.use_deterministic_algorithms(mode)


def test_matmul_precision_reads_back_and_reaches_torch() -> None:
    assert tw.get_float32_matmul_precision() == "highest"
    tw.set_float32_matmul_precision("high")
    assert tw.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "high"


def test_an_unknown_matmul_precision_warns_and_changes_nothing() -> None:
    tw.set_float32_matmul_precision("medium")
    with pytest.warns(UserWarning, match="no effect"):
        tw.set_float32_matmul_precision("fastest")
    assert tw.get_float32_matmul_precision() == "medium"


def test_float32_products_on_cpu_stay_float32_at_any_precision() -> None:
    a = tw.randn(16, 16, dtype=tw.float32)
    exact = a @ a
    tw.set_float32_matmul_precision("medium")
    assert tw.equal(a @ a, exact)
