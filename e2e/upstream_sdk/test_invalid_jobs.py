"""Invalid jobs: create_job raises, the message names the field, and nothing is stored.

Upstream's training operator refuses these in its validating webhook (reference: name a DNS-1035
label, known replica types only, a container with the default name, every container with an image);
a user of the SDK sees create_job raise RuntimeError("Failed to create ... Error: (4xx) ...") with the
server's message, and no job appears. coach must do the same at admission.
"""

import json
import re

import pytest

from sdk_helpers import make_job, names, server_error


def no_image(job):
    job.spec.pytorch_replica_specs["Worker"].template.spec.containers[0].image = None
    return job


# id -> (kind, name, build(kind, name) -> job, regexes the server's message must match)
CASES = {
    "name-not-dns1123": ("PyTorchJob", "Bad_Name",
                         lambda k, n: make_job(k, n, {"Master": 1, "Worker": 1}),
                         [r"metadata\.name"]),
    # A valid DNS-1123 subdomain (the API server's own rule for custom resources) but not a DNS-1035
    # label: it starts with a digit. Upstream refuses it, since the job's Services take this name.
    "name-not-dns1035": ("PyTorchJob", "9lives",
                         lambda k, n: make_job(k, n, {"Master": 1, "Worker": 1}),
                         [r"metadata\.name"]),
    "pytorch-chief": ("PyTorchJob", "pt-chief",
                      lambda k, n: make_job(k, n, {"Chief": 1, "Worker": 1}),
                      [r"pytorchReplicaSpecs", r"\bChief\b"]),
    "jax-master": ("JAXJob", "jax-master",
                   lambda k, n: make_job(k, n, {"Master": 1, "Worker": 1}),
                   [r"jaxReplicaSpecs", r'unknown replica type \W*Master']),
    "container-without-image": ("PyTorchJob", "pt-no-image",
                                lambda k, n: no_image(make_job(k, n, {"Master": 1, "Worker": 1})),
                                [r"image"]),
    "no-default-container": ("PyTorchJob", "pt-no-default",
                             lambda k, n: make_job(k, n, {"Master": 1, "Worker": 1}, container="trainer"),
                             [r"containers", r"\bpytorch\b"]),
    "only-workers-replicas-0": ("PyTorchJob", "pt-zero",
                                lambda k, n: make_job(k, n, {"Worker": 0}),
                                [r"pytorchReplicaSpecs"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_create_job_raises_and_stores_nothing(training_client, case):
    kind, name, build, patterns = CASES[case]
    tc = training_client(kind)
    with pytest.raises(RuntimeError) as info:
        tc.create_job(build(kind, name))
    text = str(info.value)
    assert text.startswith(f"Failed to create {kind}"), text
    api = server_error(info.value)
    assert api is not None, f"not a refusal by the server: {text}"
    assert 400 <= api.status < 500, f"HTTP {api.status}: {text}"
    message = json.loads(api.body).get("message", "") if api.body else ""
    print(f"[{case}] HTTP {api.status}: {message}")  # shown with pytest -s, and on failure
    for p in patterns:
        assert re.search(p, message), f"the server's message does not match /{p}/: {message!r}"
        assert re.search(p, text), f"the exception does not match /{p}/: {text!r}"

    with pytest.raises(RuntimeError):
        tc.get_job(name)
    assert name not in names(tc.list_jobs())


def test_the_same_builders_make_a_valid_job(training_client):
    # Control: what the invalid cases change is the only thing wrong with them.
    tc = training_client("PyTorchJob")
    tc.create_job(make_job("PyTorchJob", "pt-valid", {"Master": 1, "Worker": 1}))
    assert names(tc.list_jobs()) == ["pt-valid"]
    tj = training_client("JAXJob")
    tj.create_job(make_job("JAXJob", "jax-valid", {"Worker": 2}))
    assert names(tj.list_jobs()) == ["jax-valid"]
