#!/usr/bin/env python3
"""Upstream Trainer's and JobSet's webhook registrations (from their modules' manifests and
kustomize patches) for a control plane whose API server reaches each manager on loopback:
prints one v1 List as JSON.

Usage: trainer_webhooks.py CA_CRT MANIFESTS:PORT:MUTATING_PATCH:VALIDATING_PATCH...

Each MANIFESTS file holds a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration;
the patch files are the JSON patches (RFC 6902 `add` and `replace`, as the modules' kustomize
patches use) their kustomizations apply to each. What changes after the patches: each webhook's
clientConfig.service {name, namespace, path} becomes clientConfig.url
https://127.0.0.1:PORT<path>, with the CA as caBundle. Names, rules, object selectors, failure
policies, side effects and review versions are the modules'.
"""

import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/testenv"))
from webhook_loopback import (check_port, load_yaml, load_yaml_all, point_at_loopback,  # noqa: E402
                              print_or_refuse, read_bytes)

PATCHED_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _tokens(path):
    if not path.startswith("/"):
        raise ValueError("patch path %r does not start with /" % path)
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def apply_patch(doc, ops):
    """`doc` with the JSON patch `ops` applied (add and replace; other operations refused)."""
    out = copy.deepcopy(doc)
    for i, op in enumerate(ops or []):
        kind = op.get("op")
        if kind not in ("add", "replace"):
            raise ValueError("patch[%d].op: %r is not add or replace" % (i, kind))
        tokens = _tokens(op.get("path", ""))
        parent = out
        for t in tokens[:-1]:
            parent = parent[int(t)] if isinstance(parent, list) else parent[t]
        last = tokens[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(index, copy.deepcopy(op["value"]))
            else:
                if index >= len(parent):
                    raise ValueError("patch[%d].path: %s is past the list's end" % (i, op["path"]))
                parent[index] = copy.deepcopy(op["value"])
        else:
            if kind == "replace" and last not in parent:
                raise ValueError("patch[%d].path: %s does not exist" % (i, op["path"]))
            parent[last] = copy.deepcopy(op["value"])
    return out


def render(docs, patches, ca_pem, port):
    """The registrations of one project: `patches` maps a kind to its JSON patch."""
    out = []
    for doc in docs:
        if not doc:
            continue
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in PATCHED_KINDS:
            raise ValueError("manifests: kind %r is not a webhook configuration" % kind)
        patched = apply_patch(doc, patches.get(kind))
        label = patched.get("metadata", {}).get("name", kind)
        out.append(point_at_loopback(patched, ca_pem, port, label=label))
    kinds = sorted(d["kind"] for d in out)
    if kinds != sorted(PATCHED_KINDS):
        raise ValueError("manifests: want one of each of %s, have %s" % (PATCHED_KINDS, kinds))
    return out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2

    def build():
        ca_pem = read_bytes(argv[1])
        items = []
        for spec in argv[2:]:
            parts = spec.split(":")
            if len(parts) != 4:
                raise ValueError("%r is not MANIFESTS:PORT:MUTATING_PATCH:VALIDATING_PATCH" % spec)
            manifests, port, mutating, validating = parts
            port = check_port(port)
            patches = {kind: load_yaml(path) or []
                       for kind, path in zip(PATCHED_KINDS, (mutating, validating))}
            items.extend(render(load_yaml_all(manifests), patches, ca_pem, port))
        return {"apiVersion": "v1", "kind": "List", "items": items}

    return print_or_refuse("trainer_webhooks.py", build)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
