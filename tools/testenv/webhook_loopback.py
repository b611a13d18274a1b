"""Admission webhooks of a project's manifests, called on loopback.

A project's manifests register its webhooks through an in-cluster Service; a test control plane
runs the project's managers on this host, so each webhook's clientConfig.service {name,
namespace, path} becomes clientConfig.url https://127.0.0.1:PORT<path> with the CA that signed
the manager's serving certificate as caBundle. Everything else of a webhook stays the project's.
Used by tools/testenv/kueue.d/webhook_config.py and bench/upstream's webhook renderers.
"""

import base64
import json
import sys

import yaml


def check_port(port):
    """`port` as an int, or ValueError naming it."""
    try:
        value = int(port)
    except (TypeError, ValueError):
        raise ValueError("port: %r is not a number" % (port,))
    if not 0 < value < 65536:
        raise ValueError("port: %d is not a TCP port" % value)
    return value


def point_at_loopback(config, ca_pem, port, label=None, host="127.0.0.1"):
    """Every webhook of `config` (changed in place, and returned) called at
    https://HOST:port<its service path> (host: 127.0.0.1, or localhost for a certificate that
    names no address). ca_pem None leaves caBundle out (a manager that writes its own). Errors
    name `label` (default: the kind) and the webhook's index."""
    port = check_port(port)
    label = label or config.get("kind", "configuration")
    webhooks = config.get("webhooks") or []
    if not webhooks:
        raise ValueError("%s: webhooks is empty" % label)
    for i, hook in enumerate(webhooks):
        path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path", "")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("%s: webhooks[%d].clientConfig.service.path: %r is not a path"
                             % (label, i, path))
        hook["clientConfig"] = {"url": "https://%s:%d%s" % (host, port, path)}
        if ca_pem is not None:
            hook["clientConfig"]["caBundle"] = base64.b64encode(ca_pem).decode()
    return config


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def load_yaml_all(path):
    with open(path) as f:
        return list(yaml.safe_load_all(f))


def print_or_refuse(program, build):
    """A renderer's command line: prints build()'s configuration as JSON and returns 0, or names
    what was wrong with the input (a file, its YAML, a field) and returns 2."""
    try:
        config = build()
    except (OSError, ValueError, KeyError, IndexError, yaml.YAMLError) as e:
        sys.stderr.write("%s: %s\n" % (program, e))
        return 2
    json.dump(config, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0
