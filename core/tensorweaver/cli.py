"""The ``tw`` command: ``tw devices [--json] [--probe] [--timeout SECONDS]``,
``tw doctor [--json] [--timeout SECONDS]``, ``tw check [--backend SPEC] [--jobs N]``,
``tw --version [--timeout SECONDS]``.

``tw devices`` and ``tw --version`` ask each plugin in a child process of its own
(:mod:`tensorweaver.isolation`), so they always finish, within the timeout, and a plugin
that crashes, hangs or exits is a row with its fault and the fix.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterator, Sequence

from tensorweaver import isolation
from tensorweaver.contract.records import DeviceRecord
from tensorweaver.version import __version__


def _detail_text(record: DeviceRecord) -> str:
    detail = dict(record.detail)
    if record.status == "error":
        return f"{detail.pop('error', '')} -- fix: {detail.pop('fix', '')}"
    return " ".join(f"{key}={_shell_word(value)}" for key, value in _flat(detail))


def _flat(detail: dict, prefix: str = "") -> Iterator[tuple[str, object]]:
    """``key, value`` pairs, a nested dict's keys joined with dots (``config.gpus``)."""
    for key, value in detail.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _shell_word(value: object) -> str:
    """A value as one word, quoted as a shell would need it, so that pairs stay apart."""
    text = str(value)
    return shlex.quote(text) if not text or any(c.isspace() or c in "'\"" for c in text) else text


def format_table(records: Sequence[DeviceRecord]) -> str:
    rows = [("DEVICE", "KIND", "STATUS", "DETAIL")]
    rows += [(r.name, r.kind, r.status, _detail_text(r)) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows
    )


def version_text(timeout: float | None = None) -> str:
    lines = [f"tensorweaver {__version__}"]
    for status in isolation.plugins(timeout):
        state = "" if status.status == "ok" else f" [{status.status}: {status.error or '-'}]"
        lines.append(f"  {status.name}: {status.distribution} {status.version}{state}")
    return "\n".join(lines)


def cmd_devices(args: argparse.Namespace) -> int:
    records = isolation.devices(probe=args.probe, timeout=args.timeout)
    if args.json:
        print(json.dumps([r.as_dict() for r in records], indent=2, default=str))
    else:
        print(format_table(records))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from tensorweaver.doctor import diagnose, render

    report = diagnose(args.timeout)
    print(render.as_json(report) if args.json else render.as_text(report))
    return 1 if report.worst() == "error" else 0


def cmd_check(args: argparse.Namespace) -> int:
    from tensorweaver.check import check

    report = check(args.backend, only=args.only, stream=sys.stdout, jobs=args.jobs)
    print(report.summary())
    return 0 if report.ok else 1


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of processes, got {text!r}")
    return value


TIMEOUT_HELP = (
    "seconds each plugin may take; plugins are asked side by side, so this also bounds the "
    f"command (default: ${isolation.TIMEOUT_ENV}, else {isolation.DEFAULT_TIMEOUT:g})"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tw", description="TensorWeaver command line.")
    parser.add_argument("--version", action="store_true", help="show core and plugin versions")
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS", help=TIMEOUT_HELP)
    commands = parser.add_subparsers(dest="command")
    devices = commands.add_parser("devices", help="list every backend's devices")
    devices.add_argument("--json", action="store_true", help="print JSON instead of a table")
    devices.add_argument(
        "--probe",
        action="store_true",
        help="look for real, even where costly (starts Legate's runtime)",
    )
    # SUPPRESS keeps `tw --timeout 5 devices` too: no default here overwrites the main one.
    devices.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help=TIMEOUT_HELP,
    )
    devices.set_defaults(run=cmd_devices)
    doctor = commands.add_parser(
        "doctor",
        help="diagnose the installation and print each fix as a command",
        description="Check the core and every plugin (versions, API handshake, what is "
        "disabled), what would make more devices usable, and the thread settings; print "
        "each problem's fix as a command. Exits 1 when a plugin is broken.",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON instead of text")
    doctor.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help=TIMEOUT_HELP,
    )
    doctor.set_defaults(run=cmd_doctor)
    check = commands.add_parser(
        "check",
        help="check every primitive, composite and layer against NumPy float64",
        description="Run every primitive, composite and layer case on a device against "
        "NumPy in float64, outputs and gradients; one line per case, then a verdict. "
        "Exits 1 when a case fails.",
    )
    check.add_argument(
        "--backend",
        metavar="SPEC",
        help="device to check, e.g. numpy, torch:cuda, cunumeric (default: the best device "
        "of every installed backend)",
    )
    check.add_argument(
        "--only",
        action="append",
        metavar="PATTERN",
        help="run only cases whose id matches this glob or prefix, e.g. 'layer', "
        "'primitive/add/*' (repeatable)",
    )
    check.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=1,
        metavar="N",
        help="run the cases in N worker processes (same results, same order; default 1)",
    )
    check.set_defaults(run=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version or args.command in ("devices", "doctor"):
        try:  # the default may come from a badly set environment variable
            args.timeout = isolation.timeout_seconds(args.timeout)
        except ValueError as exc:
            parser.error(str(exc))
    if args.version:
        print(version_text(args.timeout))
        return 0
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
