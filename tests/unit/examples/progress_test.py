"""examples/frameworks/common/progress.py: what the examples' trainers append to
LOCKSTEP_PROGRESS_FILE, in the format the launcher reads (docs/launcher.md "Progress")."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "examples", "frameworks", "common"))
import progress  # noqa: E402


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class ProgressTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "progress.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def lines(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f.read().splitlines()]

    def test_append_writes_one_json_line_with_the_launchers_keys(self):
        progress.append_progress(self.path, 12, 100, 812.51234)
        progress.append_progress(self.path, 13)
        self.assertEqual(self.lines(), [
            {"step": 12, "totalSteps": 100, "samplesPerSecond": 812.512}, {"step": 13}])

    def test_reporter_rate_limits_and_measures_samples_per_second(self):
        clock = FakeClock()
        r = progress.ProgressReporter(total_steps=50, samples_per_step=32, min_interval=1.0,
                                      path=self.path, rank=0, clock=clock)
        self.assertTrue(r.report(0))
        clock.now += 0.5
        self.assertFalse(r.report(5))  # within min_interval
        clock.now += 1.5
        self.assertTrue(r.report(10))  # 10 steps x 32 samples in 2 s
        self.assertTrue(r.report(11, force=True))
        self.assertEqual(self.lines(), [
            {"step": 0, "totalSteps": 50},
            {"step": 10, "totalSteps": 50, "samplesPerSecond": 160.0},
            {"step": 11, "totalSteps": 50}])

    def test_reports_carry_the_newest_checkpoint_step_once_there_is_one(self):
        progress.append_progress(self.path, 7, checkpoint_step=0)
        r = progress.ProgressReporter(path=self.path, rank=0, min_interval=0)
        self.assertTrue(r.report(8))
        r.checkpointed(8)
        self.assertTrue(r.report(9))
        self.assertEqual(self.lines(), [
            {"step": 7, "checkpointStep": 0}, {"step": 8}, {"step": 9, "checkpointStep": 8}])

    def test_only_rank_zero_writes(self):
        r = progress.ProgressReporter(path=self.path, rank=1)
        self.assertFalse(r.enabled)
        self.assertFalse(r.report(3))
        self.assertFalse(os.path.exists(self.path))

    def test_a_reporter_without_a_file_or_with_a_broken_one_never_raises(self):
        os.environ.pop("LOCKSTEP_PROGRESS_FILE", None)
        self.assertFalse(progress.ProgressReporter(rank=0).report(1))
        broken = progress.ProgressReporter(path=os.path.join(self.dir.name, "gone", "p"), rank=0)
        self.assertFalse(broken.report(1))
        self.assertFalse(broken.enabled)


if __name__ == "__main__":
    unittest.main()
