"""The suites of tools/suites as Bazel tests (see tools/suites/lib.sh)."""

def coach_suite(name, data = [], tags = [], timeout = "long", **kwargs):
    """One suite: tools/suites/NAME.sh, run unsandboxed on this machine, never cached.

    The suites start real components on this machine (control planes, a kubelet, MLflow servers)
    and read the source tree, so Bazel cannot know all of their inputs: `external` keeps their
    results out of every cache, `local` runs them outside the sandbox.
    """
    native.sh_test(
        name = name,
        srcs = [name + ".sh"],
        data = [
            ":lib.sh",
            ":junit_report.py",
        ] + data,
        tags = ["suite", "local", "external"] + tags,
        timeout = timeout,
        **kwargs
    )
