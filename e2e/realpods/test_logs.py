"""Following a running replica's log: `kubectl logs -f` and `coach logs -f` (through the operator's
gRPC API, port-forwarded from its Service)."""
import os
import select
import subprocess
import time

import kube

TICKER = "import time\nfor i in range(1, 61):\n    print('tick %d' % i, flush=True)\n    time.sleep(1)\n"


def ticker_job(name):
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": {"Master": {
                "replicas": 1, "restartPolicy": "Never",
                "template": {"spec": {"containers": [{
                    "name": "pytorch", "image": kube.TRAINING_IMAGE,
                    "command": ["/usr/bin/python3", "-c", TICKER],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}}}}}}


def read_lines(proc, want, timeout):
    """Lines from proc's stdout until `want` of them came or the timeout passed."""
    lines, buf = [], b""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while len(lines) < want and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(line.decode(errors="replace"))
    return lines


def follow(argv, want, timeout=60):
    """The first `want` lines `argv` prints (fewer on timeout), and what it wrote on stderr."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = read_lines(proc, want, timeout)
    finally:
        proc.kill()
        err = proc.communicate()[1].decode(errors="replace")
    return lines, err


def running(ns, pod):
    return kube.get_json("pod", pod, "-n", ns)["status"].get("phase") == "Running"


def test_kubectl_logs_follow_a_running_replica(ns):
    kube.apply(ticker_job("ticker"), ns)
    kube.wait_for(lambda: running(ns, "ticker-master-0"), 120, "the replica Running")
    out, err = follow([kube.KUBECTL, "logs", "-f", "-n", ns, "ticker-master-0"], 5)
    lines = [l for l in out if l.startswith("tick ")]
    assert len(lines) >= 5, (out, err)
    ticks = [int(l.split()[1]) for l in lines]
    assert ticks == list(range(ticks[0], ticks[0] + len(ticks))), ticks
    # Still running: the lines came while the program was writing them.
    assert running(ns, "ticker-master-0")


def test_coach_logs_follow_a_running_replica(ns, tmp_path):
    cli = kube.coach_cli()
    kube.apply(ticker_job("cticker"), ns)
    token = kube.reader_token(ns, str(tmp_path), "log-reader",
                              "pytorchjobs.kubeflow.org,pods/log")
    kube.wait_for(lambda: running(ns, "cticker-master-0"), 120, "the replica Running")
    with kube.operator_api() as server:
        out, err = follow([cli, "--server", server, "--token-file", token,
                           "logs", "cticker", "-n", ns,
                           "--replica", "master-0", "-f"], 5)
        lines = [l for l in out if "tick " in l]
    assert len(lines) >= 5, (out, err)
    assert running(ns, "cticker-master-0")
