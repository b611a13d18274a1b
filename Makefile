# The two commands a newcomer needs: `make demo` and `make test`. See README.md.
PREFIX ?= /usr/local
BAZEL ?= bazel

.PHONY: bootstrap build test demo fmt clean

bootstrap:
	@tools/bootstrap

build: bootstrap
	$(BAZEL) build //...

test: bootstrap
	@tools/run_tests

fmt:
	@find . -path ./bazel-\* -prune -o \( -name '*.h' -o -name '*.cc' \) -print | xargs clang-format -i

clean:
	$(BAZEL) clean
