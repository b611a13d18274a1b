#include "e2e/kube/kube_fixture.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace coach::e2e::kube {
namespace {

// What a child must not take from the test's environment: it sees only the server and
// the kubeconfig the fixture gives it.
std::vector<std::string> DroppedEnv() { return {"COACH_", "KUBECONFIG="}; }

std::string NewTmpPath(const std::string& stem) {
  static std::atomic<int> n{0};
  return absl::StrCat(TestTmpDir(), "/", stem, "-", getpid(), "-", ++n);
}

ControlPlane* g_cp = nullptr;

using ::coach::kubeclient::testing::TestEnv;

}  // namespace

CmdResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                     absl::Duration timeout, const std::vector<std::string>& env_overrides) {
  const std::string base = NewTmpPath("cmd");
  std::string in_path;
  if (!input.empty()) {
    in_path = base + ".in";
    WriteFile(in_path, input);
  }
  CmdResult result =
      RunProcess(argv, ChildEnv(env_overrides, DroppedEnv()), in_path, base, timeout);
  unlink((base + ".out").c_str());
  unlink((base + ".err").c_str());
  if (!in_path.empty()) unlink(in_path.c_str());
  return result;
}

CmdResult RunCoach(const std::string& server, const std::vector<std::string>& args,
                   const std::string& input, absl::Duration timeout) {
  std::vector<std::string> argv = {Runfile("sdk/cpp/cli/coach")};
  if (!server.empty()) argv.insert(argv.end(), {"--server", server});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, input, timeout);
}

// ---------------------------------------------------------------- ControlPlane

ControlPlane* ControlPlane::Get() { return g_cp; }

absl::Status ControlPlane::Start() {
  if (g_cp != nullptr) return absl::OkStatus();
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<TestEnv>> env = TestEnv::Start();
  if (!env.ok()) return env.status();
  auto cp = std::make_unique<ControlPlane>();
  cp->env_ = std::move(*env);
  std::fprintf(stderr, "[kube-e2e] control plane up in %s (%s)\n",
               absl::FormatDuration(absl::Now() - begin).c_str(), cp->env_->dir().c_str());
  if (absl::Status crds = cp->env_->ApplyCoachCrds(); !crds.ok()) return crds;
  g_cp = cp.release();
  return absl::OkStatus();
}

void ControlPlane::Stop() {
  if (g_cp == nullptr) return;
  if (!EnvOrEmpty("COACH_E2E_KEEP").empty()) {
    g_cp->env_->KeepRunning();
    std::fprintf(stderr, "[kube-e2e] keeping the control plane in %s\n", g_cp->env_->dir().c_str());
  }
  delete g_cp;
  g_cp = nullptr;
}

std::vector<std::string> ControlPlane::KubectlArgv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {env_->bin() + "/kubectl", "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

CmdResult ControlPlane::Kubectl(const std::vector<std::string>& args, const std::string& input,
                                absl::Duration timeout) const {
  return RunCommand(KubectlArgv(args), input, timeout);
}

absl::Status ControlPlane::RestartApiServer(absl::Duration down_for) {
  if (env_->dir().empty()) return absl::NotFoundError("not this binary's control plane");
  const std::string pid_file = env_->dir() + "/pids/kube-apiserver";
  const pid_t pid = std::atoi(ReadFileOrEmpty(pid_file).c_str());
  if (pid <= 0) return absl::NotFoundError("no kube-apiserver pid file");
  std::string cmdline = ReadProcFile(pid, "cmdline");
  if (cmdline.empty()) return absl::NotFoundError("kube-apiserver is not running");
  std::vector<std::string> argv = absl::StrSplit(cmdline, '\0', absl::SkipEmpty());
  kill(pid, SIGKILL);
  // Not our child (testenv started it with setsid): gone, or a zombie of its own parent.
  Eventually(
      [&] {
        const char state = ProcState(pid);
        return kill(pid, 0) != 0 || state == '?' || state == 'Z';
      },
      absl::Seconds(5), absl::Milliseconds(50));
  absl::SleepFor(down_for);
  const std::string log = env_->dir() + "/logs/kube-apiserver.log";
  // A grandchild in its own session, so testenv's `down` can stop it as before.
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    const pid_t grandchild =
        Spawn(argv, ChildEnv({}, DroppedEnv()), "", log, log, /*die_with_parent=*/false);
    WriteFile(pid_file, absl::StrCat(grandchild, "\n"));
    _exit(grandchild > 0 ? 0 : 1);
  }
  waitpid(child, nullptr, 0);
  const bool ready = Eventually(
      [&] {
        CmdResult r = Kubectl({"get", "--raw", "/readyz"}, "", absl::Seconds(10));
        return r.exit_code == 0 && absl::StripAsciiWhitespace(r.out) == "ok";
      },
      absl::Seconds(90), absl::Milliseconds(300));
  if (!ready) return absl::DeadlineExceededError("kube-apiserver not ready after the restart");
  return absl::OkStatus();
}

