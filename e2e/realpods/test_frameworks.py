"""XGBoost trains for real; TFJob, PaddleJob and JAXJob replicas check every variable upstream gives
them and talk to their peers over the pod network, at the addresses those variables name."""
import json

import kube
from test_pytorch import example

# Runs in each replica: checks the framework's env, listens on its own port and connects to every
# peer the env names (retrying while they start), then waits until every peer connected to it.
PEERS = r'''
import json, os, socket, sys, threading, time
kind = sys.argv[1]
env = os.environ
def need(name):
    if name not in env:
        print("missing %s" % name, flush=True); sys.exit(10)
    return env[name]
if kind != "TFJob":  # upstream gives TF replicas TF_CONFIG only
    need("PYTHONUNBUFFERED")
if kind == "TFJob":
    cfg = json.loads(need("TF_CONFIG"))
    assert cfg["environment"] == "cloud", cfg
    me = cfg["cluster"][cfg["task"]["type"]][cfg["task"]["index"]]
    addrs = [a for hosts in cfg["cluster"].values() for a in hosts]
    port = int(me.rsplit(":", 1)[1])
    peers = [a for a in addrs if a != me]
    expect_in = len(peers)
elif kind == "JAXJob":
    n, pid = int(need("NUM_PROCESSES")), int(need("PROCESS_ID"))
    coord = "%s:%s" % (need("COORDINATOR_ADDRESS"), need("COORDINATOR_PORT"))
    port = int(env["COORDINATOR_PORT"])
    peers = [] if pid == 0 else [coord]
    expect_in = n - 1 if pid == 0 else 0
elif kind == "PaddleJob":
    n = int(need("PADDLE_NNODES"))
    master = need("PADDLE_MASTER")
    need("PADDLE_JOB_ID")
    host, port = master.rsplit(":", 1)
    port = int(port)
    first = "POD_IP_DUMMY" in env
    if first:
        assert host == env["POD_IP_DUMMY"], (host, env["POD_IP_DUMMY"])
    peers = [] if first else [master]
    expect_in = n - 1 if first else 0
got = []
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", port))
srv.listen(64)
def serve():
    while len(got) < expect_in:
        c, _ = srv.accept()
        got.append(c.recv(256).decode())
        c.close()
t = threading.Thread(target=serve, daemon=True)
t.start()
me_name = socket.gethostname()
for peer in peers:
    host, p = peer.rsplit(":", 1)
    deadline = time.time() + 180
    while True:
        try:
            s = socket.create_connection((host, int(p)), timeout=5)
            s.sendall(me_name.encode())
            s.close()
            break
        except OSError as e:
            if time.time() > deadline:
                print("cannot reach %s: %s" % (peer, e), flush=True); sys.exit(11)
            time.sleep(0.5)
t.join(180)
if len(got) < expect_in:
    print("only %d of %d peers connected" % (len(got), expect_in), flush=True); sys.exit(12)
print("peers-ok kind=%s me=%s reached=%d heard_from=%s" % (kind, me_name, len(peers),
      ",".join(sorted(got))), flush=True)
'''


def peer_job(kind, name, replicas, container, port_name, port, extra=None):
    specs = {}
    for rtype, n in replicas.items():
        specs[rtype] = {"replicas": n, "restartPolicy": "Never", "template": {"spec": {
            "containers": [{
                "name": container, "image": kube.TRAINING_IMAGE,
                "command": ["/usr/bin/python3", "-c", PEERS, kind],
                "ports": [{"name": port_name, "containerPort": port}],
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}}}
    spec = {kube.SPECS_KEY[kind]: specs}
    spec.update(extra or {})
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name},
            "spec": spec}


def check_peers(kind, name, ns, expect_pods):
    done = kube.wait_finished(kind, name, ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of(name, ns)
    assert set(pods) == set(expect_pods)
    for pod in pods:
        assert "peers-ok kind=%s" % kind in kube.logs(pod, ns), pod


def test_tfjob_replicas_reach_every_address_in_tf_config(ns):
    kube.apply(peer_job("TFJob", "tf", {"Chief": 1, "PS": 1, "Worker": 2}, "tensorflow",
                        "tfjob-port", 2222), ns)
    check_peers("TFJob", "tf", ns, ["tf-chief-0", "tf-ps-0", "tf-worker-0", "tf-worker-1"])
    cfg = json.loads([e["value"] for e in kube.get_json("pod", "tf-worker-1", "-n", ns)
                      ["spec"]["containers"][0]["env"] if e["name"] == "TF_CONFIG"][0])
    assert cfg["task"] == {"type": "worker", "index": 1}
    assert cfg["cluster"]["ps"] == ["tf-ps-0.%s.svc:2222" % ns]


def test_jaxjob_processes_reach_the_coordinator(ns):
    kube.apply(peer_job("JAXJob", "jax", {"Worker": 3}, "jax", "jaxjob-port", 6666), ns)
    check_peers("JAXJob", "jax", ns, ["jax-worker-0", "jax-worker-1", "jax-worker-2"])


def test_paddlejob_collective_nodes_reach_the_master_by_pod_ip(ns):
    kube.apply(peer_job("PaddleJob", "paddle", {"Worker": 3}, "paddle", "master", 36543), ns)
    check_peers("PaddleJob", "paddle", ns, ["paddle-worker-0", "paddle-worker-1",
                                            "paddle-worker-2"])


def test_xgboost_trains_distributed(ns):
    job = example("examples/xgboost/xgboost-dist.yaml", "xgb")
    kube.apply(job, ns)
    done = kube.wait_finished("XGBoostJob", "xgb", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("xgb", ns)
    assert set(pods) == {"xgb-master-0", "xgb-worker-0", "xgb-worker-1"}
    results = [r for r in kube.results(pods, ns).values()]
    assert len(results) == 3 and {r["status"] for r in results} == {"ok"}, results
    assert len({r["model_checksum"] for r in results}) == 1, results
    # Workers waited for the Master's name (Rabit fails at once when it does not resolve).
    for name in ("xgb-worker-0", "xgb-worker-1"):
        inits = pods[name]["status"]["initContainerStatuses"]
        assert [s["name"] for s in inits] == ["init-xgboost"], inits
