#!/usr/bin/env python3
"""Upstream's ValidatingWebhookConfiguration (from its module's manifests) for a control plane
whose API server reaches the operator on loopback: prints it as JSON.

Usage: webhook_config.py MANIFESTS_YAML PATCH_YAML CA_CRT PORT

What changes from the module's manifests/base/webhook: the kustomize patch's /metadata/name
(the name upstream's cert-controller patches: validator.training-operator.kubeflow.org), each
webhook's clientConfig.service {name, namespace, path} becomes
clientConfig.url https://127.0.0.1:PORT<path>, and caBundle is the CA given. Rules, failure
policy, side effects and admission review versions are the module's.
"""

import json
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/testenv"))
from webhook_loopback import check_port, point_at_loopback  # noqa: E402


def render(manifest, patch_ops, ca_pem, port):
    """The configuration with the patch's name applied and every webhook pointed at loopback."""
    if manifest.get("kind") != "ValidatingWebhookConfiguration":
        raise ValueError("manifest: kind is %r, want ValidatingWebhookConfiguration"
                         % manifest.get("kind"))
    port = check_port(port)
    out = json.loads(json.dumps(manifest))
    for op in patch_ops:
        if op.get("op") == "replace" and op.get("path") == "/metadata/name":
            out["metadata"]["name"] = op["value"]
    out["metadata"].setdefault("labels", {})["control-plane"] = "kubeflow-training-operator"
    point_at_loopback(out, ca_pem, port, label="manifest")
    return out


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        manifest = yaml.safe_load(f)
    with open(argv[2]) as f:
        patch_ops = yaml.safe_load(f) or []
    with open(argv[3], "rb") as f:
        ca_pem = f.read()
    try:
        config = render(manifest, patch_ops, ca_pem, argv[4])
    except ValueError as e:
        sys.stderr.write("webhook_config.py: %s\n" % e)
        return 2
    json.dump(config, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
