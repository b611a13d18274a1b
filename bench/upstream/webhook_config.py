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

import base64
import json
import sys

import yaml


def render(manifest, patch_ops, ca_pem, port):
    """The configuration with the patch's name applied and every webhook pointed at loopback."""
    if manifest.get("kind") != "ValidatingWebhookConfiguration":
        raise ValueError("manifest: kind is %r, want ValidatingWebhookConfiguration"
                         % manifest.get("kind"))
    if not 0 < port < 65536:
        raise ValueError("port: %d is not a TCP port" % port)
    out = json.loads(json.dumps(manifest))
    for op in patch_ops:
        if op.get("op") == "replace" and op.get("path") == "/metadata/name":
            out["metadata"]["name"] = op["value"]
    out["metadata"].setdefault("labels", {})["control-plane"] = "kubeflow-training-operator"
    ca = base64.b64encode(ca_pem).decode()
    webhooks = out.get("webhooks") or []
    if not webhooks:
        raise ValueError("manifest: webhooks is empty")
    for i, hook in enumerate(webhooks):
        service = (hook.get("clientConfig") or {}).get("service") or {}
        path = service.get("path", "")
        if not path.startswith("/"):
            raise ValueError("webhooks[%d].clientConfig.service.path: %r is not a path" % (i, path))
        hook["clientConfig"] = {"url": "https://127.0.0.1:%d%s" % (port, path), "caBundle": ca}
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
        port = int(argv[4])
    except ValueError:
        sys.stderr.write("port: %r is not a number\n" % argv[4])
        return 2
    try:
        config = render(manifest, patch_ops, ca_pem, port)
    except ValueError as e:
        sys.stderr.write("webhook_config.py: %s\n" % e)
        return 2
    json.dump(config, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
