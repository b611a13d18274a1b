"""coach as the chart installs it: the operator runs as a pod (uid 65532, read-only root
filesystem, probes green, in-cluster config, the chart's RBAC only), two replicas with leader
election, and a lost permission is visible on the job."""
import json
import os

import kube
from test_frameworks import framework_example

RELEASE = os.environ.get("COACH_E2E_RELEASE", "coach")


def operator_pods():
    return kube.get_json("pods", "-n", kube.OPERATOR_NS, "-l",
                         "app.kubernetes.io/name=coach")["items"]


def leader():
    lease = kube.get_json("lease", "-n", kube.OPERATOR_NS,
                          os.environ.get("COACH_E2E_LEASE", "coach-operator"))
    # "<pod name>_<random>": the pod part says which replica leads.
    return lease["spec"].get("holderIdentity", "").split("_")[0]


def test_operator_pods_run_as_the_chart_says():
    pods = operator_pods()
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["status"]["phase"] == "Running", name
        conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conditions.get("Ready") == "True", (name, conditions)  # readiness probe green
        status = pod["status"]["containerStatuses"][0]
        assert status["restartCount"] == 0, (name, status)  # liveness never failed
        c = pod["spec"]["containers"][0]
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert pod["spec"]["securityContext"]["runAsUser"] == 65532
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        assert c["livenessProbe"] and c["readinessProbe"]
        # In-cluster config: the chart's ServiceAccount token, nothing else mounted for the API.
        assert pod["spec"]["serviceAccountName"].startswith(RELEASE)
        assert "--kubeconfig" not in " ".join(c.get("args", []))
    assert leader() in {p["metadata"]["name"] for p in pods}, leader()


def test_leader_failover_reconciles_each_job_once(ns):
    old = leader()
    kube.kubectl("delete", "pod", "-n", kube.OPERATOR_NS, old, "--wait=false")
    kube.wait_for(lambda: leader() not in ("", old), 90, "another replica to lead")
    job = framework_example("examples/jax/jaxjob.yaml", "after-failover", kube.FRAMEWORK_IMAGES["jax"])
    kube.apply(job, ns)
    done = kube.wait_finished("JAXJob", "after-failover", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.get_json("pods", "-n", ns)["items"]
    names = sorted(p["metadata"]["name"] for p in pods)
    assert names == ["after-failover-worker-0", "after-failover-worker-1"], names
    # The deleted replica is replaced by the Deployment: two operator pods again.
    kube.wait_for(lambda: len([p for p in operator_pods()
                               if p["status"].get("phase") == "Running"]) == 2, 120,
                  "the Deployment to replace the deleted pod")


def test_a_permission_the_chart_lacks_is_visible_on_the_job(ns):
    """The operator has only the chart's RBAC: take `create services` out of its ClusterRole and
    a new job says why it cannot start (a Warning event on the job), instead of stalling."""
    roles = kube.get_json("clusterroles", "-l", "app.kubernetes.io/name=coach")["items"]

    def creates_services(r):
        return any("services" in rule.get("resources", []) and "create" in rule.get("verbs", [])
                   for rule in r.get("rules", []))
    # The chart has more ClusterRoles (the API auth delegator's, Karpenter's): the one that grants
    # `create services` is the operator's.
    granting = [r for r in roles if creates_services(r)]
    assert len(granting) == 1, [r["metadata"]["name"] for r in roles]
    role = granting[0]
    original = json.loads(json.dumps(role))
    for rule in role["rules"]:
        if "services" in rule.get("resources", []) and "create" in rule.get("verbs", []):
            rule["verbs"] = [v for v in rule["verbs"] if v != "create"]
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        role["metadata"].pop(key, None)
    kube.kubectl("replace", "-f", "-", stdin=json.dumps(role))
    try:
        kube.apply(framework_example("examples/jax/jaxjob.yaml", "refused", kube.FRAMEWORK_IMAGES["jax"]), ns)

        def warned():
            events = kube.get_json("events", "-n", ns)["items"]
            return [e["message"] for e in events
                    if e.get("reason") == "FailedCreateService" and e.get("type") == "Warning"]
        messages = kube.wait_for(warned, 90, "a FailedCreateService warning")
        assert any("forbidden" in m.lower() for m in messages), messages
        assert not kube.condition(kube.get_json("jaxjobs", "refused", "-n", ns), "Succeeded")
    finally:
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            original["metadata"].pop(key, None)
        kube.kubectl("replace", "-f", "-", stdin=json.dumps(original))
