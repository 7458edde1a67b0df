"""Run every op of torch's database against tensorweaver and print how they differ.

    .venv/bin/python tests/opinfo/triage.py [--backend numpy] [--dtypes float64,int64]
        [--ops add,linalg.solve] [--layouts noncontiguous,transposed] [--json out.json]

One line per (op, variant, dtype) that differs, with the first difference found; a summary
by kind at the end. ``--layouts`` runs each sample with its tensors as strided views instead
(``opinfo_harness.LAYOUTS``; ``all`` for every one). The suite's shares are
``test_opinfo_sweep.py`` and ``test_strided_sweep.py``.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import opinfo_harness as harness  # noqa: E402
import tensorweaver as tw  # noqa: E402
import torch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--dtypes", default="float64,float32,int64,bool,complex128")
    parser.add_argument("--ops", default="")
    parser.add_argument("--variants", default="function,method,inplace")
    parser.add_argument("--errors", action="store_true", help="also the error inputs")
    parser.add_argument("--json", default="")
    parser.add_argument("--max-samples", type=int, default=12)
    parser.add_argument("--layouts", default="", help="strided views: names, or all")
    parser.add_argument(
        "--known", action="store_true", help="rewrite known_differences.py from the suite's share"
    )
    options = parser.parse_args()
    if options.known:
        write_known()
        return
    wanted = set(options.ops.split(",")) if options.ops else None
    dtypes = [getattr(torch, name) for name in options.dtypes.split(",")]
    layouts = (
        list(harness.LAYOUTS)
        if options.layouts == "all"
        else options.layouts.split(",")
        if options.layouts
        else [None]
    )
    rows = []
    started = time.time()
    with tw.device(options.backend):
        for op in harness.op_db():
            name = harness.op_id(op)
            if wanted and op.name not in wanted and name not in wanted:
                continue
            supported = op.supported_dtypes("cpu")
            for dtype in dtypes:
                if dtype not in supported:
                    continue
                for variant in options.variants.split(","):
                    if (
                        variant != "function"
                        and harness.tw_callable(op, variant) is None
                        and (
                            (op.method_variant if variant == "method" else op.inplace_variant)
                            is None
                        )
                    ):
                        continue
                    for layout in layouts:
                        grads = (
                            variant == "function"
                            and dtype == torch.float64
                            and op.supports_autograd
                        )
                        first = None
                        count = 0
                        try:
                            for index, sample in enumerate(
                                harness.samples(op, dtype, requires_grad=grads)
                            ):
                                if index >= options.max_samples:
                                    break
                                count += 1
                                try:
                                    outcome = harness.run_sample(
                                        op, variant, sample, grads=grads, layout=layout
                                    )
                                except Exception as error:  # noqa: BLE001
                                    outcome = harness.Outcome("harness", harness.describe(error))
                                if outcome is None or outcome.kind == "skip":
                                    continue
                                if outcome.kind != "contiguous-too":
                                    first = (index, outcome)
                                    break
                                # (not the layout's: a later sample may show one that is)
                                first = first or (index, outcome)
                        except Exception as error:  # noqa: BLE001 - the database's sample generator
                            first = (-1, harness.Outcome("samples", harness.describe(error)))
                        if first is not None:
                            index, outcome = first
                            rows.append(
                                dict(
                                    op=name,
                                    variant=variant,
                                    layout=layout or "",
                                    dtype=str(dtype)[6:],
                                    sample=index,
                                    kind=outcome.kind,
                                    detail=outcome.detail,
                                )
                            )
                            print(
                                f"{name:40} {variant:8} {layout or '':13} "
                                f"{str(dtype)[6:]:10} #{index:<3} {outcome}",
                                flush=True,
                            )
            if options.errors and op.error_inputs_func is not None:
                try:
                    for error_input in op.error_inputs("cpu"):
                        outcome = harness.run_error(op, error_input)
                        if outcome is not None and outcome.kind != "skip":
                            rows.append(
                                dict(
                                    op=name,
                                    variant="error",
                                    dtype="",
                                    sample=0,
                                    kind=outcome.kind,
                                    detail=outcome.detail,
                                )
                            )
                            print(f"{name:40} error                    {outcome}", flush=True)
                except Exception as error:  # noqa: BLE001
                    print(f"{name:40} error-inputs generator: {harness.describe(error)}")
    print(f"\n{len(rows)} differences in {time.time() - started:.0f} s:")
    for kind, n in collections.Counter(r["kind"] for r in rows).most_common():
        print(f"  {kind:14} {n}")
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=1))


def write_known() -> None:
    """known_differences.py: the first difference of each op in the suite's share."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from opinfo.test_opinfo_sweep import BACKENDS, differences

    lines = []
    for name, op in sorted(harness.ops_by_id().items()):
        found = [f for backend in BACKENDS for f in differences(op, backend)]
        if found:
            reason = found[0] if len(found[0]) <= 200 else found[0][:197] + "..."
            lines.append(f"    {json.dumps(name)}: {json.dumps(reason)},")
            print(name, reason, flush=True)
    path = Path(__file__).with_name("known_differences.py")
    text = path.read_text()
    head = text[: text.index("KNOWN: dict[str, str] = {")]  # the docstring and WHY stay
    path.write_text(head + "KNOWN: dict[str, str] = {\n" + "\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main()
