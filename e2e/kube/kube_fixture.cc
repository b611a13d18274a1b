#include "e2e/kube/kube_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace coach::e2e::kube {
namespace {

constexpr char kAnchor[] = "e2e/kube/kube_fixture.cc";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string TmpBase() {
  std::string base = Env("TEST_TMPDIR");
  return base.empty() ? "/tmp" : base;
}

std::string NewTmpPath(const std::string& stem) {
  static std::atomic<int> n{0};
  return absl::StrCat(TmpBase(), "/", stem, "-", getpid(), "-", ++n);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> ChildEnv(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (absl::StartsWith(entry, "COACH_") || absl::StartsWith(entry, "KUBECONFIG=")) continue;
    bool replaced = false;
    for (const std::string& o : overrides) {
      if (absl::StartsWith(entry, o.substr(0, o.find('=') + 1))) replaced = true;
    }
    if (!replaced) out.push_back(entry);
  }
  for (const std::string& o : overrides) out.push_back(o);
  return out;
}

// fork + execve; stdin from `in` (or /dev/null), stdout/stderr appended to the files. With
// `setsid`, the child gets its own session (so it outlives this process group's signals).
pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> env, const std::string& in,
            const std::string& out, const std::string& err, bool die_with_parent) {
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = CStrings(env);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int in_fd = open(in.empty() ? "/dev/null" : in.c_str(), O_RDONLY);
  const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  execve(cargv[0], cargv.data(), cenv.data());
  _exit(127);
}

std::optional<int> WaitPid(pid_t pid, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (absl::Now() >= end) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string WorkspaceRoot() {
  for (const std::string& candidate :
       {absl::StrCat(Env("TEST_SRCDIR"), "/", Env("TEST_WORKSPACE"), "/", kAnchor),
        std::string(kAnchor)}) {
    char* real = ::realpath(candidate.c_str(), nullptr);
    if (real == nullptr) continue;
    std::string r(real);
    free(real);
    if (absl::EndsWith(r, kAnchor)) return r.substr(0, r.size() - sizeof(kAnchor) + 1);
  }
  return "";
}

bool HttpReady(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      const ssize_t n = read(fd, buf, sizeof(buf) - 1);
      ok = n > 12 && absl::StrContains(std::string(buf, n), " 200");
    }
  }
  close(fd);
  return ok;
}

ControlPlane* g_cp = nullptr;

}  // namespace

bool InCi() {
  const std::string ci = absl::AsciiStrToLower(Env("CI"));
  return ci == "true" || ci == "1";
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string Runfile(const std::string& path) {
  return absl::StrCat(Env("TEST_SRCDIR"), "/coach/", path);
}

CmdResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                     absl::Duration timeout, const std::vector<std::string>& env_overrides) {
  const std::string base = NewTmpPath("cmd");
  std::string in_path;
  if (!input.empty()) {
    in_path = base + ".in";
    WriteFile(in_path, input);
  }
  CmdResult result;
  const pid_t pid = Spawn(argv, ChildEnv(env_overrides), in_path, base + ".out", base + ".err",
                          /*die_with_parent=*/true);
  std::optional<int> status = WaitPid(pid, timeout);
  if (!status) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  } else if (WIFEXITED(*status)) {
    result.code = WEXITSTATUS(*status);
  }
  result.out = ReadFileOrEmpty(base + ".out");
  result.err = ReadFileOrEmpty(base + ".err");
  unlink((base + ".out").c_str());
  unlink((base + ".err").c_str());
  if (!in_path.empty()) unlink(in_path.c_str());
  return result;
}

// ---------------------------------------------------------------- ControlPlane

ControlPlane* ControlPlane::Get() { return g_cp; }