// ---------------------------------------------------------------- OperatorProcess

namespace {

// The operator's --state-dir, and its HOME.
std::string StateDir(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name, "-state");
}

std::vector<std::string> KubeOperatorFlags(const std::string& state, const std::string& kubeconfig,
                                           const std::vector<std::string>& extra_args) {
  std::vector<std::string> flags = {
      "--backend=kube",
      "--kubeconfig=" + kubeconfig,
      "--state-dir=" + state,
      "--log-level=debug",
  };
  bool auth_given = false;
  for (const std::string& arg : extra_args) {
    if (arg == kOperatorDefaultApiAuth) {
      auth_given = true;
      continue;
    }
    auth_given =
        auth_given || absl::StartsWith(arg, "--api-auth") || absl::StartsWith(arg, "--token-file");
    flags.push_back(arg);
  }
  // Most suites call the API as nobody in particular; the default (kubernetes) is the
  // subject of api_auth_test.
  if (!auth_given) flags.push_back("--api-auth=none");
  return flags;
}

}  // namespace

OperatorProcess::OperatorProcess(const std::string& name, const std::string& dir,
                                 const std::string& kubeconfig,
                                 const std::vector<std::string>& extra_args)
    : LoopbackOperator(name, dir, KubeOperatorFlags(StateDir(dir, name), kubeconfig, extra_args),
                       ChildEnv({"HOME=" + StateDir(dir, name)}, DroppedEnv())) {
  mkdir(StateDir(dir, name).c_str(), 0755);
}

// ---------------------------------------------------------------- KubeTest

std::unique_ptr<OperatorProcess> KubeTest::op_;
bool KubeTest::skip_ = false;
std::string KubeTest::skip_reason_;

std::vector<std::string>& KubeTest::OperatorArgs() {
  static std::vector<std::string> args;
  return args;
}

bool& KubeTest::StartSuiteOperator() {
  static bool start = true;
  return start;
}

void KubeTest::SetUpTestSuite() {
  if (ControlPlane::Get() != nullptr) return;
  absl::Status s = ControlPlane::Start();
  if (!s.ok()) {
    skip_ = true;
    skip_reason_ = s.ToString();
    return;
  }
  if (StartSuiteOperator()) {
    op_ = std::make_unique<OperatorProcess>("operator", TestTmpDir(), cp().kubeconfig(),
                                            OperatorArgs());
    const absl::Time begin = absl::Now();
    absl::Status started = op_->Start();
    if (!started.ok()) {
      skip_ = true;
      skip_reason_ = started.ToString();
      return;
    }
    std::fprintf(stderr, "[kube-e2e] operator ready in %s\n",
                 absl::FormatDuration(absl::Now() - begin).c_str());
  }
}

void KubeTest::TearDownTestSuite() {
  // One control plane per binary: it stays up across suites and goes at exit.
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] {
      op_.reset();
      ControlPlane::Stop();
    });
  }
}

