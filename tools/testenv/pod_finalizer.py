#!/usr/bin/python3
"""Finishes the deletion of pods on the testenv's kwok nodes, as a kubelet does.

A pod bound to a node stays Terminating after a DELETE until its kubelet confirms with a second
DELETE (grace period 0). kwok's pod-delete stage sends that one by name only, queued and played
late, so it can land on the next pod created under the same name (an operator that re-creates a
failed replica) and delete it. A kubelet sends the pod's UID as a precondition; so does this.

Only kwok's nodes (annotation kwok.x-k8s.io/node=fake) have a "kubelet" here. A pod bound to a
Node that exists without that annotation (one a test made itself to play a lost node) stays
Terminating, as on a node whose kubelet is gone, until something deletes it with grace period 0.

    pod_finalizer.py ENV_FILE [--skip-node NAME]...

ENV_FILE is the testenv's DIR/env (server, CA, admin client certificate). Pods on a --skip-node
(the real node, which has a kubelet) and pods with finalizers are left alone. Standard library
only; logs one line per pod it finishes.
"""
import json
import queue
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

WORKERS = 4


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep:
                env[key] = value
    return env


class Api:
    def __init__(self, env):
        self.server = env["COACH_TESTENV_SERVER"]
        self.ctx = ssl.create_default_context(cafile=env["COACH_TESTENV_CA"])
        self.ctx.load_cert_chain(env["COACH_TESTENV_CLIENT_CERT"], env["COACH_TESTENV_CLIENT_KEY"])

    def open(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "User-Agent": "coach-testenv-pod-finalizer"})
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)


def terminating(pod, skip_nodes):
    meta, spec = pod.get("metadata", {}), pod.get("spec", {})
    node = spec.get("nodeName", "")
    return (meta.get("deletionTimestamp") and not meta.get("finalizers") and node
            and node not in skip_nodes)


KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
kwok_nodes = set()  # names seen carrying KWOK_ANNOTATION (the workers share it)


def kubelet_less(api, node):
    """True when `node` exists and kwok does not run it: nothing would confirm the deletion."""
    if node in kwok_nodes:
        return False
    try:
        with api.open("GET", "/api/v1/nodes/" + node) as r:
            annotations = json.load(r).get("metadata", {}).get("annotations") or {}
    except (OSError, ValueError):
        return False  # gone (404) or unreadable: finish it, as on kwok's nodes
    if annotations.get(KWOK_ANNOTATION[0]) == KWOK_ANNOTATION[1]:
        kwok_nodes.add(node)
        return False
    return True


def finish(api, pod):
    meta = pod["metadata"]
    node = pod.get("spec", {}).get("nodeName", "")
    if kubelet_less(api, node):
        print("left %s/%s Terminating: node %s is not kwok's" % (meta["namespace"], meta["name"], node),
              flush=True)
        return
    path = "/api/v1/namespaces/%s/pods/%s" % (meta["namespace"], meta["name"])
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]}}
    try:
        api.open("DELETE", path, body).close()
        print("finished %s/%s %s" % (meta["namespace"], meta["name"], meta["uid"]), flush=True)
    except urllib.error.HTTPError as e:
        # 404: gone already; 409: the name belongs to a newer pod now, which stays.
        if e.code not in (404, 409):
            print("delete %s/%s: HTTP %d" % (meta["namespace"], meta["name"], e.code), flush=True)
    except OSError as e:
        print("delete %s/%s: %s" % (meta["namespace"], meta["name"], e), flush=True)


def worker(api, work):
    while True:
        finish(api, work.get())


def run(api, skip_nodes, work):
    """List, then watch from the list's resourceVersion; start over on any error or 410."""
    while True:
        try:
            with api.open("GET", "/api/v1/pods") as r:
                listed = json.load(r)
            for pod in listed.get("items", []):
                if terminating(pod, skip_nodes):
                    work.put(pod)
            rv = listed["metadata"]["resourceVersion"]
            path = "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv
            with api.open("GET", path, timeout=330) as stream:
                for line in stream:
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        break  # 410 Gone and the like: list again
                    pod = event.get("object", {})
                    if event.get("type") in ("ADDED", "MODIFIED") and terminating(pod, skip_nodes):
                        work.put(pod)
        except (OSError, ValueError, KeyError) as e:
            print("watch: %s; listing again" % e, flush=True)
            time.sleep(0.5)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    skip_nodes = set()
    args = sys.argv[2:]
    while args:
        if args[0] == "--skip-node" and len(args) > 1:
            skip_nodes.add(args[1])
            args = args[2:]
        else:
            print("pod_finalizer.py: unknown argument %s" % args[0], file=sys.stderr)
            return 2
    api = Api(read_env(sys.argv[1]))
    work = queue.Queue()
    for _ in range(WORKERS):
        threading.Thread(target=worker, args=(api, work), daemon=True).start()
    run(api, skip_nodes, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