absl::Status ControlPlane::Start() {
  if (g_cp != nullptr) return absl::OkStatus();
  auto cp = std::make_unique<ControlPlane>();
  cp->root_ = WorkspaceRoot();
  if (cp->root_.empty()) return absl::NotFoundError("cannot find the workspace from the runfiles");
  cp->script_ = cp->root_ + "tools/testenv/testenv";
  CmdResult bin = RunCommand({"/bin/bash", cp->script_, "bin"}, "", absl::Seconds(30));
  if (bin.code != 0) return absl::NotFoundError("`testenv bin` failed (no Go toolchain?)");
  cp->bin_ = std::string(absl::StripAsciiWhitespace(bin.out));
  struct stat st;
  for (const char* b : {"kube-apiserver", "kwok", "kubectl", "etcd"}) {
    if (::stat((cp->bin_ + "/" + b).c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrCat("testenv binary ", b, " is not built in ", cp->bin_,
                                              ": run tools/testenv/testenv build"));
    }
  }
  std::string tmpl = "/tmp/coach-e2e-kube-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  cp->dir_ = tmpl;
  const absl::Time begin = absl::Now();
  CmdResult up = RunCommand({"/bin/bash", cp->script_, "up", "--dir", cp->dir_}, "",
                            absl::Seconds(180));
  if (up.code != 0) {
    RunCommand({"/bin/bash", cp->script_, "down", "--dir", cp->dir_}, "", absl::Seconds(60));
    return absl::UnavailableError(absl::StrCat("testenv up exited ", up.code, ":\n", up.err));
  }
  cp->kubeconfig_ = cp->dir_ + "/kubeconfig";
  std::fprintf(stderr, "[kube-e2e] control plane up in %s (%s)\n",
               absl::FormatDuration(absl::Now() - begin).c_str(), cp->dir_.c_str());
  CmdResult crds = cp->Kubectl({"apply", "-f", cp->root_ + "charts/coach/crds"});
  if (crds.code != 0) {
    return absl::InternalError(absl::StrCat("applying the CRDs: ", crds.err));
  }
  CmdResult est = cp->Kubectl({"wait", "--for=condition=Established", "crd", "--all",
                               "--timeout=60s"});
  if (est.code != 0) return absl::InternalError(absl::StrCat("CRDs not established: ", est.err));
  g_cp = cp.release();
  return absl::OkStatus();
}

void ControlPlane::Stop() {
  if (g_cp == nullptr) return;
  if (Env("COACH_E2E_KEEP").empty()) {
    RunCommand({"/bin/bash", g_cp->script_, "down", "--dir", g_cp->dir_}, "", absl::Seconds(60));
    ::rmdir(g_cp->dir_.c_str());
  } else {
    std::fprintf(stderr, "[kube-e2e] keeping the control plane in %s\n", g_cp->dir_.c_str());
  }
  delete g_cp;
  g_cp = nullptr;
}

CmdResult ControlPlane::Kubectl(const std::vector<std::string>& args, const std::string& input,
                                absl::Duration timeout) const {
  std::vector<std::string> argv = {bin_ + "/kubectl", "--kubeconfig", kubeconfig_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, input, timeout);
}

absl::Status ControlPlane::RestartApiServer(absl::Duration down_for) {
  const std::string pid_file = dir_ + "/pids/kube-apiserver";
  const pid_t pid = std::atoi(ReadFileOrEmpty(pid_file).c_str());
  if (pid <= 0) return absl::NotFoundError("no kube-apiserver pid file");
  std::string cmdline = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline"));
  if (cmdline.empty()) return absl::NotFoundError("kube-apiserver is not running");
  std::vector<std::string> argv = absl::StrSplit(cmdline, '\0', absl::SkipEmpty());
  kill(pid, SIGKILL);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) {
    // Not our child (testenv started it with setsid): wait until it is gone or a zombie.
    const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat[paren + 2] == 'Z') break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  absl::SleepFor(down_for);
  const std::string log = dir_ + "/logs/kube-apiserver.log";
  // A grandchild in its own session, so testenv's `down` can stop it as before.
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    const pid_t grandchild = Spawn(argv, ChildEnv({}), "", log, log, /*die_with_parent=*/false);
    WriteFile(pid_file, absl::StrCat(grandchild, "\n"));
    _exit(grandchild > 0 ? 0 : 1);
  }
  waitpid(child, nullptr, 0);
  const absl::Time end = absl::Now() + absl::Seconds(90);
  while (absl::Now() < end) {
    CmdResult r = Kubectl({"get", "--raw", "/readyz"}, "", absl::Seconds(10));
    if (r.code == 0 && absl::StripAsciiWhitespace(r.out) == "ok") return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(300));
  }
  return absl::DeadlineExceededError("kube-apiserver not ready after the restart");
}

// ---------------------------------------------------------------- OperatorProcess

OperatorProcess::OperatorProcess(std::string name, std::string dir, std::string kubeconfig,
                                 std::vector<std::string> extra_args)
    : name_(std::move(name)),
      dir_(std::move(dir)),
      kubeconfig_(std::move(kubeconfig)),
      extra_args_(std::move(extra_args)) {}

OperatorProcess::~OperatorProcess() {
  if (running()) Kill9();
}

std::string OperatorProcess::server() const { return absl::StrCat("127.0.0.1:", grpc_port_); }

