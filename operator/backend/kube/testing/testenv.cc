#include "operator/backend/kube/testing/testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/shell.h"
#include "operator/backend/kube/client/kube_config.h"

namespace coach::kubeclient::testing {
namespace {

using ::coach::testing::ShellQuote;

constexpr char kAnchor[] = "operator/backend/kube/testing/testenv.cc";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

std::string WorkspaceRoot() {
  std::string srcdir = Env("TEST_SRCDIR");
  std::string ws = Env("TEST_WORKSPACE");
  for (const std::string& candidate : {srcdir + "/" + ws + "/" + kAnchor, std::string(kAnchor)}) {
    char* real = ::realpath(candidate.c_str(), nullptr);
    if (real == nullptr) continue;
    std::string r(real);
    free(real);
    if (absl::EndsWith(r, kAnchor)) return r.substr(0, r.size() - sizeof(kAnchor) + 1);
  }
  return "";
}

bool InCi() {
  std::string ci = absl::AsciiStrToLower(Env("CI"));
  return ci == "true" || ci == "1";
}

absl::StatusOr<std::unique_ptr<TestEnv>> TestEnv::Start() {
  std::unique_ptr<TestEnv> env(new TestEnv());
  std::string given = Env("COACH_TESTENV_KUBECONFIG");
  std::string root = WorkspaceRoot();
  if (root.empty())
    return absl::NotFoundError("cannot find the workspace (runfiles of testenv.cc)");
  env->script_ = root + "tools/testenv/testenv";
  struct stat st;
  if (::stat(env->script_.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(env->script_, " is missing"));
  }
  std::string bin;
  if (RunShell(ShellQuote(env->script_) + " bin 2>/dev/null", &bin) != 0) {
    return absl::NotFoundError("`testenv bin` failed (no Go toolchain?)");
  }
  bin = std::string(absl::StripAsciiWhitespace(bin));
  env->bin_ = bin;
  if (!given.empty()) {
    env->kubeconfig_ = given;
    env->kubectl_ = absl::StrCat(bin, "/kubectl --kubeconfig ", ShellQuote(given));
    return env;
  }
  for (const char* b : {"etcd", "kube-apiserver", "kubectl", "kwok"}) {
    if (::stat(absl::StrCat(bin, "/", b).c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrCat("testenv binary ", b, " is not built in ", bin,
                                              ": run tools/testenv/testenv build"));
    }
  }
  char tmpl[] = "/tmp/coach-testenv-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  env->dir_ = tmpl;
  std::string out;
  std::string log = env->dir_ + ".up.log";
  int rc = RunShell(absl::StrCat(ShellQuote(env->script_), " up --dir ", ShellQuote(env->dir_),
                                 " 2>", ShellQuote(log)),
                    &out);
  if (rc != 0) {
    // `env` goes out of scope: its destructor's `testenv down` stops what did start.
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.size() > 4000) text = text.substr(text.size() - 4000);
    return absl::UnavailableError(
        absl::StrCat("testenv up --dir ", env->dir_, " exited ", rc, ":\n", text));
  }
  ::unlink(log.c_str());
  env->kubeconfig_ = env->dir_ + "/kubeconfig";
  env->kubectl_ = absl::StrCat(bin, "/kubectl --kubeconfig ", ShellQuote(env->kubeconfig_));
  return env;
}

absl::StatusOr<std::unique_ptr<RestKubeClient>> TestEnv::NewClient(
    RestKubeClientOptions options) const {
  absl::StatusOr<KubeConfig> config = LoadKubeConfigFile(kubeconfig_);
  if (!config.ok()) return config.status();
  return RestKubeClient::Create(*config, std::move(options));
}

absl::Status TestEnv::ApplyCoachCrds() const {
  std::string out;
  const std::string crds = WorkspaceRoot() + "charts/coach/crds";
  if (int rc = RunShell(absl::StrCat(kubectl_, " apply -f ", ShellQuote(crds), " 2>&1"), &out);
      rc != 0) {
    return absl::InternalError(
        absl::StrCat("kubectl apply -f charts/coach/crds: exit ", rc, ": ", out));
  }
  out.clear();
  if (int rc = RunShell(absl::StrCat(kubectl_,
                                     " wait --for condition=established --timeout=60s"
                                     " crd/pytorchjobs.kubeflow.org crd/tfjobs.kubeflow.org"
                                     " crd/mpijobs.kubeflow.org crd/xgboostjobs.kubeflow.org"
                                     " crd/paddlejobs.kubeflow.org crd/jaxjobs.kubeflow.org 2>&1"),
                        &out);
      rc != 0) {
    return absl::InternalError(absl::StrCat("kubectl wait crds: exit ", rc, ": ", out));
  }
  return absl::OkStatus();
}

TestEnv::~TestEnv() {
  if (dir_.empty() || keep_) return;
  std::string out;
  RunShell(absl::StrCat(ShellQuote(script_), " down --dir ", ShellQuote(dir_), " >/dev/null 2>&1"),
           &out);
  ::rmdir(dir_.c_str());
}

}  // namespace coach::kubeclient::testing
