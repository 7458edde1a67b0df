"""Backend discovery: entry points in, isolated plugins and backend objects out.

At import only entry-point metadata is read. A plugin module is imported when its
backend is first listed or used, each in its own pluggy plugin manager, so a plugin
that fails (import error, incompatible API version, missing primitives, duplicate
name, a hook that raises anything but ``KeyboardInterrupt``, ``SystemExit`` included)
is recorded with status ``error`` and never affects the others.

What Python cannot catch (a segfault or abort in a plugin's native code, a hook that
never returns) is contained only in a child process: ``tw devices``, ``tw --version``
and the ``auto`` choice ask plugins there (:mod:`tensorweaver.isolation`).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorweaver.contract.api import API_VERSION
from tensorweaver.contract.records import (
    AVAILABLE,
    ERROR,
    BackendInfo,
    DeviceRecord,
    Problem,
    is_problem,
)
from tensorweaver.errors import DeviceNotFoundError, PluginError, UnknownBackendError

ENTRY_POINT_GROUP = "tensorweaver.backends"
DISABLE_ENV = "TENSORWEAVER_DISABLE_PLUGINS"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*\Z")
#: How a plugin writes the backend API version it speaks: "MAJOR.MINOR".
API_TEXT = re.compile(r"[0-9]+\.[0-9]+\Z")
#: The backend that cannot be disabled with ``TENSORWEAVER_DISABLE_PLUGINS=all``.
DEFAULT_BACKEND = "numpy"
#: ``auto`` takes the first available device of the first kind in this order;
#: among CPU devices, the NumPy backend first (lowest per-op overhead).
AUTO_KIND_ORDER = ("cuda", "rocm", "mps", "xpu", "gpu", "cpu")
GPU_KINDS = AUTO_KIND_ORDER[:-1]
#: PyTorch spells AMD GPUs "cuda" too: a request for kind cuda also matches rocm records.
KIND_ALIASES = {"cuda": ("cuda", "rocm")}
#: How users add the plugins this project publishes.
KNOWN_INSTALLS = {
    "numpy": "pip install tensorweaver",
    "torch": "pip install tensorweaver[torch]",
    "cunumeric": "pip install tensorweaver[cunumeric]",
    "cupynumeric": "pip install tensorweaver[cunumeric]",
}

OK, DISABLED = "ok", "disabled"


@dataclass(frozen=True)
class PluginStatus:
    """What ``tw.plugins()`` reports for one installed plugin."""

    name: str
    distribution: str
    version: str
    status: str
    error: str = ""
    fix: str = ""
    api_version: str = ""


class Plugin:
    """One entry point: loaded on first use, its hooks called through its own manager."""

    def __init__(self, name: str, entry_point: Any, distribution: str, version: str) -> None:
        self.name = name
        self.entry_point = entry_point
        self.distribution = distribution
        self.version = version
        self.status = OK
        self.error = ""
        self.fix = ""
        self.info: BackendInfo | None = None
        #: Told the step ("import" or a hook's name) before the plugin's code runs it.
        self.on_step: Callable[[str], None] | None = None
        self._hooks: Any = None
        self._lock = threading.Lock()

    def _step(self, step: str) -> None:
        if self.on_step is not None:
            self.on_step(step)

    def fail(self, error: str, fix: str) -> None:
        self.status, self.error, self.fix = ERROR, error, fix

    def load(self) -> bool:
        """Import the plugin module and check its handshake; False if the plugin is broken."""
        with self._lock:
            if self._hooks is None and self.status == OK:
                self._load()
        return self.status == OK

    def _load(self) -> None:
        assert self.entry_point is not None
        import pluggy

        from tensorweaver.contract import hookspecs

        try:
            self._step("import")
            module = self.entry_point.load()
            manager = pluggy.PluginManager(hookspecs.PROJECT)
            manager.add_hookspecs(hookspecs)
            manager.register(module, name=self.name)
            self._step("tw_backend_info")
            info = manager.hook.tw_backend_info()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a plugin must never end discovery
            self.fail(
                f"failed to load ({describe(exc)})",
                f"reinstall or upgrade {self.distribution}, or disable it with "
                f"{DISABLE_ENV}={self.name}",
            )
            return
        if not isinstance(info, BackendInfo):
            self.fail(
                "tw_backend_info did not return a BackendInfo",
                f"upgrade {self.distribution}; its hook returned {type(info).__name__}",
            )
            return
        if info.name != self.name:
            self.fail(
                f"registered as {self.name!r} but says its name is {info.name!r}",
                f"ask the author of {self.distribution} to make them agree",
            )
            return
        problem = api_mismatch(info.api_version)
        if problem:
            core = api_text()
            declared = info.api_version
            if is_api_text(declared):
                fix = (
                    f"install a version of {self.distribution} built for backend API {core}, "
                    f"or a tensorweaver that speaks {declared}"
                )
            else:  # the plugin's own mistake, whatever the core: say how to spell it
                fix = (
                    f"in {self.distribution}'s tw_backend_info, declare "
                    f'api_version = "{intended_api(declared)}" (a string "MAJOR.MINOR")'
                )
            self.fail(
                f"{self.distribution} {self.version} speaks backend API "
                f"{declared!r}, this tensorweaver speaks {core} ({problem})",
                fix,
            )
            return
        self.info, self._hooks = info, manager.hook

    def call(self, hook: str, **kwargs: Any) -> Any:
        """Call one hook; an exception marks the plugin broken and becomes PluginError."""
        if not self.load():
            raise self.as_error()
        self._step(hook)
        try:
            return getattr(self._hooks, hook)(**kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: the caller's process goes on
            self.fail(
                f"hook {hook} raised {describe(exc)}",
                f"report it to the author of {self.distribution}, or disable the plugin "
                f"with {DISABLE_ENV}={self.name}",
            )
            raise self.as_error() from exc

    def as_error(self) -> PluginError:
        if self.status == DISABLED:
            return PluginError(
                f"backend {self.name!r} ({self.distribution}) is disabled by "
                f"{DISABLE_ENV}; remove it from that variable to use it"
            )
        return PluginError(
            f"backend {self.name!r} from {self.distribution} {self.version} "
            f"is broken: {self.error}. Fix: {self.fix}"
        )

    def devices(self, probe: bool) -> list[DeviceRecord]:
        records = self.call("tw_devices", probe=probe)
        if not isinstance(records, list) or not all(
            isinstance(r, DeviceRecord)
            and r.backend == self.name
            and r.name.startswith(self.name + ":")
            for r in records
        ):
            self.fail(
                "tw_devices must return a list of DeviceRecord named '<backend>:...'",
                f"report it to the author of {self.distribution}",
            )
            raise self.as_error()
        return records

    def diagnose(self) -> list[Problem]:
        try:
            problems = self.call("tw_diagnose")
        except PluginError:
            return [Problem(self.error, self.fix)]
        return list(problems or [])

    def error_record(self) -> DeviceRecord:
        return error_record(self.name, self.distribution, self.error or self.status, self.fix)

    def status_record(self) -> PluginStatus:
        return PluginStatus(
            self.name,
            self.distribution,
            self.version,
            self.status,
            self.error,
            self.fix,
            self.info.api_version if self.info else "",
        )


def error_record(name: str, distribution: str, error: str, fix: str) -> DeviceRecord:
    """The one row ``tw devices`` shows for a broken plugin."""
    detail = {"error": error, "fix": fix, "distribution": distribution}
    return DeviceRecord(name=name, backend=name, kind="-", status=ERROR, detail=detail)


def describe(exc: BaseException) -> str:
    """An exception a plugin raised, as words; ``sys.exit`` shows its exit code."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def api_text() -> str:
    return "{}.{}".format(*API_VERSION)


