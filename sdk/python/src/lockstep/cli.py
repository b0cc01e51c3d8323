"""kubectl-lockstep: the `kubectl lockstep` plugin (installed with the SDK as a console script).

    kubectl lockstep submit [options] -- COMMAND...     a TrainingJob running COMMAND
    kubectl lockstep submit -f job.yaml                 a TrainingJob, or a Kubeflow job converted
    kubectl lockstep logs JOB [-f] [--rank N]...        every rank's log, prefixed by rank
    kubectl lockstep status JOB                         per rank: pod, node, state, why
    kubectl lockstep convert -f job.yaml                Kubeflow job -> TrainingJob (stdout)
    kubectl lockstep wait JOB [--for STATE] [--timeout S]
    kubectl lockstep list | delete JOB
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from urllib3.exceptions import HTTPError

from lockstep import _api
from lockstep.client import TrainingJobClient, TrainingJobError, WaitTimeoutError
from lockstep.convert import ConversionError, convert
from lockstep.ranks import format_status
from lockstep.spec import SpecError


def _pairs(values: Sequence[str] | None, what: str) -> dict[str, str]:
    out = {}
    for item in values or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"error: {what} {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _read_documents(path: str) -> list[Any]:
    try:
        text = sys.stdin.read() if path == "-" else open(path).read()
    except OSError as e:
        raise SystemExit(f"error: cannot read {path}: {e}") from e
    try:
        return [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as e:
        raise SystemExit(f"error: {path} is not YAML: {e}") from e


def _converted(path: str) -> list[dict[str, Any]]:
    """TrainingJobs from a file: TrainingJobs as they are, Kubeflow jobs converted (each
    warning on stderr)."""
    jobs = []
    for doc in _read_documents(path):
        if doc.get("kind") == _api.KIND:
            jobs.append(doc)
            continue
        try:
            result = convert(doc)
        except ConversionError as e:
            raise SystemExit(f"error: {path}: {e}") from e
        for warning in result.warnings:
            print(f"warning: {result.job['metadata']['name']}: {warning}", file=sys.stderr)
        jobs.append(result.job)
    return jobs


def _client(args: argparse.Namespace) -> TrainingJobClient:
    return TrainingJobClient(namespace=args.namespace, context=args.context,
                             config_file=args.kubeconfig)


def cmd_convert(args: argparse.Namespace) -> int:
    jobs = _converted(args.filename)
    if args.output == "json":
        print(json.dumps(jobs[0] if len(jobs) == 1 else {"apiVersion": "v1", "kind": "List",
                                                         "items": jobs}, indent=2))
    else:
        print(yaml.safe_dump_all(jobs, sort_keys=False, default_flow_style=False), end="")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    client = _client(args)
    names = []
    if args.filename:
        if args.command:
            raise SystemExit("error: give -f or a command after --, not both")
        for job in _converted(args.filename):
            job.setdefault("metadata", {}).pop("namespace", None)
            names.append(client.create(job))
    else:
        command = list(args.command)
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            raise SystemExit("error: nothing to run: kubectl lockstep submit [options] -- "
                             "COMMAND... (or -f job.yaml)")
        try:
            names.append(client.train(
                command=command, name=args.name, workers=args.workers,
                procs_per_worker=args.procs_per_worker, gpus_per_worker=args.gpus_per_worker,
                image=args.image, env=_pairs(args.env, "--env"), framework=args.framework,
                cpu=args.cpu, memory=args.memory,
                node_selector=_pairs(args.node_selector, "--node-selector"),
                max_restarts=args.max_restarts))
        except SpecError as e:
            raise SystemExit(f"error: {e}") from e
    for name in names:
        print(f"trainingjob.{_api.GROUP}/{name} created")
    rc = 0
    if args.follow:
        for name in names:  # one after the other: each until its job has finished
            rc = _print_logs(client, name, True, None) or rc
    return rc


def _print_logs(client: TrainingJobClient, name: str, follow: bool,
                ranks: Sequence[int] | None) -> int:
    try:
        for line in client.logs(name, follow=follow, ranks=ranks):
            print(line, flush=True)
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    return _print_logs(_client(args), args.job, args.follow, args.rank)


def cmd_status(args: argparse.Namespace) -> int:
    client = _client(args)
    job = client.get(args.job)
    print(format_status(job, client.status(job)))
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    try:
        job = _client(args).wait(args.job, until=args.state, timeout=args.timeout)
    except (TrainingJobError, WaitTimeoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"trainingjob.{_api.GROUP}/{args.job} {(job.get('status') or {}).get('state')}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    rows = [("NAME", "FRAMEWORK", "STATE", "WORKERS", "RESTARTS", "PROGRESS")]
    for job in _client(args).list():
        status = job.get("status") or {}
        percent = (status.get("progress") or {}).get("percent")
        rows.append((job["metadata"]["name"], str(job["spec"].get("framework", "")),
                     str(status.get("state") or "Pending"), str(status.get("workersReady") or "-"),
                     str((status.get("restarts") or {}).get("total") or 0),
                     f"{percent}%" if percent is not None else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    _client(args).delete(args.job)
    print(f"trainingjob.{_api.GROUP}/{args.job} deleted")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kubectl lockstep", description="Lockstep TrainingJobs "
                                  "from a terminal (docs/sdk.md)")
    top.add_argument("-n", "--namespace", help="default: the kubeconfig context's")
    top.add_argument("--context", help="kubeconfig context")
    top.add_argument("--kubeconfig", help="kubeconfig file (default $KUBECONFIG, ~/.kube/config)")
    sub = top.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("submit", help="submit a TrainingJob")
    p.add_argument("-f", "--filename", help="a TrainingJob or Kubeflow job manifest ('-': stdin)")
    p.add_argument("--name", help="default: generated from the command")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--procs-per-worker", type=int)
    p.add_argument("--gpus-per-worker", type=int, default=0)
    p.add_argument("--image")
    p.add_argument("--framework", default="PyTorch", choices=list(_api.FRAMEWORKS))
    p.add_argument("-e", "--env", action="append", metavar="KEY=VALUE")
    p.add_argument("--cpu")
    p.add_argument("--memory")
    p.add_argument("--node-selector", action="append", metavar="KEY=VALUE")
    p.add_argument("--max-restarts", type=int)
    p.add_argument("-F", "--follow", action="store_true", help="then stream every rank's log")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("logs", help="every rank's log, merged, prefixed by rank")
    p.add_argument("job")
    p.add_argument("-f", "--follow", action="store_true",
                   help="stream until the job ends, across restarts")
    p.add_argument("--rank", type=int, action="append", help="only this node rank (repeatable)")
    p.set_defaults(func=cmd_logs)

    p = sub.add_parser("status", help="per rank: pod, node, state, restarts, progress, why")
    p.add_argument("job")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("convert", help="a Kubeflow PyTorchJob/TFJob/MPIJob/JAXJob as a "
                       "TrainingJob; warnings on stderr")
    p.add_argument("-f", "--filename", required=True, help="manifest ('-': stdin)")
    p.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("wait", help="until the job reaches a state (default Succeeded)")
    p.add_argument("job")
    p.add_argument("--for", dest="state", default="Succeeded", choices=list(_api.STATES))
    p.add_argument("--timeout", type=float)
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("list", help="the namespace's TrainingJobs")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("delete", help="delete a TrainingJob")
    p.add_argument("job")
    p.set_defaults(func=cmd_delete)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except TrainingJobError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except ApiException as e:  # one line, no traceback
        detail = ""
        if e.body:
            try:
                detail = ": " + str(json.loads(e.body).get("message", ""))
            except (ValueError, AttributeError):
                detail = f": {e.body}"
        print(f"error: {e.status} {e.reason}{detail}", file=sys.stderr)
        return 1
    except (ConfigException, HTTPError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

if __name__ == "__main__":
    sys.exit(main())
