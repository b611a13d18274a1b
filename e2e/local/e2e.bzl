"""local_e2e_test: one test binary of the e2e/local suite."""

def local_e2e_test(name, srcs = None, size = "large", deps = [], **kwargs):
    """A cc_test of <name>.cc (or `srcs`) on the suite's operator fixture.

    Args:
      name: the test.
      srcs: its sources; [<name>.cc] when not given.
      size: "large" unless said.
      deps: what the test needs beyond the fixture and gtest_main.
      **kwargs: passed to cc_test.
    """
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs or [name + ".cc"],
        deps = [
            ":operator_fixture",
            "//third_party:gtest_main",
        ] + deps,
        **kwargs
    )
