"""Declared gaps: how a plugin module's ``conformance_gaps`` is read and matched."""

from __future__ import annotations

import types

import pytest
from tensorweaver.conformance import gaps

IDS = ["primitive/nonzero/0-d", "primitive/nonzero/0-d-zero", "layer/lstm", "packaging/gaps"]


def _module(**attrs):
    return types.SimpleNamespace(__name__="some_plugin", **attrs)


def test_a_module_without_gaps_declares_none():
    assert gaps.declared(_module()) == {}


def test_globs_and_exact_ids_match():
    declared = {"primitive/nonzero/0-d*": "not yet", "layer/lstm": "no LSTM"}
    assert gaps.reason("primitive/nonzero/0-d-zero", declared) == "not yet"
    assert gaps.reason("layer/lstm", declared) == "no LSTM"
    assert gaps.reason("layer/gru", declared) is None
    assert gaps.unmatched(declared, IDS) == []


def test_an_entry_matching_no_check_is_reported():
    declared = {"primitive/nonzeros/*": "typo", "layer/lstm": "no LSTM"}
    assert gaps.unmatched(declared, IDS) == ["primitive/nonzeros/*"]


@pytest.mark.parametrize("value", [["layer/lstm"], {"layer/lstm": ""}, {3: "reason"}])
def test_malformed_gaps_are_refused_with_the_expected_form(value):
    with pytest.raises(TypeError, match="some_plugin.conformance_gaps must be a dict"):
        gaps.declared(_module(conformance_gaps=value))
