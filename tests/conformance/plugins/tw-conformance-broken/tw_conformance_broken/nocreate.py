"""nocreate: everything right but its backend's creation, which raises; the packaging and
handshake checks must pass anyway."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "nocreate", "numpy", "tw_conformance_broken.backends:NoDevice"
)
