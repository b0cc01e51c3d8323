"""Plays one Horovod process's Gloo rendezvous exactly as horovod/common/gloo does it: the
launcher tier's protocol-level check of the launcher's Gloo KV server, in the main venv, where
Horovod itself cannot be built (real Horovod has its own venv and runs in the e2e tier).

Horovod's GlooContext::Initialize builds three Gloo contexts, each through an HTTPStore on
http://HOROVOD_GLOO_RENDEZVOUS_ADDR:PORT/<scope>/: "global" (rank HOROVOD_RANK of
HOROVOD_SIZE), "local_<HOROVOD_HOSTNAME>" (local rank/size) and "cross_<local rank>" (cross
rank/size). For each, gloo's connectFullMesh PUTs this rank's address under key "<rank>", then
for every peer polls GET /<scope>/<peer> every 10 ms while it answers 404 and reads the peer's
address, and connects to it; afterwards HTTPStore::Finalize sends DELETE /<scope>/<rank>. Every
request is a new HTTP/1.1 connection, as Horovod's HTTPRequest client makes them.

Here the "address" is a real listening socket: each rank connects to every peer of the scope,
exchanges its rank, and sums what it received (an all-reduce over the mesh). Prints
`HVD_SCOPE <scope> rank=<r> size=<n> sum=<sum of peer values>` per scope and `HVD_PROTO_OK`.
"""
import http.client
import os
import socket
import threading
import time

ADDR = os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
PORT = int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
TIMEOUT_S = float(os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS", "30"))


def request(method, path, body=b""):
    for attempt in range(3):  # HTTPStore retries non-200/404 answers 3 times, 500 ms apart
        conn = http.client.HTTPConnection(ADDR, PORT, timeout=5)
        try:
            conn.request(method, path, body=body, headers={"Content-Length": str(len(body))})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status in (200, 404):
                return resp.status, data
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.5)
    raise RuntimeError(f"{method} {path} failed 3 times")


def full_mesh(scope, rank, size, value):
    listener = socket.create_server((os.environ.get("LOCKSTEP_TEST_BIND", "127.0.0.1"), 0))
    host, port = listener.getsockname()[:2]
    received = []

    def accept_peers():
        for _ in range(size - 1):
            conn, _ = listener.accept()
            with conn:
                received.append(int(conn.recv(64).decode()))

    acceptor = threading.Thread(target=accept_peers)
    acceptor.start()
    status, _ = request("PUT", f"/{scope}/{rank}", f"{host}:{port}".encode())
    assert status == 200, status
    deadline = time.time() + TIMEOUT_S
    for peer in range(size):
        if peer == rank:
            continue
        while True:  # HTTPStore::wait: poll every 10 ms while the key is absent (404)
            status, addr = request("GET", f"/{scope}/{peer}")
            if status == 200:
                break
            if time.time() > deadline:
                raise TimeoutError(f"rank {rank} waited {TIMEOUT_S}s for {scope}/{peer}")
            time.sleep(0.01)
        peer_host, peer_port = addr.decode().rsplit(":", 1)
        with socket.create_connection((peer_host, int(peer_port))) as s:
            s.sendall(str(value).encode())
    acceptor.join(TIMEOUT_S)
    listener.close()
    status, _ = request("DELETE", f"/{scope}/{rank}")  # HTTPStore::Finalize
    assert status == 200, status
    total = value + sum(received)
    print(f"HVD_SCOPE {scope.split('_')[0]} rank={rank} size={size} sum={total}", flush=True)
    return total


def main():
    env = {k: os.environ[k] for k in os.environ if k.startswith("HOROVOD_")}
    rank, size = int(env["HOROVOD_RANK"]), int(env["HOROVOD_SIZE"])
    local_rank, local_size = int(env["HOROVOD_LOCAL_RANK"]), int(env["HOROVOD_LOCAL_SIZE"])
    cross_rank, cross_size = int(env["HOROVOD_CROSS_RANK"]), int(env["HOROVOD_CROSS_SIZE"])
    assert env["HOROVOD_CONTROLLER"] == "gloo" and env["HOROVOD_CPU_OPERATIONS"] == "gloo"
    # Contribute the global rank + 1 in every scope; sums are checked by the test.
    full_mesh("global", rank, size, rank + 1)
    full_mesh("local_" + env["HOROVOD_HOSTNAME"], local_rank, local_size, rank + 1)
    full_mesh(f"cross_{local_rank}", cross_rank, cross_size, rank + 1)
    print(f"HVD_PROTO_OK rank={rank}", flush=True)


if __name__ == "__main__":
    main()
