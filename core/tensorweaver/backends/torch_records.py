"""The torch plugin's usable devices of some kinds, without importing torch when it is absent."""

from __future__ import annotations

from tensorweaver import registry
from tensorweaver.contract.records import AVAILABLE, DeviceRecord
from tensorweaver.errors import PluginError


def available(kinds: tuple[str, ...], *, probe: bool = False) -> list[DeviceRecord]:
    """The torch backend's available devices of these kinds; none without a working plugin.

    ``probe`` asks for the details a device query costs (GPU name, capability, memory)."""
    plugin = registry.installed().get("torch")
    if plugin is None or plugin.status != registry.OK:
        return []
    try:
        records = plugin.devices(probe=probe)
    except PluginError:
        return []
    return [r for r in records if r.kind in kinds and r.status == AVAILABLE]
