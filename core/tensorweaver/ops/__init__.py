"""Tensor operations: each computes with backend primitives on native arrays and records one
graph node whose gradient rule lives in :mod:`tensorweaver.autograd.gradients`."""
