"""The kit is green against the project's own backends: every check passes or is skipped
for a dtype the device lacks, with no declared gap, and the run says so.

The default suite runs the whole kit on NumPy, the reference backend, and a part of it on
torch:cpu and on cuPyNumeric (about 0.4 ms an op), every group of checks but the compiled step
still in it; CI runs the whole kit on both right after the suite (scripts/check-kits.sh), as
does ``TW_KIT_FULL=1`` here. The part leaves out the widening cases (every layout and dtype of
each primitive: more than half of a kit run; tests/primitives checks the primitives on every
backend too) and the cases in the dtypes beside float32, float64, int64 and bool (float16,
bfloat16, uint8, int8, int16, int32: each backend hands them to its library as it does those)
and on an empty batch or a 0-d tensor. On torch:cpu it also leaves out the compiled training
step (a cold torch.compile in the kit's fresh interpreter: more than half of that run's CPU;
tests/compile/test_compile_graph.py compiles a step through the plugin's hook in the suite's
own process, where inductor is warm). On cuPyNumeric it also leaves out every case in the three view
layouts (broadcast, stepped, transposed) and in float64 and complex128: the plugin has no fused
kernels, so those cases hand the same primitives the views their own cases already check, and
their float32 and complex64 twins run the same primitive sequences; and the layers built from
composites checked on their own (convolution, pooling, resampling, lstm, gru, transformer,
residual and gat: two thirds of the layers' time there; the cheaper layers stay). torch:cpu
keeps the view layouts and float64: its fused kernels meet the views there.
"""

from __future__ import annotations

import os

#: Kit case ids end in their layout or dtype: ``-k "float16]"`` matches only such a suffix.
_WIDER_DTYPES = "float16] or bfloat16] or int8] or int16] or int32] or 0-d] or empty]"
#: The checks the default suite leaves out, by backend (pytest -k expressions).
LEFT_OUT = {
    "torch:cpu": f"widening or {_WIDER_DTYPES} or compile/",
    "cunumeric": f"widening or {_WIDER_DTYPES} or transposed] or stepped] or broadcast]"
    " or float64] or complex128 or layer/convolution or layer/pooling or layer/resampling"
    " or layer/lstm or layer/gru or layer/transformer or layer/residual or layer/gat",
}


def test_kit_passes_on_built_in_backends(plain, built_in, tmp_path):
    whole = built_in not in LEFT_OUT or os.environ.get("TW_KIT_FULL")
    run = plain.kit(built_in, tmp_path, *(() if whole else ("-k", f"not ({LEFT_OUT[built_in]})")))
    assert run.returncode == 0, run.output[-5000:]
    assert not run.failures
    assert set(run.outcomes.values()) <= {"passed", "skipped"}
    verdict = "is conformant" if whole else "passed every selected check"
    assert f"{built_in} {verdict}" in run.verdict(), run.verdict()
    # every group of checks ran
    groups = {check.split("/")[0] for check, outcome in run.outcomes.items() if outcome == "passed"}
    assert groups >= {"packaging", "primitive", "core", "host", "autograd", "composite", "layer"}
    if not whole:  # composites did run in float32, and layers beside the linear one
        layouts = {c.rsplit("/", 1)[-1] for c in run.outcomes if c.startswith("composite/")}
        if built_in == "cunumeric":
            assert layouts == {"float32"}, layouts
        else:  # its fused kernels meet the views
            assert {"float32", "broadcast", "stepped", "transposed"} <= layouts, layouts
        assert len([c for c in run.outcomes if c.startswith("layer/")]) >= 10, run.outcomes
        assert not any(c.startswith("widening/") for c in run.outcomes)
