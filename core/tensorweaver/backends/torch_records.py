"""The torch plugin's usable devices of some kinds, without importing torch when it is absent."""

from __future__ import annotations

from tensorweaver import registry
from tensorweaver.contract.records import AVAILABLE, DeviceRecord
from tensorweaver.errors import PluginError


def available(kinds: tuple[str, ...]) -> list[DeviceRecord]:
    """The torch backend's available devices of these kinds; none without a working plugin."""
    plugin = registry.installed().get("torch")
    if plugin is None or plugin.status != registry.OK:
        return []
    try:
        records = plugin.devices(probe=False)
    except PluginError:
        return []
    return [r for r in records if r.kind in kinds and r.status == AVAILABLE]
