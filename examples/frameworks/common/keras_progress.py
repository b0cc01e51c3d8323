"""A Keras callback that reports training progress to Lockstep (progress.py).

    from keras_progress import LockstepProgress
    model.fit(..., callbacks=[LockstepProgress(batch_size=global_batch_size)])

step counts the batches trained in this fit() (plus `initial_step`, e.g. the step a checkpoint
resumed at); totalSteps is epochs x steps per epoch when Keras knows them. checkpointStep is the
step of the newest checkpoint: `initial_step` at the start (what the run resumed from), then the
step at the end of each epoch when `checkpoint_every_epoch` (a ModelCheckpoint or BackupAndRestore
that saves every epoch), or whatever `checkpointed(step)` is told by the training script. Only the process with
LOCKSTEP_RANK 0 writes (in TensorFlow's MultiWorkerMirroredStrategy that is the chief, or worker
0 without one).
"""
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from progress import ProgressReporter  # noqa: E402


class LockstepProgress(tf.keras.callbacks.Callback):
    def __init__(self, batch_size=None, initial_step=0, min_interval=1.0,
                 checkpoint_every_epoch=False):
        super().__init__()
        self.batch_size = batch_size
        self.step = initial_step
        self.min_interval = min_interval
        self.checkpoint_every_epoch = checkpoint_every_epoch
        self.checkpoint_step = initial_step
        self.reporter = None

    def checkpointed(self, step):
        """Records that a checkpoint now holds `step` (the next report carries it)."""
        self.checkpoint_step = int(step)
        if self.reporter is not None:
            self.reporter.checkpointed(step)

    def on_train_begin(self, logs=None):
        epochs, steps = self.params.get("epochs"), self.params.get("steps")
        total = epochs * steps if epochs and steps else None
        self.reporter = ProgressReporter(total_steps=total, samples_per_step=self.batch_size,
                                         min_interval=self.min_interval)
        self.reporter.checkpointed(self.checkpoint_step)

    def on_epoch_end(self, epoch, logs=None):
        if self.checkpoint_every_epoch:
            self.checkpointed(self.step)

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.reporter is not None:
            self.reporter.report(self.step)

    def on_train_end(self, logs=None):
        if self.reporter is not None:
            self.reporter.report(self.step, force=True)
