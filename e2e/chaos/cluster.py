"""The control-plane side of the chaos suites (Python standard library only).

A testenv control plane (tools/testenv/testenv), a small client of its API server, a pod watch
held for the whole run that records every pod instance (UID) and the last state seen of each,
the coach-operator process, and the faults applied to them: SIGKILL of the operator, kill -9 and
restart of kube-apiserver, etcd compaction.
"""

import base64
import collections
import http.client
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
import urllib.request


def log(msg):
    print(f"[chaos] {time.strftime('%H:%M:%S')} {msg}", flush=True)


def free_port():
    """A free loopback port below the kernel's ephemeral range: the operator binds it seconds
    after it is picked, having opened connections of its own meanwhile, and an ephemeral port
    can be handed to any such outgoing connection first (bind then fails: address in use)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below %d" % low)


class Testenv:
    """One control plane in its own folder; `up` reads the endpoint from DIR/env."""

    def __init__(self, root, directory):
        self.script = os.path.join(root, "tools/testenv/testenv")
        self.dir = directory
        self.env = {}

    def up(self):
        t0 = time.monotonic()
        subprocess.run([self.script, "up", "--dir", self.dir], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(self.dir, "env")) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                self.env[key] = value
        log(f"testenv up in {time.monotonic() - t0:.1f} s ({self.dir})")

    def down(self):
        subprocess.run([self.script, "down", "--dir", self.dir], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @property
    def kubeconfig(self):
        return os.path.join(self.dir, "kubeconfig")

    def api(self):
        e = self.env
        return Api(e["COACH_TESTENV_SERVER"], e["COACH_TESTENV_CA"],
                   e["COACH_TESTENV_CLIENT_CERT"], e["COACH_TESTENV_CLIENT_KEY"])

    def _apiserver_argv(self):
        pid = int(open(os.path.join(self.dir, "pids/kube-apiserver")).read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return pid, [a.decode() for a in f.read().split(b"\0") if a]

    def etcd_url(self):
        _, argv = self._apiserver_argv()
        return argv[argv.index("--etcd-servers") + 1].split(",")[0]

    def component_restarts(self, name):
        """How often testenv's supervisor started a control-plane component again (its log)."""
        try:
            with open(os.path.join(self.dir, f"logs/{name}.log"), errors="replace") as f:
                return sum(1 for line in f if line.startswith(f"supervise: {name} exited"))
        except FileNotFoundError:
            return 0

    def restart_apiserver(self, down_for, compact):
        """kill -9 kube-apiserver, optionally compact etcd to its current revision while it is
        down (so every watch that resumes from an older resourceVersion gets 410 Gone), start it
        again with the same command line and wait for /readyz. Returns the compacted revision."""
        pid, argv = self._apiserver_argv()
        etcd = self.etcd_url()
        os.kill(pid, signal.SIGKILL)
        for _ in range(200):  # not our child: testenv started it in its own session
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ")[1][0] == "Z":
                        break
            except FileNotFoundError:
                break
            time.sleep(0.05)
        revision = etcd_compact(etcd) if compact else None
        time.sleep(down_for)
        logf = open(os.path.join(self.dir, "logs/kube-apiserver.log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        # Reaped here when `testenv down` stops it (it reads the pid file).
        threading.Thread(target=proc.wait, daemon=True).start()
        with open(os.path.join(self.dir, "pids/kube-apiserver"), "w") as f:
            f.write(f"{proc.pid}\n")
        self.api().wait_ready(90)
        return revision


def etcd_compact(etcd_url, physical=True):
    """Compacts etcd's history up to its current revision (the v3 JSON gateway)."""
    def post(path, body):
        req = urllib.request.Request(etcd_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    key = base64.b64encode(b"/registry/health").decode()
    revision = int(post("/v3/kv/range", {"key": key})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": str(revision), "physical": physical})
    return revision


class Api:
    """A few REST calls with the testenv's admin client certificate."""

    def __init__(self, server, ca, cert, key):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def connect(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)

    def call(self, method, path, body=None, timeout=30):
        """(status, parsed body); raises OSError/HTTPException when the server is unreachable."""
        c = self.connect(timeout)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Content-Type": "application/json", "Accept": "application/json"})
            r = c.getresponse()
            data = r.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data.decode(errors="replace")
            return r.status, parsed
        finally:
            c.close()

    def must(self, method, path, body=None, ok=(200, 201), deadline_s=120):
        """Like call, retried while the API server is down or answers 5xx/429 (the chaos
        suites restart it); any other answer outside `ok` raises. A create whose answer was
        lost (the server went down mid-call, or answered 5xx) may have been made: its retry's
        AlreadyExists is the create's success."""
        end = time.monotonic() + deadline_s
        answer_lost = False
        while True:
            try:
                status, parsed = self.call(method, path, body)
                if status in ok:
                    return parsed
                if (method == "POST" and status == 409 and answer_lost and
                        isinstance(parsed, dict) and parsed.get("reason") == "AlreadyExists"):
                    return parsed
                if status < 500 and status != 429:
                    raise RuntimeError(f"{method} {path}: {status} {parsed}")
                answer_lost = answer_lost or status >= 500
            except (OSError, http.client.HTTPException) as e:
                status, parsed = None, str(e)
                answer_lost = True
            if time.monotonic() > end:
                raise RuntimeError(f"{method} {path}: {status} {parsed} after {deadline_s} s")
            time.sleep(0.5)

    def wait_ready(self, timeout_s):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                status, body = self.call("GET", "/readyz", timeout=5)
                if status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"kube-apiserver not ready after {timeout_s} s")

    def create_namespace(self, ns):
        self.must("POST", "/api/v1/namespaces",
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        end = time.monotonic() + 60
        while time.monotonic() < end:  # pods need the namespace's default ServiceAccount
            status, _ = self.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
            if status == 200:
                return
            time.sleep(0.3)
        raise RuntimeError(f"namespace {ns} has no default ServiceAccount")


class PodInstance:
    __slots__ = ("name", "uid", "seq", "phase", "exit_code", "restarts", "gone", "unseen_end")

    def __init__(self, name, uid, seq):
        self.name, self.uid, self.seq = name, uid, seq
        self.phase, self.exit_code, self.restarts = "", None, 0
        self.gone = False
        self.unseen_end = False  # vanished while no watch was open: its last state is unknown


class PodWatch(threading.Thread):
    """Every pod (UID) created in a namespace, from one list + watch held for the whole run.

    A pod name that gets a second UID was created twice; the suites judge each such re-creation
    from the state its predecessor was last seen in (deleted after a Failed exit the replica's
    restart policy recreates, or not). The watch resumes from its last resourceVersion after a
    disconnect, so no event is missed while the API server keeps its history; after 410 Gone
    (compaction) it re-lists, and a pod that vanished unseen in that gap is marked unseen_end."""

    def __init__(self, api, ns, trace_path=None):
        super().__init__(daemon=True)
        self.api, self.ns = api, ns
        # One line per event (time, type, name, uid, phase, exit code, restarts): what a
        # duplicate's history is read from.
        self.trace = open(trace_path, "w") if trace_path else None
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.instances = {}  # uid -> PodInstance
        self.by_name = collections.defaultdict(list)  # name -> [uid], first seen first
        self.events = 0
        self.relists = 0
        self.reconnects = 0
        self.stopping = False

    def _record(self, obj, gone=False):
        md, st = obj.get("metadata", {}), obj.get("status", {})
        uid, name = md.get("uid"), md.get("name")
        if not uid:
            return
        inst = self.instances.get(uid)
        if inst is None:
            inst = PodInstance(name, uid, len(self.instances))
            self.instances[uid] = inst
            self.by_name[name].append(uid)
        inst.phase = st.get("phase", inst.phase)
        for cs in st.get("containerStatuses") or []:
            inst.restarts = max(inst.restarts, cs.get("restartCount", 0))
            term = (cs.get("state") or {}).get("terminated")
            if term is not None:
                inst.exit_code = term.get("exitCode")
        inst.gone = inst.gone or gone

    def _trace(self, kind, obj):
        if self.trace is None:
            return
        md, st = obj.get("metadata", {}), obj.get("status", {})
        self.trace.write(f"{time.monotonic() - self.t0:9.3f} {kind:8} {md.get('name')} "
                         f"{md.get('uid', '')[:8]} rv={md.get('resourceVersion')} "
                         f"{st.get('phase', '-')} "
                         f"del={md.get('deletionTimestamp') is not None}\n")
        self.trace.flush()

    def _list(self):
        body = self.api.must("GET", f"/api/v1/namespaces/{self.ns}/pods", deadline_s=600)
        with self.lock:
            present = set()
            for item in body.get("items", []):
                self._trace("LISTED", item)
                self._record(item)
                present.add(item["metadata"]["uid"])
            for inst in self.instances.values():
                if not inst.gone and inst.uid not in present:
                    inst.gone, inst.unseen_end = True, True
        return body["metadata"]["resourceVersion"]

    def run(self):
        rv = self._list()
        while not self.stopping:
            path = (f"/api/v1/namespaces/{self.ns}/pods?watch=1&allowWatchBookmarks=true"
                    f"&timeoutSeconds=600&resourceVersion={rv}")
            try:
                c = self.api.connect(timeout=660)
                c.request("GET", path, headers={"Accept": "application/json"})
                r = c.getresponse()
                if r.status == 410:
                    rv = self._relist()
                    continue
                if r.status != 200:
                    r.read()
                    raise OSError(f"watch answered {r.status}")
                while not self.stopping:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev["type"] == "ERROR":
                        if obj.get("code") == 410:
                            rv = self._relist()
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if ev["type"] == "BOOKMARK":
                        continue
                    with self.lock:
                        self.events += 1
                        self._trace(ev["type"], obj)
                        self._record(obj, gone=ev["type"] == "DELETED")
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.2)
            self.reconnects += 1

    def _relist(self):
        self.relists += 1
        return self._list()

    def stop(self):
        self.stopping = True

    def snapshot(self):
        with self.lock:
            return ({u: _copy(i) for u, i in self.instances.items()},
                    {n: list(us) for n, us in self.by_name.items()})


def _copy(inst):
    c = PodInstance(inst.name, inst.uid, inst.seq)
    for a in PodInstance.__slots__:
        setattr(c, a, getattr(inst, a))
    return c


class Operator:
    """One coach-operator --backend=kube on loopback ports; restarts append to one log."""

    def __init__(self, binary, kubeconfig, workdir, extra_args=()):
        self.binary, self.kubeconfig, self.workdir = binary, kubeconfig, workdir
        self.extra_args = list(extra_args)
        self.state = os.path.join(workdir, "operator-state")
        os.makedirs(self.state, exist_ok=True)
        self.log_path = os.path.join(workdir, "operator.log")
        self.proc = None
        self.starts = 0
        self.http_port = None

    def start(self, timeout_s=60):
        self.grpc_port = free_port()
        self.http_port = free_port()
        while self.http_port == self.grpc_port:
            self.http_port = free_port()
        argv = [self.binary, "--backend=kube", f"--kubeconfig={self.kubeconfig}",
                f"--state-dir={self.state}",
                f"--log-level={os.environ.get('COACH_CHAOS_LOG_LEVEL', 'info')}",
                f"--listen=127.0.0.1:{self.grpc_port}",
                f"--http-listen=127.0.0.1:{self.http_port}"] + self.extra_args
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("COACH_") and k != "KUBECONFIG"}
        env["HOME"] = self.state
        logf = open(self.log_path, "ab")
        self.starts += 1
        logf.write(f"--- start {self.starts} ---\n".encode())
        logf.flush()
        self.proc = subprocess.Popen(argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        logf.close()
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"coach-operator exited {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("coach-operator not ready:\n" + self.log_tail())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if not self.alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill9()

    def metrics(self):
        """{series with labels: value} from /metrics; {} when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics",
                                        timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return {}
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    out[key] = float(value)
                except ValueError:
                    pass
        return out

    def log_text(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=3000):
        return self.log_text()[-n:]
