"""The sdk tier's cluster side: the real local control plane ($KUBECONFIG, hack/cluster.sh), and
for the e2e tests a test node agent and an operator of this run's own, as
tests/e2e/frameworks/framework_cluster.cc starts them (docs/e2e.md): a namespace, Nodes in a
topology block of their own, a bridge and a free /24, the operator watching only that namespace
with its gang scheduler on."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import string
import subprocess
import time
import urllib.request
from typing import Any, Callable

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LOCKSTEP_BUILD_DIR", os.path.join(REPO, "build"))
TRAINING_OPERATOR = "github.com/kubeflow/training-operator@v1.8.1"


def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> str:
    out = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                         timeout=120)
    if check and out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}):\n"
                             f"{out.stderr}{out.stdout}")
    return out.stdout + (out.stderr if not check else "")


def cluster_missing() -> str:
    """Why this machine cannot run the cluster tests, or "" when it can."""
    if not os.environ.get("KUBECONFIG"):
        return "KUBECONFIG is not set (hack/cluster.sh up prints it)"
    if shutil.which("kubectl") is None:
        return "kubectl is not on PATH"
    return ""


def e2e_missing() -> str:
    why = cluster_missing()
    if why:
        return why
    if os.geteuid() != 0:
        return "the test node agent needs root"
    for binary in ("lockstep-test-node-agent", "lockstep-operator", "lockstep-launcher"):
        if not os.access(os.path.join(BUILD, "bin", binary), os.X_OK):
            return f"{BUILD}/bin/{binary} is not built"
    if not os.access(os.path.join(REPO, ".venv", "bin", "python"), os.X_OK):
        return ".venv is missing (hack/setup-venv.sh)"
    return ""


def random_id(n: int = 5) -> str:
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def install_crd() -> None:
    kubectl("apply", "--server-side", "--force-conflicts", "-f", os.path.join(REPO, "crds"))
    kubectl("wait", "--for=condition=Established", "crd/trainingjobs.lockstep.dev",
            "--timeout=60s")


def create_namespace(name: str) -> None:
    kubectl("create", "namespace", name)
    # Pods need the default ServiceAccount, which the controller-manager adds a moment later.
    wait_for(lambda: "default" in kubectl("get", "sa", "-n", name, "-o", "name", check=False),
             30, f"the default ServiceAccount of {name}")


def delete_namespace(name: str) -> None:
    kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


def wait_for(condition: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.2) -> Any:
    """Polls `condition` until it returns something true; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def training_operator_dir() -> str:
    """The training-operator v1.8.1 module's directory, downloaded through the Go module proxy
    (`go mod download`), never copied into the repository."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    try:
        out = subprocess.run([go, "mod", "download", "-json", TRAINING_OPERATOR],
                             capture_output=True, text=True, timeout=300, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"`go mod download -json {TRAINING_OPERATOR}` could not run: {e}")
    try:
        info = json.loads(out.stdout)
    except ValueError:
        info = {}
    if out.returncode != 0 or not info.get("Dir") or info.get("Error"):
        raise RuntimeError(f"`go mod download -json {TRAINING_OPERATOR}` failed "
                           f"(exit {out.returncode}): {info.get('Error') or out.stderr.strip()}")
    return str(info["Dir"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_subnet() -> str:
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                          text=True).stdout
    for _ in range(100):
        prefix = f"10.213.{random.randint(1, 250)}."
        if prefix not in used:
            return prefix + "0/24"
    raise RuntimeError("no free /24 in 10.213.0.0/16")


class AgentCluster:
    """A test node agent with `nodes` Nodes and an operator, both children of this process."""

    def __init__(self, nodes: int = 3) -> None:
        self.id = random_id()
        self.namespace = f"sdk-e2e-{self.id}"
        self.block = f"sdk-e2e-{self.id}"
        self.bridge = f"lss{self.id}"
        self.state_dir = f"/tmp/lockstep-sdk-e2e-{self.id}"
        self.work_dir = f"/tmp/lockstep-sdk-e2e-{self.id}-work"
        self.node_names = [f"sdk-e2e-{self.id}-{i}" for i in range(nodes)]
        self.agent: subprocess.Popen[bytes] | None = None
        self.operator: subprocess.Popen[bytes] | None = None
        self.health_port = 0

    @property
    def node_selector(self) -> dict[str, str]:
        return {"topology.lockstep.dev/block": self.block}

    def start(self) -> None:
        install_crd()
        create_namespace(self.namespace)
        os.makedirs(self.work_dir, exist_ok=True)
        self._start_agent()
        self._start_operator()

    def _start_agent(self) -> None:
        args = [os.path.join(BUILD, "bin", "lockstep-test-node-agent")]
        for node in self.node_names:
            args += ["--node-name", node]
        args += ["--gpus", "8", "--block", self.block, "--rack", f"{self.block}-r0",
                 "--launcher-binary", os.path.join(BUILD, "bin", "lockstep-launcher"),
                 "--launcher-image", "lockstep/launcher",
                 "--python", os.path.join(REPO, ".venv", "bin", "python"),
                 "--image-map", f"lockstep/examples={REPO}", "--state-dir", self.state_dir,
                 "--bridge", self.bridge, "--subnet", _free_subnet(), "--heartbeat-ms", "1000",
                 "--lease-duration-s", "5"]
        log = open(os.path.join(self.work_dir, "agent.log"), "wb")
        self.agent = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        wait_for(lambda: self._agent_ready(), 60, "the test node agent's 'ready'")

    def _agent_ready(self) -> bool:
        assert self.agent is not None
        if self.agent.poll() is not None:
            raise AssertionError(f"the agent exited {self.agent.returncode}:\n{self.agent_log()}")
        return bool(re.search(r"^ready$", self.agent_log(), re.M))

    def _start_operator(self) -> None:
        self.health_port = _free_port()
        args = [os.path.join(BUILD, "bin", "lockstep-operator"),
                f"--metrics-bind-address=127.0.0.1:{_free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
                "--launcher-image=lockstep/launcher:e2e", "--workers=4", "--log-format=text",
                "--gang-scheduler=true", f"--namespace={self.namespace}"]
        log = open(os.path.join(self.work_dir, "operator.log"), "wb")
        self.operator = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        wait_for(self._operator_ready, 60, "the operator's /readyz")

    def _operator_ready(self) -> bool:
        assert self.operator is not None
        if self.operator.poll() is not None:
            raise AssertionError(f"the operator exited {self.operator.returncode}:\n"
                                 f"{self.operator_log()[-4000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz",
                                        timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def agent_log(self) -> str:
        return _read(os.path.join(self.work_dir, "agent.log"))

    def operator_log(self) -> str:
        return _read(os.path.join(self.work_dir, "operator.log"))

    def diagnostics(self, job: str) -> str:
        """The job, its pods and the logs' tails, for a failing test's message."""
        return "\n".join([
            kubectl("get", "tj", job, "-n", self.namespace, "-o", "yaml", check=False),
            kubectl("get", "pods", "-n", self.namespace, "-o", "wide", check=False),
            "--- operator log tail", self.operator_log()[-3000:],
            "--- agent log tail", self.agent_log()[-2000:]])

    def stop(self) -> list[str]:
        """Stops both (the operator first, so it does not react to the Nodes going away) and
        returns what the agent left behind (docs/e2e.md "Cleanup guarantees")."""
        problems = []
        for proc in (self.operator, self.agent):
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                problems.append(f"{proc.args[0]} did not exit on SIGTERM in 60 s")
        if self.agent is not None and os.path.exists(self.state_dir):
            problems.append(f"the agent left its state dir {self.state_dir}")
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                               text=True).stdout
        if self.bridge in links:
            problems.append(f"the agent left links of its bridge {self.bridge}")
        delete_namespace(self.namespace)
        if not problems:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        return problems


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
