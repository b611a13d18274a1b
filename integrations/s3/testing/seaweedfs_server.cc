#include "integrations/s3/testing/seaweedfs_server.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/shell.h"

namespace coach::s3::testing {
namespace {

using ::coach::testing::RunShell;
using ::coach::testing::ShellQuote;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string Tail(const std::string& path, size_t max) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > max ? text.substr(text.size() - max) : text;
}

// The script in the runfiles (under `bazel test`), else from the repository root.
std::string Script() {
  const std::string path = "integrations/s3/testdata/seaweedfs";
  const std::string srcdir = Env("TEST_SRCDIR");
  if (srcdir.empty()) return path;
  const std::string ws = Env("TEST_WORKSPACE");
  return absl::StrCat(srcdir, "/", ws.empty() ? "coach" : ws, "/", path);
}

}  // namespace

bool InCi() {
  const std::string ci = absl::AsciiStrToLower(Env("CI"));
  return ci == "true" || ci == "1";
}

absl::StatusOr<std::unique_ptr<SeaweedFsServer>> SeaweedFsServer::Start() {
  std::unique_ptr<SeaweedFsServer> server(new SeaweedFsServer());
  server->script_ = Script();
  struct stat st;
  if (::stat(server->script_.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(server->script_, " is missing"));
  }
  std::string bin;
  if (RunShell(ShellQuote(server->script_) + " bin 2>/dev/null", &bin) != 0) {
    return absl::NotFoundError("`tools/testenv/seaweedfs bin` failed");
  }
  bin = std::string(absl::StripAsciiWhitespace(bin));
  // Waits for a build in progress (CI builds weed beside the tests' compiles, niced: cold, it
  // can take half an hour there), within the tests' timeout ("eternal": an hour).
  std::string ignored;
  if (RunShell(ShellQuote(server->script_) + " check --wait 2700 2>/dev/null", &ignored) != 0) {
    return absl::NotFoundError(
        absl::StrCat("weed is not built in ", bin,
                     ": run tools/testenv/seaweedfs build first (the test finds it through HOME)"));
  }
  const std::string tmp = Env("TEST_TMPDIR").empty() ? "/tmp" : Env("TEST_TMPDIR");
  std::string tmpl = tmp + "/seaweedfs-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp under ", tmp, " failed"));
  }
  server->dir_ = tmpl;
  const std::string log = server->dir_ + "/up.log";
  std::string out;
  server->running_ = true;  // from here on the destructor runs `down`, whatever started
  int rc =
      RunShell(absl::StrCat(ShellQuote(server->script_), " up --dir ", ShellQuote(server->dir_),
                            " --owner-pid ", ::getpid(), " 2>", ShellQuote(log)),
               &out);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("seaweedfs up --dir ", server->dir_, " exited ", rc, ":\n", Tail(log, 4000)));
  }
  out.clear();
  rc = RunShell(absl::StrCat(ShellQuote(server->script_), " env --dir ", ShellQuote(server->dir_)),
                &out);
  if (rc != 0) return absl::UnavailableError("seaweedfs env failed");
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    S3Options& o = server->options_;
    if (kv.first == "COACH_S3_ENDPOINT") o.endpoint = kv.second;
    if (kv.first == "COACH_S3_BUCKET") o.bucket = kv.second;
    if (kv.first == "COACH_S3_ACCESS_KEY_ID") o.access_key_id = kv.second;
    if (kv.first == "COACH_S3_SECRET_ACCESS_KEY") o.secret_access_key = kv.second;
    if (kv.first == "COACH_S3_REGION") o.region = kv.second;
  }
  server->options_.timeout = absl::Seconds(30);
  if (absl::Status s = ValidateS3Options(server->options_); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("seaweedfs env printed unusable options: ", s.message()));
  }
  return server;
}

absl::Status SeaweedFsServer::Stop() {
  if (!running_) return absl::OkStatus();
  running_ = false;
  std::string out;
  const int rc =
      RunShell(absl::StrCat(ShellQuote(script_), " down --dir ", ShellQuote(dir_), " 2>&1"), &out);
  if (rc != 0) return absl::InternalError(absl::StrCat("seaweedfs down: ", out));
  return absl::OkStatus();
}

SeaweedFsServer::~SeaweedFsServer() { (void)Stop(); }

}  // namespace coach::s3::testing
