"""A run's checkpoint file: one safetensors file in ``checkpoint_dir``, replaced atomically.

``tw.save`` writes a new file beside the old one and renames it over it, with SHA-256
checksums of the header and data: a process killed while writing leaves the previous
checkpoint whole, and a damaged file is refused on load rather than resumed from.
"""

from __future__ import annotations

import os
from typing import Any

from tensorweaver.selection import Device
from tensorweaver.serialization import SafetensorsError, load, save

FILENAME = "checkpoint.safetensors"
FORMAT = "tensorweaver.fit/1"


def path_in(directory: str) -> str:
    return os.path.join(directory, FILENAME)


def write(directory: str, contents: dict[str, Any]) -> None:
    """Replace the checkpoint in ``directory`` with ``contents``."""
    os.makedirs(directory, exist_ok=True)
    save({"format": FORMAT, **contents}, path_in(directory))


def read(directory: str, device: Device) -> dict[str, Any] | None:
    """The checkpoint in ``directory`` with its tensors on ``device``; None if there is none."""
    path = path_in(directory)
    if not os.path.exists(path):
        return None
    try:
        contents = load(path, map_location=device)
    except SafetensorsError as exc:
        raise ValueError(
            f"fit: the checkpoint {path!r} cannot be resumed from: {exc}; remove it to start over"
        ) from exc
    if not isinstance(contents, dict) or contents.get("format") != FORMAT:
        raise ValueError(
            f"fit: {path!r} is not a checkpoint of tw.fit (format {FORMAT}); checkpoint_dir "
            "must be a directory fit writes to, not one holding other files of that name"
        )
    return contents
