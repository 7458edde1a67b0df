"""Callbacks of ``tw.fit``, ``tw.evaluate`` and ``tw.predict``: hooks into a run, and the
built-in ones."""

from tensorweaver.training.callbacks.base import Callback, CallbackList, RunState
from tensorweaver.training.callbacks.csv_logger import CSVLogger
from tensorweaver.training.callbacks.early_stopping import EarlyStopping
from tensorweaver.training.callbacks.lambda_callback import LambdaCallback
from tensorweaver.training.callbacks.lr_monitor import LearningRateMonitor
from tensorweaver.training.callbacks.model_checkpoint import ModelCheckpoint
from tensorweaver.training.callbacks.tensorboard import TensorBoard

__all__ = [
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "LambdaCallback",
    "LearningRateMonitor",
    "ModelCheckpoint",
    "RunState",
    "TensorBoard",
]
