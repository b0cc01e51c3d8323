"""A PyTorch Lightning callback that reports training progress to Lockstep (progress.py).

    from lightning_progress import LockstepProgress
    trainer = L.Trainer(..., callbacks=[LockstepProgress(batch_size=global_batch_size)])

step is trainer.global_step, totalSteps Lightning's estimate (estimated_stepping_batches, left
out when it is unbounded), checkpointStep the global step of the last checkpoint Lightning saved
or resumed from (on_save_checkpoint / on_load_checkpoint). Only global rank 0 writes.
"""
import math
import os
import sys

import lightning as L

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from progress import ProgressReporter  # noqa: E402


class LockstepProgress(L.Callback):
    def __init__(self, batch_size=None, min_interval=1.0):
        self.batch_size = batch_size
        self.min_interval = min_interval
        self.reporter = None
        self.checkpoint_step = None  # before the reporter exists (a resume loads first)

    def on_train_start(self, trainer, pl_module):
        total = trainer.estimated_stepping_batches
        total = int(total) if total and math.isfinite(total) else None
        self.reporter = ProgressReporter(total_steps=total, samples_per_step=self.batch_size,
                                         min_interval=self.min_interval,
                                         rank=trainer.global_rank)
        if self.checkpoint_step is not None:
            self.reporter.checkpointed(self.checkpoint_step)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        # The checkpoint holds the steps done so far: a restart resumes after them.
        self._checkpointed(checkpoint.get("global_step", trainer.global_step))

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        self._checkpointed(checkpoint.get("global_step", trainer.global_step))

    def _checkpointed(self, step):
        self.checkpoint_step = int(step)
        if self.reporter is not None:
            self.reporter.checkpointed(step)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self.reporter is not None:
            self.reporter.report(trainer.global_step)

    def on_train_end(self, trainer, pl_module):
        if self.reporter is not None:
            self.reporter.report(trainer.global_step, force=True)
