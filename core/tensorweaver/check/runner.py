"""Running cases on devices: one case into one result, a set of devices into a report,
serially or in worker processes (:mod:`tensorweaver.check.parallel`)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TextIO

from tensorweaver import isolation, registry
from tensorweaver.check import presence
from tensorweaver.check.case import Case, Failure, Skip, raised
from tensorweaver.check.cases import all_cases
from tensorweaver.check.context import Context, missing_detail
from tensorweaver.check.report import (
    DECOMPOSED,
    FAIL,
    FUSED,
    OK,
    SKIP,
    CaseResult,
    CheckReport,
    path_width,
)
from tensorweaver.contract.records import ERROR
from tensorweaver.errors import BackendError, PluginError
from tensorweaver.ops.fusion import fused_kernel

INF = float("inf")


#: A result's detail is one line of at most this many characters.
DETAIL_LIMIT = 500


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_LIMIT else text[: DETAIL_LIMIT - 3] + "..."


@lru_cache(maxsize=1)
def every_case() -> tuple[Case, ...]:
    """Every case, in run order: that each required primitive is defined, then the rest."""
    return (*presence.cases(), *all_cases())


def path(case: Case, ctx: Context) -> str:
    """For a composite, whether the device's fused kernel runs it or the core's
    decomposition: the core takes ``fused_<name>`` wherever the backend defines it."""
    if case.group != "composite":
        return ""
    name = case.id.split("/")[1]
    return FUSED if fused_kernel(ctx.backend, name) is not None else DECOMPOSED


def evaluate(case: Case, ctx: Context) -> CaseResult:
    """Run ``case`` on ``ctx``'s device; whatever happens becomes a result, never an error."""
    result = _evaluate(case, ctx)
    return replace(result, detail=_one_line(result.detail), path=path(case, ctx))


def _evaluate(case: Case, ctx: Context) -> CaseResult:
    ctx.start_case()
    try:
        measures = list(case.run(ctx))
    except Skip as why:
        return CaseResult(ctx.device, case.id, SKIP, detail=str(why))
    except Failure as f:
        return CaseResult(ctx.device, case.id, FAIL, INF, 0.0, str(f))
    except AttributeError as exc:  # the core called a primitive the backend lacks?
        name = getattr(exc, "name", None)
        detail = f"{name}: {missing_detail(name)}" if name in ctx.missing else raised(exc)
        return CaseResult(ctx.device, case.id, FAIL, INF, 0.0, detail)
    except Exception as exc:  # a case must report a backend's failure, never stop the run
        return CaseResult(ctx.device, case.id, FAIL, INF, 0.0, raised(exc))
    failed = [m for m in measures if not m.ok]
    if failed:
        first = failed[0]
        detail = "; ".join(m.message() for m in failed)
        return CaseResult(ctx.device, case.id, FAIL, first.difference, first.tolerance, detail)
    top = max(measures, key=lambda m: m.difference, default=None)
    if top is None:
        return CaseResult(ctx.device, case.id, OK)
    return CaseResult(ctx.device, case.id, OK, top.difference, top.tolerance, top.what)


def matches(case_id: str, patterns: Sequence[str]) -> bool:
    """Whether a glob or a prefix (``layer``, ``primitive/add``) in ``patterns`` selects it."""
    return any(
        fnmatch.fnmatchcase(case_id, p) or case_id.startswith(p.rstrip("/") + "/") for p in patterns
    )


def select(only: Sequence[str] | None) -> list[Case]:
    cases = every_case()
    return [c for c in cases if matches(c.id, only)] if only else list(cases)


def context(spec: str) -> Context:
    """The device ``spec`` names, its backend object taken even where it lacks primitives
    (the cases that need them fail, each naming the primitive). TF32 tensor cores are
    turned off: the float32 cases hold kernels to float32's accuracy, and cuDNN's
    convolutions and recurrent kernels use TF32 by default (PyTorch's setting)."""
    backend = registry.backend_object(spec, partial=True)
    if getattr(backend, "has_tf32", False):
        backend.set_tf32(False)
    return Context(backend)


def _targets(backend: str | None, report: CheckReport) -> list[Context]:
    """The devices to check: ``backend``'s, else each installed backend's best device."""
    if backend is not None:
        try:
            return [context(backend)]
        except (BackendError, ValueError) as exc:
            report.broken[backend] = str(exc)
            return []
    # Each plugin lists its devices in a child process first: one that crashes, hangs or
    # exits there is reported broken instead of taking this process down with it.
    faulty = {
        r.backend: r.detail for r in isolation.devices() if r.status == ERROR and r.kind == "-"
    }
    contexts = []
    for name, plugin in sorted(registry.installed().items()):
        if plugin.status == registry.DISABLED:
            report.unchecked[name] = f"disabled by {registry.DISABLE_ENV}"
            continue
        if name in faulty:
            detail = faulty[name]
            report.broken[name] = f"{detail.get('error')} -- fix: {detail.get('fix')}"
            continue
        try:
            contexts.append(context(name))
        except PluginError as exc:
            report.broken[name] = str(exc)
        except BackendError as exc:  # installed but no usable device here
            report.unchecked[name] = str(exc)
    return contexts


def run(
    backend: str | None = None,
    only: Sequence[str] | None = None,
    stream: TextIO | None = None,
    jobs: int = 1,
) -> CheckReport:
    """Run the selected cases on the devices ``backend`` names (see :func:`tensorweaver.check`)."""
    report = CheckReport()
    cases = select(only)
    targets = _targets(backend, report)
    width = max((len(c.id) for c in cases), default=0)
    device_width = max((len(ctx.device) for ctx in targets), default=0)
    paths = path_width(any(c.group == "composite" for c in cases))
    results: Iterable[CaseResult]
    if jobs > 1:
        from tensorweaver.check.parallel import evaluate_all

        results = evaluate_all([(ctx.device, c.id) for ctx in targets for c in cases], jobs)
    else:
        results = (evaluate(case, ctx) for ctx in targets for case in cases)
    for result in results:
        report.results.append(result)
        if stream is not None:
            print(result.line(width, device_width, paths), file=stream, flush=True)
    return report
