"""Exchange with other frameworks: PyTorch modules (``to_torch_module``) and DLPack."""
