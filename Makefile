# The two commands a newcomer needs: `make demo` and `make test`. See README.md.
PREFIX ?= /usr/local
BAZEL ?= bazel

.PHONY: bootstrap build test test-kube-minimum demo install fmt clean

bootstrap:
	@tools/bootstrap

build: bootstrap
	$(BAZEL) build //...

# The Python environments are installed by run_tests, beside the control plane's build.
test:
	@tools/bootstrap --packages-only
	@tools/run_tests

# The Kubernetes suites against the oldest Kubernetes the chart supports (docs/kubernetes.md);
# builds that control plane once (its own cache). Manual: not part of `make test`.
test-kube-minimum:
	@tools/test_kube_minimum

# The PyTorch DDP example on the local backend, end to end; exit 0 only when it Succeeded.
demo:
	@tools/demo

# The C++ SDK: static library, headers and coach-sdk.pc under $(PREFIX).
install: bootstrap
	PREFIX=$(PREFIX) tools/install_sdk.sh

# clang-format over every .h/.cc and buildifier over BUILD files, as tools/suites/lint.sh checks.
fmt:
	@tools/format.sh

clean:
	$(BAZEL) clean
