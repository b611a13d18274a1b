"""The external repositories coach needs, for its own WORKSPACE and for workspaces that use it.

    local_repository(name = "coach", path = "/path/to/coach")
    load("@coach//tools/bazel:deps.bzl", "coach_dependencies")
    coach_dependencies()
"""

load("//tools/bazel:debian_repos.bzl", "debian_rules_cc", "offline_coverage_tools")

def coach_dependencies():
    """Declares the Debian-packaged rule sets coach builds with (idempotent)."""
    if not native.existing_rule("rules_cc"):
        debian_rules_cc(name = "rules_cc", path = "/usr/share/bazel/rules/cc")
    if not native.existing_rule("platforms"):
        native.local_repository(name = "platforms", path = "/usr/share/bazel/tools/platforms")
    if not native.existing_rule("rules_java"):
        native.local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")
    if not native.existing_rule("bazel_skylib"):
        native.local_repository(name = "bazel_skylib", path = "/usr/share/bazel/tools/skylib")
    if not native.existing_rule("remote_coverage_tools"):
        offline_coverage_tools(name = "remote_coverage_tools")
