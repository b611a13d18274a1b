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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/testenv"))
from webhook_loopback import (check_port, load_yaml, point_at_loopback,  # noqa: E402
                              print_or_refuse, read_bytes)


def render(manifest, patch_ops, ca_pem, port):
    """The configuration with the patch's name applied and every webhook pointed at loopback."""
    kind = manifest.get("kind") if isinstance(manifest, dict) else None
    if kind != "ValidatingWebhookConfiguration":
        raise ValueError("manifest: kind is %r, want ValidatingWebhookConfiguration" % kind)
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
    return print_or_refuse("webhook_config.py", lambda: render(
        load_yaml(argv[1]), load_yaml(argv[2]) or [], read_bytes(argv[3]), argv[4]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
