"""Training in one call: ``fit``, ``evaluate``, ``predict`` and the ``History`` they record;
hooks into a run in :mod:`.callbacks`, resumable runs in :mod:`.checkpoint`."""

from tensorweaver.training import callbacks
from tensorweaver.training.evaluate import evaluate, predict
from tensorweaver.training.fit import fit
from tensorweaver.training.history import History
from tensorweaver.training.losses import LOSSES
from tensorweaver.training.metrics import METRICS
from tensorweaver.training.optimizers import OPTIMIZERS
from tensorweaver.training.schedules import SCHEDULES

__all__ = [
    "LOSSES",
    "METRICS",
    "OPTIMIZERS",
    "SCHEDULES",
    "History",
    "callbacks",
    "evaluate",
    "fit",
    "predict",
]