std::string OperatorProcess::Log() const {
  std::string all;
  for (int i = 1; i <= starts_; ++i) {
    absl::StrAppend(&all, "--- ", name_, " start ", i, " ---\n",
                    ReadFileOrEmpty(absl::StrCat(dir_, "/", name_, "-", i, ".log")));
  }
  return all;
}

bool OperatorProcess::Ready() const { return pid_ > 0 && HttpReady(http_port_); }

bool OperatorProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

absl::Status OperatorProcess::Start(absl::Duration timeout) {
  if (running()) return absl::FailedPreconditionError("already running");
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    grpc_port_ = FreePort();
    http_port_ = FreePort();
    while (http_port_ == grpc_port_) http_port_ = FreePort();
    ++starts_;
    const std::string log = absl::StrCat(dir_, "/", name_, "-", starts_, ".log");
    const std::string state = absl::StrCat(dir_, "/", name_, "-state");
    mkdir(state.c_str(), 0755);
    std::vector<std::string> argv = {
        Runfile("operator/coach-operator"),
        "--backend=kube",
        "--kubeconfig=" + kubeconfig_,
        absl::StrCat("--listen=127.0.0.1:", grpc_port_),
        absl::StrCat("--http-listen=127.0.0.1:", http_port_),
        "--state-dir=" + state,
        "--log-level=debug",
    };
    argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
    pid_ = Spawn(argv, ChildEnv({"HOME=" + state}), "", log, log, /*die_with_parent=*/true);
    const absl::Time end = absl::Now() + timeout;
    last = absl::OkStatus();
    while (!HttpReady(http_port_)) {
      if (!Alive()) {
        last = absl::UnavailableError(absl::StrCat(name_, " exited before it was ready:\n", Log()));
        break;
      }
      if (absl::Now() >= end) {
        Kill9();
        last = absl::DeadlineExceededError(absl::StrCat(name_, " not ready in time:\n", Log()));
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    if (last.ok()) return last;
  }
  return last;
}

void OperatorProcess::Kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

absl::Status OperatorProcess::Stop(absl::Duration timeout) {
  if (pid_ <= 0) return absl::OkStatus();
  kill(pid_, SIGTERM);
  std::optional<int> status = WaitPid(pid_, timeout);
  if (!status) {
    Kill9();
    return absl::DeadlineExceededError("did not stop on SIGTERM");
  }
  pid_ = -1;
  return absl::OkStatus();
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
    op_ = std::make_unique<OperatorProcess>("operator", TmpBase(), cp().kubeconfig(),
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
  ASSERT_EQ(r.code, 0) << r.err;
  // Pods need the namespace's default ServiceAccount (the controller-manager makes it).
  ASSERT_TRUE(WaitFor([&] { return Kubectl({"get", "sa", "default", "-n", ns_}).code == 0; },
                      absl::Seconds(60)));
}

void KubeTest::TearDown() {
  if (ns_.empty()) return;
  if (HasFailure()) {
    std::fprintf(stderr, "[kube-e2e] %s failed; objects:\n%s\n", ns_.c_str(),
                 Kubectl({"get", "pods,svc,cm,pytorchjobs,tfjobs,xgboostjobs,mpijobs,paddlejobs,"
                          "jaxjobs", "-n", ns_, "-o", "wide"})
                     .out.c_str());
    if (op_ != nullptr) std::fprintf(stderr, "%s\n", OperatorLogTail(6000).c_str());
  }
  Kubectl({"delete", "namespace", ns_, "--wait=false"});
}

void KubeTest::Apply(const std::string& yaml) {
  CmdResult r = Kubectl({"apply", "-n", ns_, "-f", "-"}, yaml);
  ASSERT_EQ(r.code, 0) << r.err << "\n" << yaml;
}

std::optional<nlohmann::json> KubeTest::Get(const std::string& resource,
                                            const std::string& name) const {
  CmdResult r = Kubectl({"get", resource, name, "-n", ns_, "-o", "json"});
  if (r.code != 0) return std::nullopt;
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
  if (r.code != 0) return out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("items")) return out;
  for (const auto& item : j["items"]) out.push_back(item);
  return out;
}

bool KubeTest::WaitFor(const std::function<bool()>& pred, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    if (pred()) return true;
    if (absl::Now() >= end) return false;
    absl::SleepFor(absl::Milliseconds(200));
  }
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
  if (WaitFor(
          [&] {
            last = Get(resource, name);
            return last && HasCondition(*last, type);
          },
          timeout)) {
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
