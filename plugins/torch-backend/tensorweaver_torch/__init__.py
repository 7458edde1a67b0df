"""TensorWeaver's PyTorch backend (the hooks are in :mod:`tensorweaver_torch.plugin`)."""

__version__ = "0.3.0"
