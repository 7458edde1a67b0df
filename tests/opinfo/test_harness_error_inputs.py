"""The harness's reading of torch's error inputs (``opinfo_harness.run_error``): cases that
were listed as differences though tensorweaver behaves as torch's own ``test_errors``
expects. Each op below had every such error input reported before:

- ``out=`` overlapping an input through a view (an ``expand()`` of one element, two slices
  of one base): the conversion gave each tensor its own memory, so no overlap was left;
- reflected operators given a number first (``TensorBase.__radd__(2, 3)``): torch's
  unbound method raises, and torch's test counts a ``NotImplemented`` result as raising;
- ``clamp_min``/``clamp_max``: torch's OpInfo marks their ``test_errors`` an expected
  failure (torch does not raise on them either);
- the random in-place ops (``cauchy``: a wrapper over ``Tensor.cauchy_``) were called with
  torch's method on tensorweaver tensors;
- inputs of more than 64 dimensions and on the meta device stopped the op's error inputs.
"""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch
from opinfo import opinfo_harness as harness
from tw_backends import entered

OVERLAPPING_OUT = ["masked_select", "gather", "index_select", "take", "bernoulli", "cat"]
REFLECTED = ["__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__", "__rmod__", "__rpow__",
             "__rsub__"]  # fmt: skip
RANDOM_IN_PLACE = ["cauchy", "exponential", "geometric", "log_normal", "uniform"]
STOPPED = ["amax", "amin", "aminmax", "gradient"]


def outcomes(name: str) -> list:
    """On NumPy: the harness's reading does not depend on the backend (the sweep's own)."""
    op = harness.ops_by_id()[name]
    with entered("numpy"):
        return [harness.run_error(op, error_input) for error_input in op.error_inputs("cpu")]


@pytest.mark.parametrize("name", OVERLAPPING_OUT + REFLECTED + RANDOM_IN_PLACE + STOPPED)
def test_error_inputs_agree_with_torch(name: str) -> None:
    found = [o for o in outcomes(name) if o is not None and o.kind != "skip"]
    assert not found, found


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_error_inputs_torch_expects_to_fail_are_skipped(name: str) -> None:
    assert harness.errors_expected_to_fail(harness.ops_by_id()[name])
    assert {o.kind for o in outcomes(name)} == {"skip"}


@pytest.mark.parametrize("name", ["add", "masked_select", "amax", "where"])
def test_other_ops_error_inputs_still_run(name: str) -> None:
    assert not harness.errors_expected_to_fail(harness.ops_by_id()[name])


def test_views_of_one_base_share_the_twins_memory(backend: str) -> None:
    base = torch.zeros(2, 4)
    sample = (base[:, 1:3], base[1], torch.zeros(1).expand(3))
    (t_slice, t_row, t_expanded), (w_slice, w_row, w_expanded) = harness.Pair(views=True).convert(
        sample
    )
    for t, w in ((t_slice, w_slice), (t_row, w_row), (t_expanded, w_expanded)):
        assert tuple(w.shape) == tuple(t.shape)
    w_slice.fill_(1.0)
    t_slice.fill_(1.0)
    assert w_row.tolist() == t_row.tolist() == [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(RuntimeError):  # the expand() still repeats one element
        w_expanded.add_(tw.ones(3))


def test_without_views_each_tensor_has_its_own_memory(backend: str) -> None:
    base = torch.zeros(4)
    _, (w_head, w_all) = harness.Pair().convert((base[:2], base))
    w_head.fill_(1.0)
    assert w_all.tolist() == [0.0] * 4


def test_a_missing_method_is_reported_where_torch_expects_any_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``view_as``'s error inputs expect ``Exception``: tw's lack of the method (an
    AttributeError from the database's wrapper) was taken for the error (no difference)."""
    monkeypatch.delattr(tw.Tensor, "view_as")
    assert {o.kind for o in outcomes("view_as")} == {"missing"}


def test_a_wrong_error_class_is_still_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    real = tw.gather

    def gather(*args: object, **kwargs: object) -> object:
        try:
            return real(*args, **kwargs)
        except RuntimeError as error:
            raise ValueError(str(error)) from None

    monkeypatch.setattr(tw, "gather", gather)
    monkeypatch.setattr(tw.Tensor, "gather", gather)
    kinds = [o.kind if o is not None else None for o in outcomes("gather")]
    assert kinds and set(kinds) == {"error-type"}


def caught(call: Any) -> BaseException:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the error is what is looked at
        return error
    raise AssertionError("no error")


def test_torch_refusing_tw_tensors_is_no_agreement() -> None:
    """torch's refusal of a tensorweaver tensor is the harness's, whatever class torch's
    error input expects; tensorweaver's own errors worded as torch's, and the harness's
    refusal of a number (``__radd__(2, 3)``, as torch's unbound method), are answers."""
    assert harness.refuses_tw(caught(lambda: torch.add(tw.ones(2), 1)))
    assert harness.refuses_tw(caught(lambda: torch.Tensor.add(tw.ones(2), 1)))
    assert not harness.refuses_tw(caught(lambda: tw.hsplit(tw.ones(4), "a")))
    assert not harness.refuses_tw(caught(lambda: harness.method_of("__radd__")(2, 3)))
