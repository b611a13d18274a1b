"""Protobuf and gRPC C++ code generation with Debian's protoc and grpc_cpp_plugin."""

def cc_proto_grpc_library(name, srcs, deps = [], grpc = True, visibility = None):
    """Generates C++ (and gRPC) code for srcs and wraps it as a cc_library.

    Imports resolve against the workspace root and /usr/include (well-known types).
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]

    # Imports are workspace-relative ("api/v1/x.proto"); when coach is an external
    # repository of another workspace, its files live under external/<name>/.
    repo = native.repository_name().lstrip("@")
    root = "external/" + repo if repo else "."
    out = "$(GENDIR)/" + root if repo else "$(GENDIR)"
    grpc_flags = ""
    if grpc:
        grpc_flags = "--grpc_out=" + out + " --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin "
    native.genrule(
        name = name + "_codegen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = ("/usr/bin/protoc -I" + root + " -I/usr/include --cpp_out=" + out + " " + grpc_flags +
               " ".join(["$(location %s)" % s for s in srcs])),
    )
    native.filegroup(name = name + "_srcs", srcs = srcs, visibility = visibility)
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["//third_party:grpc" if grpc else "//third_party:protobuf"],
        visibility = visibility,
    )
