"""A fresh namespace per test; on failure the namespace's objects, events and logs are printed."""
import re
import uuid

import pytest

import kube


@pytest.fixture
def ns(request):
    name = "rp-%s-%s" % (re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-"),
                         uuid.uuid4().hex[:5])
    kube.kubectl("create", "namespace", name)
    kube.wait_for(lambda: kube.kubectl("get", "serviceaccount", "default", "-n", name,
                                       check=False).returncode == 0, 60, "default ServiceAccount")
    yield name
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(kube.describe_namespace(name))
    kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
