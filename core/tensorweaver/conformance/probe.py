"""Packaging probes the kit runs in a fresh interpreter; each prints one JSON document.

``python -m tensorweaver.conformance.probe import NAME`` loads backend ``NAME``'s plugin
module after ``import tensorweaver`` (what discovery has already paid for) and lists the
third-party modules the plugin module brought in.

``python -m tensorweaver.conformance.probe missing NAME MODULE...`` hides ``MODULE`` (as
if it were not installed: imports fail, ``importlib.util.find_spec`` returns None), then
calls the plugin's hooks and reports what each returned or raised.
"""

from __future__ import annotations

import importlib.abc
import json
import sys
import sysconfig
import traceback
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

GROUP = "tensorweaver.backends"


def _entry_point(name: str) -> Any:
    if sys.version_info >= (3, 10):
        found = entry_points(group=GROUP)
    else:  # pragma: no cover - Python 3.9
        found = entry_points().get(GROUP, [])
    for ep in found:
        if ep.name == name:
            return ep
    raise SystemExit(f"no entry point {name!r} in group {GROUP!r}")


def _is_stdlib(name: str) -> bool:
    if sys.version_info >= (3, 10):
        return name in sys.stdlib_module_names
    module = sys.modules.get(name)  # pragma: no cover - Python 3.9
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin in (None, "built-in", "frozen"):
        return True
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return stdlib in Path(origin).parents and "site-packages" not in Path(origin).parts


def light_import(name: str) -> dict[str, Any]:
    import pluggy  # noqa: F401  (discovery imports it before any plugin)

    import tensorweaver  # noqa: F401

    ep = _entry_point(name)
    own = ep.value.split(":")[0].split(".")[0]
    before = set(sys.modules)
    ep.load()
    new = sorted({m.split(".")[0] for m in set(sys.modules) - before})
    allowed = {own, "tensorweaver", "pluggy"}
    third_party = [
        m for m in new if m not in allowed and not m.startswith("_") and not _is_stdlib(m)
    ]
    return {"module": ep.value, "third_party": third_party}


class _Hidden(importlib.abc.MetaPathFinder):
    """A finder that knows nothing of the hidden modules and delegates the rest."""

    def __init__(self, finder: Any, hidden: set[str]) -> None:
        self.finder = finder
        self.hidden = hidden

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.hidden:
            return None
        find = getattr(self.finder, "find_spec", None)
        return find(fullname, path, target) if find else None

    def __getattr__(self, attr: str) -> Any:
        # find_distributions, invalidate_caches: metadata stays visible, as for a real user
        # whose library was uninstalled but whose plugin is still there
        return getattr(self.finder, attr)


def _describe(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}: {exc}"


def _call(hook: Any, **kwargs: Any) -> dict[str, Any]:
    try:
        value = hook(**kwargs)
    except Exception as exc:  # the point of the probe: report it
        return {"raised": _describe(exc)}
    if isinstance(value, list):
        return {"value": [getattr(v, "__dict__", repr(v)) for v in value]}
    return {"value": repr(value)}


def missing_library(name: str, modules: list[str]) -> dict[str, Any]:
    import pluggy

    import tensorweaver  # noqa: F401
    from tensorweaver.contract import hookspecs

    hidden = set(modules)
    sys.meta_path[:] = [_Hidden(f, hidden) for f in sys.meta_path]
    for loaded in [m for m in sys.modules if m.split(".")[0] in hidden]:
        del sys.modules[loaded]
    try:
        module = _entry_point(name).load()
    except Exception as exc:  # the plugin module itself needs the library
        return {"import of the plugin module": {"raised": _describe(exc)}}
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(module, name=name)
    hook = manager.hook
    return {
        "tw_backend_info": _call(hook.tw_backend_info),
        "tw_devices(probe=False)": _call(hook.tw_devices, probe=False),
        "tw_devices(probe=True)": _call(hook.tw_devices, probe=True),
        "tw_diagnose": _call(hook.tw_diagnose),
    }


def main(argv: list[str]) -> None:
    command, name, *rest = argv
    result = light_import(name) if command == "import" else missing_library(name, rest)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
