#!/usr/bin/env python3
"""The shipped manager configuration of Kubeflow Trainer or JobSet, for a run on loopback:
prints it as YAML.

Usage: trainer_config.py trainer SHIPPED_YAML WEBHOOK_PORT METRICS_PORT HEALTH_PORT
       trainer_config.py jobset SHIPPED_YAML WEBHOOK_PORT METRICS_PORT HEALTH_PORT CERT_DIR

What changes from the module's configuration (trainer: manifests/base/manager/
controller_manager_config.yaml; jobset: config/components/manager/controller_manager_config.yaml):
leader election off; the project's own certificate management off (a certificate made by
upstream-trainer certs is served instead: jobset from CERT_DIR, the trainer from
controller-runtime's default folder, which its configuration cannot name); the webhook server on
127.0.0.1:WEBHOOK_PORT, metrics and health probes on 127.0.0.1. Everything else, client limits
and controller concurrency included, is the shipped value (or the binary's default where the
shipped file leaves it out).
"""

import sys

import yaml

KINDS = {
    "trainer": "config.trainer.kubeflow.org/v1alpha1",
    "jobset": "config.jobset.x-k8s.io/v1alpha1",
}


def port_of(text, name):
    try:
        port = int(text)
    except ValueError:
        raise ValueError("%s: %r is not a number" % (name, text))
    if not 0 < port < 65536:
        raise ValueError("%s: %d is not a TCP port" % (name, port))
    return port


def render(project, shipped, webhook_port, metrics_port, health_port, cert_dir=None):
    """The configuration `shipped` with the loopback changes above."""
    if project not in KINDS:
        raise ValueError("project: %r is neither trainer nor jobset" % project)
    if not isinstance(shipped, dict) or shipped.get("kind") != "Configuration":
        raise ValueError("shipped configuration: kind is not Configuration")
    if shipped.get("apiVersion") != KINDS[project]:
        raise ValueError("shipped configuration: apiVersion %r is not %s's %s"
                         % (shipped.get("apiVersion"), project, KINDS[project]))
    out = dict(shipped)
    out["leaderElection"] = dict(out.get("leaderElection") or {}, leaderElect=False)
    out["health"] = dict(out.get("health") or {},
                         healthProbeBindAddress="127.0.0.1:%d" % health_port)
    metrics = dict(out.get("metrics") or {}, bindAddress="127.0.0.1:%d" % metrics_port)
    webhook = dict(out.get("webhook") or {}, host="127.0.0.1", port=webhook_port)
    if project == "trainer":
        out["certManagement"] = dict(out.get("certManagement") or {}, enable=False)
    else:
        if not cert_dir:
            raise ValueError("jobset: a certificate folder is required")
        out["internalCertManagement"] = dict(out.get("internalCertManagement") or {},
                                             enable=False)
        webhook["certDir"] = cert_dir
        metrics["certDir"] = cert_dir
    out["metrics"] = metrics
    out["webhook"] = webhook
    return out


def main(argv):
    if len(argv) not in (6, 7):
        sys.stderr.write(__doc__)
        return 2
    try:
        with open(argv[2]) as f:
            shipped = yaml.safe_load(f)
        config = render(argv[1], shipped, port_of(argv[3], "webhook port"),
                        port_of(argv[4], "metrics port"), port_of(argv[5], "health port"),
                        argv[6] if len(argv) == 7 else None)
    except (OSError, ValueError) as e:
        sys.stderr.write("trainer_config.py: %s\n" % e)
        return 2
    yaml.safe_dump(config, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
