#!/usr/bin/env python3
"""Kueue's webhook configurations (from its module's config/components/webhook/manifests.yaml)
for a control plane whose API server reaches Kueue on loopback: prints them as a JSON List.

Usage: webhook_config.py MANIFESTS_YAML CA_CRT PORT RESOURCE...

Kept: the webhooks on Kueue's own kinds (group kueue.x-k8s.io) and on the RESOURCEs given
(plural names, e.g. trainjobs pytorchjobs: the frameworks the Configuration enables), so that
no other object of the cluster (pods, batch Jobs, ...) waits on this test's Kueue. Changed: the
configurations are named coach-testenv-kueue-{mutating,validating}, and each webhook's
clientConfig.service {name, namespace, path} becomes clientConfig.url
https://127.0.0.1:PORT<path> with the CA given as caBundle. Rules, failure policies, side
effects and admission review versions are Kueue's.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from webhook_loopback import (check_port, load_yaml_all, point_at_loopback,  # noqa: E402
                              print_or_refuse, read_bytes)

KINDS = {
    "MutatingWebhookConfiguration": "coach-testenv-kueue-mutating",
    "ValidatingWebhookConfiguration": "coach-testenv-kueue-validating",
}


def wanted(hook, resources):
    """Whether a webhook acts on Kueue's kinds or on one of `resources`."""
    for rule in hook.get("rules") or []:
        if "kueue.x-k8s.io" in (rule.get("apiGroups") or []):
            return True
        if set(rule.get("resources") or []) & resources:
            return True
    return False


def render(docs, ca_pem, port, resources):
    """The configurations, filtered and pointed at loopback."""
    port = check_port(port)
    items = []
    for doc in docs:
        if not doc:
            continue
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in KINDS:
            raise ValueError("manifest: kind %r is not a webhook configuration" % kind)
        out = json.loads(json.dumps(doc))
        out["metadata"] = {"name": KINDS[kind],
                           "labels": {"app.kubernetes.io/part-of": "coach-testenv"}}
        # Pointed before the filter, so that an error names the webhook's index in the manifest.
        point_at_loopback(out, ca_pem, port, label=kind)
        hooks = [hook for hook in out["webhooks"] if wanted(hook, resources)]
        if not hooks:
            raise ValueError("%s: no webhook left for %s" % (kind, sorted(resources)))
        out["webhooks"] = hooks
        items.append(out)
    if not items:
        raise ValueError("manifest: no webhook configuration")
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    return print_or_refuse("webhook_config.py", lambda: render(
        load_yaml_all(argv[1]), read_bytes(argv[2]), argv[3], set(argv[4:])))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
