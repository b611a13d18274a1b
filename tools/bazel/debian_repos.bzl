"""Repository rules that let Bazel 4.2.3 build offline against Debian's packaged rule sets."""

def _debian_rules_cc_impl(ctx):
    # Debian ships a rules_cc newer than its Bazel: two files load use_cpp_toolchain,
    # which Bazel 4.2.3's @bazel_tools lacks. Copy the tree and spell the toolchain type out.
    src = ctx.attr.path
    result = ctx.execute(["cp", "-r", src + "/.", "."])
    if result.return_code != 0:
        fail("copying %s failed: %s" % (src, result.stderr))
    for f in [
        "cc/private/rules_impl/compiler_flag.bzl",
        "cc/private/rules_impl/cc_flags_supplier.bzl",
    ]:
        text = ctx.read(f)
        text = text.replace(', "use_cpp_toolchain")', ")")
        text = text.replace("use_cpp_toolchain()", '["@bazel_tools//tools/cpp:toolchain_type"]')
        ctx.file(f, text, executable = False)

debian_rules_cc = repository_rule(
    implementation = _debian_rules_cc_impl,
    attrs = {"path": attr.string(mandatory = True)},
    local = True,
)

def _offline_coverage_tools_impl(ctx):
    # cc_test depends on @remote_coverage_tools, which Bazel would otherwise download.
    # Coverage is not collected through Bazel here, so these tools only refuse to run.
    ctx.file("WORKSPACE", 'workspace(name = "remote_coverage_tools")\n')
    ctx.file("fail.sh", "#!/bin/sh\necho 'coverage tools are not available offline' >&2\nexit 1\n", executable = True)
    ctx.file("BUILD", """
sh_binary(name = "coverage_report_generator", srcs = ["fail.sh"], visibility = ["//visibility:public"])
sh_binary(name = "lcov_merger", srcs = ["fail.sh"], visibility = ["//visibility:public"])
""")

offline_coverage_tools = repository_rule(implementation = _offline_coverage_tools_impl)