void KubeTest::SetUp() {
  if (skip_) {
    if (InCi() || absl::StrContains(skip_reason_, "UNAVAILABLE") ||
        absl::StrContains(skip_reason_, "INTERNAL") ||
        absl::StrContains(skip_reason_, "DEADLINE")) {
      FAIL() << "control plane or operator did not start: " << skip_reason_;
    }
    GTEST_SKIP() << "no control plane: " << skip_reason_;
  }
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = absl::AsciiStrToLower(absl::StrCat(info->name()));
  std::string clean;
  for (char c : name) clean += absl::ascii_isalnum(static_cast<unsigned char>(c)) ? c : '-';
  if (clean.size() > 40) clean.resize(40);
  ns_ = absl::StrCat("e2e-", clean);
  CmdResult r = Kubectl({"create", "namespace", ns_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Pods need the namespace's default ServiceAccount (the controller-manager makes it).
  ASSERT_TRUE(Eventually(
      [&] {
        return Kubectl({"get", "sa", "default", "-n", ns_}).exit_code == 0;
      },
      absl::Seconds(60), kKubectlPoll));
}

void KubeTest::TearDown() {
  if (ns_.empty()) return;
  if (HasFailure()) {
    std::fprintf(stderr, "[kube-e2e] %s failed; objects:\n%s\n", ns_.c_str(),
                 Kubectl({"get",
                          "pods,svc,cm,pytorchjobs,tfjobs,xgboostjobs,mpijobs,paddlejobs,"
                          "jaxjobs",
                          "-n", ns_, "-o", "wide"})
                     .out.c_str());
    if (op_ != nullptr) std::fprintf(stderr, "%s\n", OperatorLogTail(6000).c_str());
  }
  Kubectl({"delete", "namespace", ns_, "--wait=false"});
}

void KubeTest::Apply(const std::string& yaml) {
  CmdResult r = Kubectl({"apply", "-n", ns_, "-f", "-"}, yaml);
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << yaml;
}

std::optional<nlohmann::json> KubeTest::Get(const std::string& resource,
                                            const std::string& name) const {
  CmdResult r = Kubectl({"get", resource, name, "-n", ns_, "-o", "json"});
  if (r.exit_code != 0) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::vector<nlohmann::json> KubeTest::List(const std::string& resource,
                                           const std::string& selector) const {
  std::vector<std::string> args = {"get", resource, "-n", ns_, "-o", "json"};
  if (!selector.empty()) {
    args.push_back("-l");
    args.push_back(selector);
  }
  CmdResult r = Kubectl(args);
  std::vector<nlohmann::json> out;
  if (r.exit_code != 0) return out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("items")) return out;
  for (const auto& item : j["items"]) out.push_back(item);
  return out;
}

std::map<std::string, std::string> KubeTest::PodUids(const std::string& job) const {
  std::map<std::string, std::string> uids;
  for (const nlohmann::json& p : JobPods(job)) uids[p["metadata"]["name"]] = p["metadata"]["uid"];
  return uids;
}

nlohmann::json KubeTest::Condition(const nlohmann::json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return nullptr;
  for (const auto& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type) return c;
  }
  return nullptr;
}

bool KubeTest::HasCondition(const nlohmann::json& job, const std::string& type) {
  nlohmann::json c = Condition(job, type);
  return !c.is_null() && c.value("status", "") == "True";
}

std::optional<nlohmann::json> KubeTest::WaitCondition(const std::string& resource,
                                                      const std::string& name,
                                                      const std::string& type,
                                                      absl::Duration timeout) {
  std::optional<nlohmann::json> last;
  if (Eventually(
          [&] {
            last = Get(resource, name);
            return last && HasCondition(*last, type);
          },
          timeout, kKubectlPoll)) {
    return last;
  }
  ADD_FAILURE() << resource << "/" << name << " did not get condition " << type << " in "
                << absl::FormatDuration(timeout) << "; last status: "
                << (last ? (*last)["status"].dump() : std::string("(not found)"));
  return std::nullopt;
}

std::string KubeTest::PodEnv(const nlohmann::json& pod, const std::string& name) {
  if (!pod.is_object() || !pod.contains("spec")) return "";
  for (const auto& e : pod["spec"]["containers"][0].value("env", nlohmann::json::array())) {
    if (e.value("name", "") == name) return e.value("value", "");
  }
  return "";
}

std::string KubeTest::OperatorLogTail(size_t bytes) const {
  if (op_ == nullptr) return "";
  std::string log = op_->Log();
  if (log.size() > bytes) log = log.substr(log.size() - bytes);
  return "--- operator log tail ---\n" + log;
}

}  // namespace coach::e2e::kube
