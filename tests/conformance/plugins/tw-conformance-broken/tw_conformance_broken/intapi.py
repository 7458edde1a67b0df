"""intapi: declares api_version = 2, an int; the fix must say to declare the string "2.0"."""

from tw_conformance_broken.hooks import hooks

tw_backend_info, tw_devices, tw_diagnose, tw_create_backend = hooks(
    "intapi", "numpy", "tw_conformance_broken.backends:CStyleRemainder", api_version=2
)
