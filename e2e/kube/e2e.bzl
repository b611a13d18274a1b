"""kube_e2e_test: one test binary of the e2e/kube suite."""

# The tests start processes on loopback and read the testenv binaries cached under
# $HOME/.cache/coach/testenv, hence local and no-sandbox.
KUBE_E2E_TAGS = [
    "kube",
    "local",
    "no-sandbox",
]

def kube_e2e_test(name, deps = [], **kwargs):
    """A large cc_test of <name>.cc on the suite's fixture, tagged as the suite is.

    Args:
      name: the test, and the stem of its one source file.
      deps: what the test needs beyond the fixture, absl, gtest and nlohmann_json.
      **kwargs: passed to cc_test.
    """
    native.cc_test(
        name = name,
        size = "large",
        srcs = [name + ".cc"],
        tags = KUBE_E2E_TAGS,
        deps = [
            ":kube_fixture",
            "//third_party:absl",
            "//third_party:gtest_main",
            "//third_party:nlohmann_json",
        ] + deps,
        **kwargs
    )
