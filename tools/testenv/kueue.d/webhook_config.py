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

import base64
import json
import sys

import yaml

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
    if not 0 < port < 65536:
        raise ValueError("port: %d is not a TCP port" % port)
    ca = base64.b64encode(ca_pem).decode()
    items = []
    for doc in docs:
        if not doc:
            continue
        kind = doc.get("kind")
        if kind not in KINDS:
            raise ValueError("manifest: kind %r is not a webhook configuration" % kind)
        out = json.loads(json.dumps(doc))
        out["metadata"] = {"name": KINDS[kind], "labels": {"app.kubernetes.io/part-of": "coach-testenv"}}
        hooks = []
        for i, hook in enumerate(out.get("webhooks") or []):
            if not wanted(hook, resources):
                continue
            path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path", "")
            if not path.startswith("/"):
                raise ValueError("%s webhooks[%d].clientConfig.service.path: %r is not a path"
                                 % (kind, i, path))
            hook["clientConfig"] = {"url": "https://127.0.0.1:%d%s" % (port, path), "caBundle": ca}
            hooks.append(hook)
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
    with open(argv[1]) as f:
        docs = list(yaml.safe_load_all(f))
    with open(argv[2], "rb") as f:
        ca_pem = f.read()
    try:
        port = int(argv[3])
    except ValueError:
        sys.stderr.write("port: %r is not a number\n" % argv[3])
        return 2
    try:
        config = render(docs, ca_pem, port, set(argv[4:]))
    except ValueError as e:
        sys.stderr.write("webhook_config.py: %s\n" % e)
        return 2
    json.dump(config, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
