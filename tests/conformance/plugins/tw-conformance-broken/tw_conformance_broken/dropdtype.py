"""dropdtype: a primitive that drops a dtype; the kit must name exp and float64."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "dropdtype", "numpy", "tw_conformance_broken.backends:DroppedDtype"
)
