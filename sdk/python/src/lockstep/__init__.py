"""Lockstep's Python SDK: submit, watch and read TrainingJobs (docs/sdk.md).

    from lockstep import TrainingJobClient
    client = TrainingJobClient()
    job = client.train(script="/examples/frameworks/pytorch/train.py", workers=2)
    for line in client.logs(job):
        print(line)
"""

from lockstep.client import (JobFailedError, TrainingJobClient, TrainingJobError,
                             WaitTimeoutError)
from lockstep.convert import ConversionError, ConversionWarning, convert
from lockstep.ranks import LogLine, RankStatus
from lockstep.spec import SpecError

__all__ = ["TrainingJobClient", "TrainingJobError", "JobFailedError", "WaitTimeoutError",
           "SpecError", "LogLine", "RankStatus", "convert", "ConversionError",
           "ConversionWarning"]
__version__ = "0.1.0"
