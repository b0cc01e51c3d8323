"""Ray Serve under lockstep-launcher (--framework ray): a deployment answered from the driver.

The head pod runs this script as the job's driver once every pod's Ray node is alive; nothing
here is specific to Lockstep. It deploys one replica (one CPU; with the head started with
--num-cpus=0, examples/local/ray-serve.yaml, it can only land on a worker pod's node), asks it
through a DeploymentHandle and through Serve's HTTP proxy on the head, then shuts Serve down.

Prints `SERVE handle=<answer> http=<answer> replica_on_worker=<True|False>` and exits 0 when
both answers are right and the replica ran on another node than the driver's.
"""
import json
import time
import urllib.request

import ray
from ray import serve


@serve.deployment(ray_actor_options={"num_cpus": 1})
class Doubler:
    def node(self):
        return ray.get_runtime_context().get_node_id()

    def double(self, x):
        return 2 * x

    async def __call__(self, request):
        return {"answer": self.double(int(request.query_params["x"])), "node": self.node()}


def http_get(url, timeout_s=60):
    """The proxy may answer 503/404 for a moment after the deployment is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.loads(r.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main():
    ray.init()
    serve.start(http_options={"host": "127.0.0.1", "port": 8000})
    handle = serve.run(Doubler.bind(), name="doubler", route_prefix="/double")
    by_handle = handle.double.remote(21).result(timeout_s=60)
    replica_node = handle.node.remote().result(timeout_s=60)
    by_http = http_get("http://127.0.0.1:8000/double?x=21")["answer"]
    on_worker = replica_node != ray.get_runtime_context().get_node_id()
    serve.shutdown()
    print(f"SERVE handle={by_handle} http={by_http} replica_on_worker={on_worker}", flush=True)
    if (by_handle, by_http, on_worker) != (42, 42, True):
        raise SystemExit("Serve answered wrong or ran the replica on the head")


if __name__ == "__main__":
    main()
