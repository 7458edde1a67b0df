"""Plugins asked in child processes, so that no plugin can take the asking process down.

A program runs the plugins it uses in its own process. But ``tw devices``, ``tw --version``
and the ``auto`` choice ask *every* installed plugin, and no Python code survives a plugin
that crashes in native code (a segfault or abort in a driver), never returns, or ends
the process. So these ask each plugin in a child process of its own, all side by side,
each within a timeout: ``--timeout``, else ``TENSORWEAVER_PLUGIN_TIMEOUT``, else 20 s
(several times a cold ``import torch``). As the children run side by side, the timeout
also bounds the whole command.

A child (``python -c _BOOTSTRAP``) gets the caller's ``sys.path`` and environment, so it
discovers the same plugins, and runs the registry's own code for one of them. On its
stdout it writes JSON lines: each step it is about to run (``import``, then each hook),
then its answer. The plugin's own prints go to the child's stderr, which the caller
passes on to its own. A child that dies on a signal, exits without answering or runs out
of time becomes that plugin's ``error`` row: the signal, exit code or timeout, the step,
and the fix.

``auto`` (and ``tw.use_gpu()``) chooses from the children's probed answers, taken once
per process, and then runs only the chosen plugin in the caller. ``tw.devices()``,
``tw.plugins()`` and an explicit ``tw.set_backend(name)`` run plugins in the caller: they
survive any exception a plugin raises (``SystemExit`` too), but not a native crash or a
hang, which no process can survive in itself.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Collection
from typing import Any

from tensorweaver.contract.records import ERROR, DeviceRecord

# From the module, not `from tensorweaver import registry`: in a child that would ask the
# package for an attribute, which runs its whole __init__ (see _BOOTSTRAP).
from tensorweaver.registry import (
    DISABLE_ENV,
    DISABLED,
    OK,
    Plugin,
    PluginStatus,
    created_backends,
    error_record,
    installed,
    plugin_devices,
)

TIMEOUT_ENV = "TENSORWEAVER_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT = 20.0
#: What a child answers: the plugin's status only, its devices, or its probed devices.
INFO, DEVICES, PROBE = "info", "devices", "probe"

# The child imports the registry and the contract only, which is all a plugin may use;
# the package's __init__ (Tensor, autograd, nn: ~0.3 s a child) runs only if a plugin
# reaches past the contract for an attribute of the package.
_BOOTSTRAP = """
import importlib.util, json, sys
sys.path[:] = json.loads(sys.argv[1])
spec = importlib.util.find_spec("tensorweaver")
package = importlib.util.module_from_spec(spec)
def __getattr__(name):
    del package.__getattr__
    spec.loader.exec_module(package)
    return getattr(package, name)
