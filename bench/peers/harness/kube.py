"""A small Kubernetes API client for the harness: JSON over HTTPS with the admin kubeconfig's
client certificate, one keep-alive connection per thread, and a watch that calls back per event.

The harness needs only create/get/list/patch/delete and watch; anything richer (server-side apply
of module manifests) goes through kubectl, as a user would.
"""
import base64
import http.client
import json
import os
import ssl
import tempfile
import threading
import time
import urllib.parse

import yaml


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class Kube:
    def __init__(self, kubeconfig):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        url = urllib.parse.urlparse(cluster["server"])
        self.host, self.port = url.hostname, url.port
        self._dir = tempfile.mkdtemp(prefix="peers-kube-")
        paths = {}
        for key, data in (("ca", cluster["certificate-authority-data"]),
                          ("crt", user["client-certificate-data"]),
                          ("key", user["client-key-data"])):
            paths[key] = os.path.join(self._dir, key)
            with open(paths[key], "wb") as f:
                f.write(base64.b64decode(data))
        self.ctx = ssl.create_default_context(cafile=paths["ca"])
        self.ctx.load_cert_chain(paths["crt"], paths["key"])
        self._local = threading.local()

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self._local.conn = conn
        return conn

    def request(self, method, path, body=None, content_type="application/json", ok=(200, 201),
                extra_headers=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", **(extra_headers or {})}
        if data is not None:
            headers["Content-Type"] = content_type
        raw = self._exchange(method, path, data, headers, ok)
        return json.loads(raw) if raw else None

    def get_text(self, path):
        """A GET whose answer is text (the API server's /metrics)."""
        return self._exchange("GET", path, None, {"Accept": "text/plain"}, (200,)).decode()

    def _exchange(self, method, path, data, headers, ok):
        """One request on this thread's connection: reconnects on a broken one, waits out 429s
        and 5xx (but 504), raises ApiError for any other status not in `ok`; the raw body."""
        for attempt in range(3):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2)
        if resp.status == 429 or resp.status >= 500 and resp.status != 504:
            time.sleep(0.5)
            return self._exchange(method, path, data, headers, ok)
        if resp.status not in ok:
            raise ApiError(resp.status, raw.decode(errors="replace"))
        return raw

    def create(self, path, obj):
        return self.request("POST", path, obj)

    def get(self, path):
        return self.request("GET", path)

    def exists(self, path):
        try:
            self.get(path)
            return True
        except ApiError as e:
            if e.status == 404:
                return False
            raise

    def list(self, path, selector=None):
        items, cont = [], ""
        while True:
            q = {"limit": "500"}
            if selector:
                q["labelSelector"] = selector
            if cont:
                q["continue"] = cont
            page = self.get(path + "?" + urllib.parse.urlencode(q))
            items += page["items"]
            cont = page["metadata"].get("continue")
            if not cont:
                return items, page["metadata"]["resourceVersion"]

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def delete(self, path, body=None):
        return self.request("DELETE", path, body, ok=(200, 202, 404))

    def watch(self, path, resource_version, on_event, stop, selector=None):
        """Calls on_event(type, object, seconds) for each event of path's collection until stop
        is set; `seconds` is time.time() when the event's line arrived. Resumes after a dropped
        stream from the last resourceVersion seen."""
        rv = resource_version
        while not stop.is_set():
            q = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                 "timeoutSeconds": "600"}
            if selector:
                q["labelSelector"] = selector
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                               timeout=700)
            try:
                conn.request("GET", path + "?" + urllib.parse.urlencode(q),
                             headers={"Accept": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    raise ApiError(resp.status, resp.read().decode(errors="replace"))
                while not stop.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    now = time.time()
                    ev = json.loads(line)
                    obj = ev["object"]
                    if ev["type"] == "ERROR":
                        raise ApiError(obj.get("code", 0), json.dumps(obj))
                    rv = obj["metadata"]["resourceVersion"]
                    if ev["type"] != "BOOKMARK":
                        on_event(ev["type"], obj, now)
            except (http.client.HTTPException, OSError):
                time.sleep(0.2)
            finally:
                conn.close()


def pods_path(ns=None):
    return f"/api/v1/namespaces/{ns}/pods" if ns else "/api/v1/pods"


def rfc3339(s):
    """Seconds since the epoch of a Kubernetes timestamp (second or microsecond precision)."""
    from datetime import datetime
    s = s.replace("Z", "+00:00")
    return datetime.fromisoformat(s).timestamp()
