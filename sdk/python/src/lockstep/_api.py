"""The TrainingJob API's names the SDK relies on (crds/, docs/api.md, protocol/contract.h)."""

GROUP = "lockstep.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainingJob"
PLURAL = "trainingjobs"

# Pod labels the operator writes (operator/api/children.h).
LABEL_JOB_NAME = "lockstep.dev/job-name"
LABEL_ROLE = "lockstep.dev/role"
LABEL_REPLICA_INDEX = "lockstep.dev/replica-index"
LABEL_ATTEMPT = "lockstep.dev/attempt"

# The trainer container's env the operator writes (protocol/contract.h).
ENV_NODE_RANK = "LOCKSTEP_NODE_RANK"
ENV_SPARE = "LOCKSTEP_SPARE"

FRAMEWORKS = ("PyTorch", "TensorFlow", "JAX", "Horovod", "Ray", "Generic")
TERMINAL_STATES = ("Succeeded", "Failed")
STATES = ("Pending", "Scheduling", "Running", "Restarting", "Succeeded", "Failed", "Suspended",
          "Queued")