package.__getattr__ = __getattr__
sys.modules["tensorweaver"] = package
from tensorweaver.isolation import child
child(*sys.argv[2:])
"""

Answer = tuple[PluginStatus, list[DeviceRecord]]


def timeout_seconds(timeout: float | None = None) -> float:
    """``timeout``, else ``TENSORWEAVER_PLUGIN_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`."""
    source = f"timeout={timeout!r}"
    if timeout is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return DEFAULT_TIMEOUT
        source = f"{TIMEOUT_ENV}={text!r}"
        try:
            timeout = float(text)
        except ValueError:
            timeout = float("nan")
    if not timeout > 0:
        raise ValueError(f"{source} is not a positive number of seconds; use e.g. 30")
    return timeout


def devices(probe: bool = False, timeout: float | None = None) -> list[DeviceRecord]:
    """What :func:`tensorweaver.devices` returns, each plugin asked in a child process."""
    return [r for _, records in _survey(PROBE if probe else DEVICES, timeout) for r in records]


def plugins(timeout: float | None = None) -> list[PluginStatus]:
    """What :func:`tensorweaver.plugins` returns, each plugin loaded in a child process."""
    return [status for status, _ in _survey(INFO, timeout)]


_probed: list[DeviceRecord] | None = None
_probed_lock = threading.Lock()


def probed_devices() -> list[DeviceRecord]:
    """Every plugin's devices as ``tw devices --probe`` lists them, asked once per process.

    A plugin whose backend this process already uses is asked here, not in a child: its
    hooks have run here already, and its library may hold process-wide state that a
    child would set up a second time (Legate's runtime, which under a multi-node
    launcher a child must not start).
    """
    global _probed
    with _probed_lock:
        if _probed is None:
            used = {backend.device.backend for backend in created_backends()}
            _probed = [r for _, records in _survey(PROBE, None, used) for r in records]
        return _probed


def _survey(mode: str, timeout: float | None, here: Collection[str] = ()) -> list[Answer]:
    """One answer per installed plugin, in discovery order (disabled ones only for INFO);
    the plugins named in ``here`` answer in this process."""
    everyone = [p for p in installed().values() if mode == INFO or p.status != DISABLED]
    # Plugins already broken or disabled need no child: what they say is known here.
    asked = [p for p in everyone if p.status == OK and p.name not in here]
    answers = dict(zip(map(id, asked), _ask(asked, mode, timeout_seconds(timeout))))
    return [answers[id(p)] if id(p) in answers else _answer_here(p, mode) for p in everyone]


def _answer_here(plugin: Plugin, mode: str) -> Answer:
    """The plugin's answer, from this process."""
    if mode == INFO:
        plugin.load()
        return plugin.status_record(), []
    records = plugin_devices(plugin, mode == PROBE)
    return plugin.status_record(), records


def _ask(plugins: list[Plugin], mode: str, timeout: float) -> list[Answer]:
    """Each plugin's answer from a child of its own; all run at once, none past ``timeout``."""
    children: list[_Child] = []
    try:
        for plugin in plugins:
            children.append(_Child(plugin, mode))
        deadline = time.monotonic() + timeout
        for one in children:
            one.wait(deadline)
    finally:  # an interrupted caller leaves no child behind
        for one in children:
            one.stop()
    return [one.answer(timeout) for one in children]


class _Child:
    """One child process answering for one plugin; its output goes to unnamed files, so a
    chatty child never blocks on a full pipe while the caller waits for another."""

    def __init__(self, plugin: Plugin, mode: str) -> None:
        self.plugin = plugin
        self.timed_out = False
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        argv = [sys.executable, "-c", _BOOTSTRAP, json.dumps(sys.path), mode, plugin.name]
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            # Its own process group: a timeout also ends what the plugin started, and the
            # terminal's Ctrl-C reaches only the caller, which then stops every child.
            start_new_session=True,
        )

    def wait(self, deadline: float) -> None:
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                if hasattr(os, "killpg"):
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()
            except ProcessLookupError:  # it ended meanwhile
                pass
            self.process.wait()

    def answer(self, timeout: float) -> Answer:
        """The child's answer, or the plugin's error row when it gave none."""
        with self.out, self.err:
            self.out.seek(0)
            lines = self.out.read().decode(errors="replace").splitlines()
            self.err.seek(0)
            said = self.err.read().decode(errors="replace")
        if said:
            sys.stderr.write(said)
        step = None
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:  # the last line, cut short by a crash
                continue
            if "status" in message:
                status = PluginStatus(**message["status"])
                return status, [DeviceRecord(**r) for r in message["records"]]
            step = message["step"]
        error, fix = self._fault(step, timeout)
        plugin = self.plugin
        status = PluginStatus(plugin.name, plugin.distribution, plugin.version, ERROR, error, fix)
        return status, [error_record(plugin.name, plugin.distribution, error, fix)]

    def _fault(self, step: str | None, timeout: float) -> tuple[str, str]:
        """What went wrong in a child that gave no answer, and how to fix it."""
        dist, name = self.plugin.distribution, self.plugin.name
        remedy = (
            f"upgrade or reinstall {dist}, uninstall it (pip uninstall {dist}), "
            f"or disable it with {DISABLE_ENV}={name}"
        )
        where = {None: "while starting", "import": "while being imported"}.get(
            step, f"in its {step} hook"
        )
        code = self.process.returncode
        if self.timed_out:
            return (
                f"did not answer within {timeout:g} s (stuck {where})",
                "if it is only slow, allow it more time (tw devices --timeout SECONDS, or "
                f"{TIMEOUT_ENV}=SECONDS); otherwise {remedy}",
            )
        if code < 0:
            return f"crashed with {_signal_text(-code)} {where}", remedy
        return f"ended its process with exit code {code} {where}, without answering", remedy


def _signal_text(number: int) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    return f"{sig.name} ({signal.strsignal(sig)})"


def child(mode: str, name: str) -> None:
    """The child's side: answer for the plugin ``name`` on stdout, then end at once."""
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the plugin's own prints go to stderr, never into the answer

    def say(**message: Any) -> None:
        channel.write(json.dumps(message, default=str) + "\n")
        channel.flush()

    plugin = installed()[name]
    plugin.on_step = lambda step: say(step=step)
    status, records = _answer_here(plugin, mode)
    say(status=dataclasses.asdict(status), records=[r.as_dict() for r in records])
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter shutdown: the answer is out, and a library's exit handlers (Legate's
    # runtime) may be slow or crash.
    os._exit(0)