def is_api_text(declared: object) -> bool:
    """Whether ``declared`` is an API version as a plugin must write it: the string "M.m"."""
    return isinstance(declared, str) and bool(API_TEXT.match(declared))


def intended_api(declared: object) -> str:
    """The "MAJOR.MINOR" string a malformed ``api_version`` most likely meant (``2`` and
    ``2.0`` mean "2.0"); this core's version when nothing can be read from it."""
    text = str(declared).strip()
    if re.fullmatch(r"[0-9]+", text):
        return f"{text}.0"
    return text if API_TEXT.match(text) else api_text()


def api_mismatch(declared: object) -> str:
    """Why a plugin's declared API version is incompatible, or '' when it is fine."""
    if not is_api_text(declared):
        return (
            f'not a string of the form "MAJOR.MINOR" (got the {type(declared).__name__} '
            f"{declared!r})"
        )
    major, minor = (int(part) for part in declared.split("."))
    core_major, core_minor = API_VERSION
    if major != core_major:
        return "major versions differ"
    if minor > core_minor:
        return "the plugin needs a newer minor version"
    return ""


def _disabled_names() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}


def _discover() -> dict[str, Plugin]:
    if sys.version_info >= (3, 10):
        from importlib.metadata import entry_points
    else:  # the standard library's entry_points() has no group selection before 3.10
        from importlib_metadata import entry_points

    disabled = _disabled_names()
    by_name: dict[str, list[Plugin]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        plugin = Plugin(ep.name, ep, dist.name if dist else "?", dist.version if dist else "?")
        same = by_name.setdefault(ep.name, [])
        # The same distribution found twice on sys.path: the first copy wins, as imports do.
        if not any(p.distribution == plugin.distribution for p in same):
            same.append(plugin)
    plugins: dict[str, Plugin] = {}
    for name, candidates in sorted(by_name.items()):
        # The project's own distribution keeps its name; otherwise the first alphabetically.
        candidates.sort(key=lambda p: (p.distribution != f"tensorweaver-{name}", p.distribution))
        kept, *others = candidates
        plugins[name] = kept
        for other in others:
            other.fail(
                f"duplicates backend name {name!r}, already provided by {kept.distribution}",
                f"uninstall one of them: pip uninstall {other.distribution}",
            )
            plugins[f"{name} ({other.distribution})"] = other
        if not NAME_PATTERN.match(name):
            kept.fail(
                f"entry-point name {name!r} is not a valid backend name ([a-z][a-z0-9_]*)",
                f"ask the author of {kept.distribution} to rename it",
            )
        if name in disabled or ("all" in disabled and name != DEFAULT_BACKEND):
            for plugin in candidates:
                plugin.status = DISABLED
    return plugins


_discovered: dict[str, Plugin] = {}
_discovery_lock = threading.Lock()


def installed() -> dict[str, Plugin]:
    """The plugins found under the entry-point group, read once on first need.

    Reading entry-point metadata costs tens of milliseconds (importlib.metadata scans
    every distribution), so it happens on the first call that needs a backend, not at
    ``import tensorweaver``.
    """
    if not _discovered:
        with _discovery_lock:
            if not _discovered:
                _discovered.update(_discover())
    return _discovered


_backends: dict[str, Any] = {}
_backends_lock = threading.Lock()


def plugins() -> list[PluginStatus]:
    """Every installed plugin with its distribution, version and status (loads each)."""
    for plugin in installed().values():
        if plugin.status == OK:
            plugin.load()
    return [p.status_record() for p in installed().values()]


def devices(probe: bool = False) -> list[DeviceRecord]:
    """One record per device of every plugin; a broken plugin gives one ``error`` record.

    ``probe=True`` asks plugins to look for real even where that is costly (it
    starts Legate's runtime for cuPyNumeric).
    """
    return [
        record
        for plugin in installed().values()
        if plugin.status != DISABLED
        for record in plugin_devices(plugin, probe)
    ]


def plugin_devices(plugin: Plugin, probe: bool) -> list[DeviceRecord]:
    """What :func:`devices` reports for one plugin."""
    try:
        found = plugin.devices(probe)
    except PluginError:
        return [plugin.error_record()]
    return [_probe_record(plugin, r) for r in found] if probe else found


def _probe_record(plugin: Plugin, record: DeviceRecord) -> DeviceRecord:
    """With a probe, also create the backend: a plugin lacking primitives shows as error."""
    if record.status != AVAILABLE:
        return record
    try:
        backend_object(record.name)
    except PluginError:
        return plugin.error_record()
    except Exception as exc:  # creation failed for an environment reason: show it
        return DeviceRecord(
            record.name,
            record.backend,
            record.kind,
            record.index,
            ERROR,
            {**record.detail, "error": str(exc)},
        )
    return record


def installed_names() -> list[str]:
    return sorted(p.name for p in installed().values() if " " not in p.name)


def find_plugin(name: str) -> Plugin:
    """The plugin selected by ``name`` or one of its aliases; errors say how to fix it."""
    plugin = installed().get(name)
    if plugin is None:
        for candidate in installed().values():
            if candidate.status == OK and candidate.load() and name in candidate.info.aliases:
                plugin = candidate
                break
    if plugin is None:
        install = KNOWN_INSTALLS.get(name, f"pip install <the distribution that provides {name!r}>")
        raise UnknownBackendError(
            f"unknown backend {name!r}; installed backends: "
            f"{', '.join(installed_names()) or 'none'}. To add it: {install}"
        )
    if not plugin.load():
        raise plugin.as_error()
    return plugin


def parse_spec(spec: str) -> tuple[str, str | None, int | None]:
    """Split ``backend[:kind[:index]]`` into its parts, with a clear error on bad syntax."""
    parts = str(spec).strip().lower().split(":")
    if not parts[0] or len(parts) > 3 or (len(parts) == 3 and not parts[2].isdigit()):
        raise ValueError(
            f"bad device spec {spec!r}: expected 'auto' or backend[:kind[:index]], "
            "e.g. 'numpy', 'torch:cuda', 'torch:cuda:1'"
        )
    kind = parts[1] if len(parts) > 1 and parts[1] else None
    return parts[0], kind, int(parts[2]) if len(parts) == 3 else None


def resolve(spec: str) -> DeviceRecord:
    """The device record that ``spec`` names, or an error that lists the real ones."""
    name, kind, index = parse_spec(spec)
    if name == "auto":
        return best_device(AUTO_KIND_ORDER)
    plugin = find_plugin(name)
    records = plugin.devices(probe=True)
    kinds = KIND_ALIASES.get(kind, (kind,))
    matches = [
        r
        for r in records
        if (kind is None or r.kind in kinds) and (index is None or r.index == index)
    ]
    usable = [r for r in matches if r.status == AVAILABLE]
    if usable:
        return usable[0]
    listing = "; ".join(f"{r.name} ({r.status}{_why(r)})" for r in records) or "none"
    hints = " ".join(
        p.message + (f" Fix: {p.fix}" if p.fix else "") for p in plugin.diagnose() if is_problem(p)
    )
    raise DeviceNotFoundError(
        f"no usable device {spec!r} on backend {plugin.name!r}; its devices: {listing}."
        + (f" {hints}" if hints else "")
    )


def _why(record: DeviceRecord) -> str:
    reason = record.detail.get("reason") or record.detail.get("error")
    return f": {reason}" if reason else ""


def best_device(kinds: tuple[str, ...]) -> DeviceRecord:
    """The first available device of the first kind in ``kinds`` over all working plugins.

    Each plugin is asked in a child process once per process (see
    :func:`tensorweaver.isolation.probed_devices`), so one that crashes, hangs or exits
    there is skipped, with a warning that names it and the fix, instead of ending this
    process; only the chosen plugin then runs here.
    """
    from tensorweaver import isolation  # it imports this module

    records = isolation.probed_devices()
    for record in records:
        if record.status == ERROR:
            detail = record.detail
            warnings.warn(
                f"device selection skipped {record.name!r}"
                + (f" ({detail['distribution']})" if "distribution" in detail else "")
                + f": {detail.get('error')}."
                + (f" Fix: {detail['fix']}" if detail.get("fix") else ""),
                RuntimeWarning,
                stacklevel=_caller_level(),
            )
    # NumPy first among equals (lowest per-op overhead); otherwise the plugins' order.
    candidates = sorted(
        (r for r in records if r.status == AVAILABLE), key=lambda r: r.backend != DEFAULT_BACKEND
    )
    for kind in kinds:
        for record in candidates:
            if record.kind == kind:
                return record
    seen = ", ".join(r.name for r in candidates) or "none"
    raise DeviceNotFoundError(
        f"no available device of kind {'/'.join(kinds)}; available: {seen}. "
        "Run `tw devices` to see every backend and what is wrong with it."
    )


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside tensorweaver: a warning points there."""
    package = os.path.dirname(os.path.abspath(__file__))
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        level, frame = level + 1, frame.f_back
    return level


def backend_object(spec: str, *, partial: bool = False) -> Any:
    """The backend object for the device ``spec`` names, created once per device.

    A backend object that lacks required primitives is refused and its plugin marked
    broken, unless ``partial``: the conformance kit and ``tw check`` take it as it is, to
    check what it has (the core then fails only where it calls a missing primitive, also
    later in this process).
    """
    cached = _backends.get(spec)
    if cached is not None:
        return cached
    record = resolve(spec)
    with _backends_lock:
        backend = _backends.get(record.name)
        if backend is None:
            backend = _create(record, partial)
            _backends[record.name] = backend
        _backends[spec] = backend
    return backend


def _create(record: DeviceRecord, partial: bool) -> Any:
    from tensorweaver.contract import ir  # the primitive table: not needed before a backend

    plugin = find_plugin(record.backend)
    backend = plugin.call("tw_create_backend", device=record)
    missing = ir.missing_primitives(backend)
    if missing and not partial:
        plugin.fail(
            f"its backend object lacks required primitives: {', '.join(missing)}",
            f"upgrade {plugin.distribution} to a version that implements backend API "
            f"{api_text()} completely",
        )
        raise plugin.as_error()
    return backend


def created_backends() -> list[Any]:
    """The backend objects created so far in this process (one per device)."""
    unique: dict[int, Any] = {}
    for backend in list(_backends.values()):
        unique[id(backend)] = backend
    return list(unique.values())
