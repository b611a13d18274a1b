#!/usr/bin/env python3
"""coach's admission webhook configurations, as its chart renders them, for a control plane whose
API server reaches a coach-operator running on this host: prints them as a JSON List.

Usage: coach_webhooks.py HELM_TEMPLATE_YAML PORT

HELM_TEMPLATE_YAML: `helm template` output of charts/coach (webhook.enabled). Kept: its
MutatingWebhookConfiguration and ValidatingWebhookConfiguration, unchanged but for each webhook's
clientConfig, which becomes url https://localhost:PORT<path> without a caBundle: the operator
(--webhook-secret ... --webhook-extra-names=localhost) writes its own CA there, as it does in a
cluster.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webhook_loopback import check_port, load_yaml_all, point_at_loopback, print_or_refuse  # noqa: E402

KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def render(docs, port):
    port = check_port(port)
    items = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") in KINDS:
            items.append(point_at_loopback(json.loads(json.dumps(doc)), None, port,
                                           host="localhost"))
    if sorted(i["kind"] for i in items) != sorted(KINDS):
        raise ValueError("manifests: want one MutatingWebhookConfiguration and one "
                         "ValidatingWebhookConfiguration (webhook.enabled), got %s"
                         % sorted(i["kind"] for i in items))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    return print_or_refuse("coach_webhooks.py", lambda: render(load_yaml_all(argv[1]), argv[2]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
