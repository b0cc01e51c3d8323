"""Training progress for Lockstep: `kubectl get tj` shows it, and status.progress holds it.

The launcher gives every training process LOCKSTEP_PROGRESS_FILE, a file in a directory of its
own in the pod. Append one JSON line per report, and node 0's launcher tells the operator the
latest one:

    {"step": 1200, "totalSteps": 5000, "samplesPerSecond": 812.5, "checkpointStep": 1000}

"step" (an integer >= 0) is required; "totalSteps" (0 or absent: unknown), "samplesPerSecond" and
"checkpointStep" (the step the newest checkpoint holds: a restart redoes the steps after it, which
status.goodput counts as recomputed, docs/goodput.md) are optional; other keys are ignored. Only node 0's file is read, so global rank 0 reports (the
reporter below does nothing on other ranks). Each line is one write on an O_APPEND descriptor,
so a line is never torn, and the launcher may empty the file once it passed 1 MiB.

No dependencies: copy this file next to your training script, or put examples/frameworks/common
on sys.path. A report never raises: progress is for people, training goes on without it.
"""
import json
import os
import time


def append_progress(path, step, total_steps=None, samples_per_second=None, checkpoint_step=None):
    """Appends one progress line to `path` (one write, O_APPEND). Raises OSError."""
    report = {"step": int(step)}
    if total_steps:
        report["totalSteps"] = int(total_steps)
    if samples_per_second is not None:
        report["samplesPerSecond"] = round(float(samples_per_second), 3)
    if checkpoint_step is not None:
        report["checkpointStep"] = int(checkpoint_step)
    line = (json.dumps(report) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class ProgressReporter:
    """Reports progress from global rank 0, at most every `min_interval` seconds.

    `samples_per_step`: the global batch size; with it, samplesPerSecond is measured between
    reports. `path`/`rank` default to LOCKSTEP_PROGRESS_FILE and LOCKSTEP_RANK (RANK otherwise).
    """

    def __init__(self, total_steps=None, samples_per_step=None, min_interval=1.0, path=None,
                 rank=None, clock=time.monotonic):
        if rank is None:
            rank = int(os.environ.get("LOCKSTEP_RANK", os.environ.get("RANK", "0")))
        self.path = (path if path is not None else os.environ.get("LOCKSTEP_PROGRESS_FILE")) \
            if rank == 0 else None
        self.total_steps = total_steps
        self.samples_per_step = samples_per_step
        self.min_interval = min_interval
        self.clock = clock
        self._last = None  # (time, step) of the last report
        self.checkpoint_step = None  # the step the newest checkpoint holds, once one was saved

    @property
    def enabled(self):
        return bool(self.path)

    def checkpointed(self, step):
        """Records that a checkpoint now holds `step`; the next report carries it."""
        self.checkpoint_step = int(step)

    def report(self, step, samples_per_second=None, force=False):
        """Reports `step` (steps done); True when a line was written."""
        if not self.path:
            return False
        now = self.clock()
        if self._last is not None and not force and now - self._last[0] < self.min_interval:
            return False
        if samples_per_second is None and self.samples_per_step and self._last is not None:
            elapsed, steps = now - self._last[0], step - self._last[1]
            if elapsed > 0 and steps > 0:
                samples_per_second = steps * self.samples_per_step / elapsed
        try:
            append_progress(self.path, step, self.total_steps, samples_per_second,
                            self.checkpoint_step)
        except OSError:
            self.path = None  # e.g. the directory is gone: stop trying
            return False
        self._last = (now, step)
        return True
