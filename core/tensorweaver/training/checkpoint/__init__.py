"""Checkpoints of ``tw.fit`` runs: everything to continue a killed run bit-identically."""

from tensorweaver.training.checkpoint.run import Parts, RunCheckpoint

__all__ = ["Parts", "RunCheckpoint"]
