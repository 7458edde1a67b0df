"""Check that each wheel in a folder is installed, from that wheel, into the running interpreter.

    python check_installed.py DIST

For every ``*.whl`` in DIST: the distribution of that name is installed at the wheel's
version (not another project of the same name from a package index), its packages are
imported from this environment (not from a clone on ``sys.path``), each package has its
``py.typed`` marker, and every entry point it declares loads. Prints one line per
distribution; exits 1 naming what is wrong.
"""

from __future__ import annotations

import importlib.util
import sys
from importlib import metadata
from pathlib import Path


def problems(wheel: Path) -> list[str]:
    """What is wrong with the installed copy of ``wheel``'s distribution."""
    name, version = wheel.name.split("-")[:2]
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return [f"{name} is not installed"]
    if dist.version != version:
        return [f"{name} {dist.version} is installed, not the built {version}"]
    found = []
    packages = (dist.read_text("top_level.txt") or "").split()
    for package in packages:
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin if spec and spec.origin else "")
        if not origin.is_relative_to(sys.prefix):
            found.append(f"{package} is imported from {origin}, not from {sys.prefix}")
        elif not (origin.parent / "py.typed").is_file():
            found.append(f"{package} has no py.typed marker")
    for entry in dist.entry_points:
        try:
            entry.load()
        except Exception as error:  # any failure to load is the finding
            found.append(f"entry point {entry.group}:{entry.name} = {entry.value}: {error!r}")
    return found or ([] if packages else [f"{name} installs no package"])


def main(dist_dir: str) -> int:
    wheels = sorted(Path(dist_dir).glob("*.whl"))
    if not wheels:
        print(f"check_installed: no wheel in {dist_dir}", file=sys.stderr)
        return 1
    failed = False
    for wheel in wheels:
        found = problems(wheel)
        failed = failed or bool(found)
        print(f"{wheel.name}: " + ("; ".join(found) if found else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
