// Chaos: abuse of the gRPC API of a running coach-operator (local backend)
// with a bearer token, over plaintext and over TLS. Each abuse must get the code gRPC defines
// for it, the operator must stay alive and answer, what was accepted before must still be there,
// and neither token may appear in the operator's log.
//
//   no token, a wrong token                  UNAUTHENTICATED
//   a request above the 4 MiB receive limit  RESOURCE_EXHAUSTED
//   bytes that are no protobuf (raw call)    INTERNAL (the server cannot parse the request)
//   invalid field values                     INVALID_ARGUMENT naming the field
//   structured jobs whose JSON fields hold   INVALID_ARGUMENT naming the field, as the same
//   what no manifest could (extra_json [1,2],  content in a manifest; GetJob, ListJobs and
//   template ports "x", 100000 deep, ...)      `coach get/list -o yaml` still work
//   manifests nested 100000 deep             INVALID_ARGUMENT
//   a 2 MiB manifest (under gRPC's limit)    INVALID_ARGUMENT: over the 1.5 MiB Kubernetes stores
//   COACH_ABUSE_STREAMS (default 500)        every stream served or refused with
//   concurrent WatchJobs streams             RESOURCE_EXHAUSTED/UNAVAILABLE; a unary call
//                                            meanwhile answers within 5 s
//
// Prints a table of what each abuse got.

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "api/v1/training_service.grpc.pb.h"
#include "e2e/local/operator_fixture.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;
using api::v1::TrainingService;

constexpr char kToken[] = "abuse-t0ken-8f2c1e7d";
constexpr char kWrongToken[] = "wrong-t0ken-4b9a0c33";

std::string Manifest(const std::string& name) { return ShellManifest(name, "sleep 1").Yaml(); }

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    default:
      return "OTHER";
  }
}

// A self-signed certificate for 127.0.0.1 (openssl req), in `dir`/tls.crt and tls.key.
bool MakeCertificate(const std::string& dir) {
  CommandResult r =
      RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                  "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                  dir + "/tls.key", "-out", dir + "/tls.crt"},
                 ChildEnv({}, {}), "", dir + "/openssl", absl::Seconds(60));
  if (r.exit_code != 0) ADD_FAILURE() << "openssl: " << r.err;
  return r.exit_code == 0;
}

class GrpcAbuseTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    OperatorOptions options;
    options.token = kToken;
    if (tls()) {
      absl::StatusOr<std::string> dir = MakeTempDir(TestTmpDir() + "/abuse-cert-");
      ASSERT_TRUE(dir.ok()) << dir.status();
      ASSERT_TRUE(MakeCertificate(*dir));
      ca_pem_ = ReadFileOrEmpty(*dir + "/tls.crt");
      options.extra_args = {"--tls-cert=" + *dir + "/tls.crt", "--tls-key=" + *dir + "/tls.key"};
    }
    op_ = std::make_unique<OperatorFixture>(tls() ? "abuse-tls" : "abuse-plain", options);
    ASSERT_TRUE(op_->Start().ok()) << op_->OperatorLog();
  }
  void TearDown() override {
    if (HasFailure() && op_ != nullptr) std::fprintf(stderr, "%s\n", op_->OperatorLog().c_str());
  }

  bool tls() const { return GetParam(); }

  std::shared_ptr<grpc::Channel> Channel(bool use_tls) const {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    args.SetMaxReceiveMessageSize(-1);
    if (!use_tls) {
      return grpc::CreateCustomChannel(op_->server(), grpc::InsecureChannelCredentials(), args);
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ca_pem_;
    return grpc::CreateCustomChannel(op_->server(), grpc::SslCredentials(ssl), args);
  }
  std::shared_ptr<grpc::Channel> Channel() const { return Channel(tls()); }

  void Authorize(grpc::ClientContext* ctx, const std::string& token, int seconds = 30) const {
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }

  grpc::Status Create(const std::string& manifest, const std::string& token,
                      TrainingJob* out = nullptr) {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, token);
    api::v1::CreateJobRequest req;
    req.set_manifest(manifest);
    req.set_namespace_(kNs);
    TrainingJob job;
    grpc::Status s = stub->CreateJob(&ctx, req, &job);
    if (out != nullptr) *out = job;
    return s;
  }

  grpc::Status CreateJobProto(const TrainingJob& job, const std::string& token) {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, token);
    api::v1::CreateJobRequest req;
    *req.mutable_job() = job;
    req.set_namespace_(kNs);
    TrainingJob out;
    return stub->CreateJob(&ctx, req, &out);
  }

  // ListJobs with the right token: the operator is alive and answers.
  grpc::Status List(api::v1::ListJobsResponse* out, int seconds = 30) {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken, seconds);
    api::v1::ListJobsRequest req;
    req.set_namespace_(kNs);
    return stub->ListJobs(&ctx, req, out);
  }

  // Records one abuse's outcome for the table and checks its code.
  void Expect(const std::string& what, const grpc::Status& got,
              std::vector<grpc::StatusCode> allowed, const std::string& must_name = "") {
    bool ok = false;
    for (grpc::StatusCode c : allowed) ok = ok || got.error_code() == c;
    std::string message = got.error_message().substr(0, 90);
    for (char& ch : message) {
      if (ch == '|' || static_cast<unsigned char>(ch) < 0x20) ch = ' ';
    }
    rows_.push_back(
        absl::StrCat("| ", what, " | ", CodeName(got.error_code()), " | ", message, " |"));
    EXPECT_TRUE(ok) << what << ": " << CodeName(got.error_code()) << " " << got.error_message();
    if (!must_name.empty()) {
      EXPECT_TRUE(absl::StrContains(got.error_message(), must_name))
          << what << ": the message does not name " << must_name << ": " << got.error_message();
    }
    EXPECT_FALSE(absl::StrContains(got.error_message(), kToken)) << what;
  }

  std::unique_ptr<OperatorFixture> op_;
  std::string ca_pem_;
  std::vector<std::string> rows_;
};

TEST_P(GrpcAbuseTest, EachAbuseGetsItsCodeAndNothingAcceptedIsLost) {
  // Accepted before the abuse.
  for (int i = 0; i < 5; ++i) {
    grpc::Status s = Create(Manifest(absl::StrCat("kept-", i)), kToken);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Authentication.
  Expect("no token", Create(Manifest("anon"), ""), {grpc::UNAUTHENTICATED});
  Expect("wrong token", Create(Manifest("wrong"), kWrongToken), {grpc::UNAUTHENTICATED});
  {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", std::string("Basic ") + kToken);
    api::v1::ListJobsResponse out;
    Expect("right token, wrong scheme (Basic)", stub->ListJobs(&ctx, {}, &out),
           {grpc::UNAUTHENTICATED});
  }
  if (tls()) {
    auto stub = TrainingService::NewStub(Channel(/*use_tls=*/false));
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken, 10);
    api::v1::ListJobsResponse out;
    Expect("plaintext client on the TLS port", stub->ListJobs(&ctx, {}, &out), {grpc::UNAVAILABLE});
  }

  // Size: 5 MiB, above gRPC's default 4 MiB receive limit, which the server keeps.
  Expect("5 MiB request", Create(Manifest("big") + "# " + std::string(5 << 20, 'x') + "\n", kToken),
         {grpc::RESOURCE_EXHAUSTED});
  Expect("5 MiB request, no token",
         Create(Manifest("big2") + "# " + std::string(5 << 20, 'x') + "\n", ""),
         {grpc::RESOURCE_EXHAUSTED, grpc::UNAUTHENTICATED});

  // Bytes that are no protobuf, through a generic call to CreateJob.
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 10),
                                   std::string("\x0a\xff\xff\xff\x0f", 5),
                                   std::string("\x12\x05"
                                               "ab",
                                               4)}) {
    grpc::GenericStub generic(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status got;
    bool done = false;
    std::mutex mu;
    std::condition_variable cv;
    generic.UnaryCall(&ctx, "/coach.api.v1.TrainingService/CreateJob", grpc::StubOptions(),
                      &request, &response, [&](grpc::Status s) {
                        std::lock_guard<std::mutex> lock(mu);
                        got = std::move(s);
                        done = true;
                        cv.notify_one();
                      });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    Expect(absl::StrCat("malformed protobuf (", bytes.size(), " bytes)"), got, {grpc::INTERNAL});
  }

  // Invalid field values.
  Expect("manifest: bad name, negative replicas",
         Create(ShellManifest("Bad_Name", "sleep 1").Replica("Master", -3).Yaml(), kToken),
         {grpc::INVALID_ARGUMENT}, "metadata.name");
  {
    // A job without a kind gets "kind: must be one of ..." and nothing more, as its manifest
    // would: the kind is set so that the name is what is judged.
    TrainingJob job;
    job.set_kind(api::v1::PYTORCH_JOB);
    job.mutable_metadata()->set_name(std::string(300, 'a'));
    Expect("proto job: 300-char name, no spec", CreateJobProto(job, kToken),
           {grpc::INVALID_ARGUMENT}, "metadata.name");
  }
  {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken);
    api::v1::ListJobsRequest req;
    req.set_page_size(-7);
    api::v1::ListJobsResponse out;
    Expect("ListJobs page_size -7", stub->ListJobs(&ctx, req, &out), {grpc::INVALID_ARGUMENT},
           "page_size");
  }
  {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken);
    api::v1::GetJobRequest req;
    req.set_namespace_("Not A Namespace");
    req.set_name(std::string("x\0y", 3));
    TrainingJob out;
    Expect("GetJob bad namespace and name", stub->GetJob(&ctx, req, &out),
           {grpc::INVALID_ARGUMENT, grpc::NOT_FOUND});
  }

  // Deep and huge manifests.
  constexpr int kDepth = 100000;
  Expect("YAML nested 100000 deep (flow)",
         Create(std::string(kDepth, '[') + std::string(kDepth, ']'), kToken),
         {grpc::INVALID_ARGUMENT});
  {
    // Text, not a JobManifest: the nesting written out is the input under test.
    std::string deep =
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: deep\n"
        "  labels: ";
    for (int i = 0; i < kDepth; ++i) deep += "{a: ";
    deep += "1" + std::string(kDepth, '}') + "\n";
    Expect("YAML labels nested 100000 deep", Create(deep, kToken), {grpc::INVALID_ARGUMENT});
  }
  {
    std::string deep;
    for (int i = 0; i < kDepth; ++i) deep += "{\"a\":";
    deep += "1" + std::string(kDepth, '}');
    Expect("JSON nested 100000 deep", Create(deep, kToken), {grpc::INVALID_ARGUMENT});
  }
  {
    // 2 MiB of environment: under gRPC's receive limit, over what Kubernetes stores.
    JobManifest huge = ShellManifest("huge", "sleep 1");
    for (int i = 0; i < 2000; ++i) huge.Env(absl::StrCat("V", i), std::string(1000, 'v'));
    Expect("2 MiB manifest (2000 env vars)", Create(huge.Yaml(), kToken), {grpc::INVALID_ARGUMENT},
           "more than the 1572864");
  }
  {
    api::v1::ListJobsResponse out;
    grpc::Status alive = List(&out);
    ASSERT_TRUE(alive.ok()) << "the operator stopped answering: " << alive.error_message();
  }

  // A flood of concurrent server streams.
  int streams = 500;
  if (const std::string n = EnvOrEmpty("COACH_ABUSE_STREAMS"); !n.empty()) {
    ASSERT_TRUE(absl::SimpleAtoi(n, &streams) && streams > 0) << "COACH_ABUSE_STREAMS: " << n;
  }
  {
    auto channel = Channel();
    auto stub = TrainingService::NewStub(channel);
    grpc::CompletionQueue cq;
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientAsyncReader<api::v1::JobEvent>>> readers;
    std::vector<api::v1::JobEvent> first(streams);
    std::vector<grpc::Status> finished(streams);
    for (int i = 0; i < streams; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      Authorize(contexts.back().get(), kToken, 120);
      api::v1::WatchJobsRequest req;
      req.set_namespace_(kNs);
      readers.push_back(stub->AsyncWatchJobs(contexts.back().get(), req, &cq,
                                             reinterpret_cast<void*>(static_cast<intptr_t>(i))));
    }
    // Every stream started (or failed): then read one event from each.
    int started = 0, start_failed = 0;
    for (int i = 0; i < streams; ++i) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq.Next(&tag, &ok)) break;
      ok ? ++started : ++start_failed;
    }
    const absl::Time t0 = absl::Now();
    api::v1::ListJobsResponse out;
    grpc::Status during = List(&out, 5);
    const double list_s = absl::ToDoubleSeconds(absl::Now() - t0);
    for (int i = 0; i < streams; ++i) {
      readers[i]->Read(&first[i], reinterpret_cast<void*>(static_cast<intptr_t>(streams + i)));
    }
    int events = 0, read_failed = 0;
    for (int i = 0; i < streams; ++i) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq.Next(&tag, &ok)) break;
      ok ? ++events : ++read_failed;
    }
    for (int i = 0; i < streams; ++i) contexts[i]->TryCancel();
    for (int i = 0; i < streams; ++i) {
      readers[i]->Finish(&finished[i],
                         reinterpret_cast<void*>(static_cast<intptr_t>(2 * streams + i)));
    }
    for (int i = 0; i < streams; ++i) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq.Next(&tag, &ok)) break;
    }
    std::map<std::string, int> codes;
    int refused_wrongly = 0;
    for (int i = 0; i < streams; ++i) {
      const grpc::StatusCode c = finished[i].error_code();
      ++codes[CodeName(c)];
      if (c != grpc::CANCELLED && c != grpc::OK && c != grpc::RESOURCE_EXHAUSTED &&
          c != grpc::UNAVAILABLE) {
        ++refused_wrongly;
      }
    }
    cq.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
    }
    std::string code_list;
    for (const auto& [c, n] : codes) absl::StrAppend(&code_list, c, " ", n, " ");
    rows_.push_back(absl::StrCat("| ", streams, " concurrent WatchJobs streams | ", code_list,
                                 "| started ", started, ", first event on ", events,
                                 ", ListJobs meanwhile ", CodeName(during.error_code()), " in ",
                                 absl::StrFormat("%.2f", list_s), " s |"));
    EXPECT_TRUE(during.ok()) << "ListJobs during the flood: " << during.error_message();
    EXPECT_LT(list_s, 5.0);
    EXPECT_EQ(refused_wrongly, 0) << code_list;
    EXPECT_EQ(started + start_failed, streams);
  }

  // Alive, nothing accepted lost, nothing refused stored, no secret logged.
  api::v1::ListJobsResponse out;
  grpc::Status after = List(&out);
  ASSERT_TRUE(after.ok()) << after.error_message();
  std::vector<std::string> names;
  for (const TrainingJob& j : out.jobs()) names.push_back(j.metadata().name());
  int kept = 0;
  for (int i = 0; i < 5; ++i) {
    kept += std::count(names.begin(), names.end(), absl::StrCat("kept-", i));
  }
  EXPECT_EQ(kept, 5) << absl::StrJoin(names, " ");
  EXPECT_EQ(names.size(), 5u) << "stored: " << absl::StrJoin(names, " ");
  EXPECT_TRUE(op_->running());
  const absl::Status stopped = op_->Stop();
  EXPECT_TRUE(stopped.ok()) << "the operator did not stop cleanly: " << stopped;
  const std::string log = op_->OperatorLog();
  EXPECT_FALSE(absl::StrContains(log, kToken)) << "the token is in the operator's log";
  EXPECT_FALSE(absl::StrContains(log, kWrongToken)) << "the wrong token is in the operator's log";

  std::printf(
      "\ngRPC abuse (%s, token auth): accepted before %d, kept %d, stored after %zu, "
      "operator alive and stopped cleanly: %s\n",
      tls() ? "TLS" : "plaintext", 5, kept, names.size(), stopped.ok() ? "yes" : "no");
  std::printf("| abuse | code | message (first 90 chars) |\n|---|---|---|\n");
  for (const std::string& row : rows_) std::printf("%s\n", row.c_str());
  std::fflush(stdout);
}

// A structured TrainingJob whose free-form JSON fields hold what no manifest could: each is
// refused as its manifest would be, naming the field. Before, an extra_json of [1,2] was stored
// and every later `coach get`/`coach list -o yaml` aborted; a template with "ports": "x" was
// stored and stayed Created forever.
TEST_P(GrpcAbuseTest, HostileStructuredJobsAreRefusedAndReadsStillWork) {
  ASSERT_TRUE(Create(Manifest("kept-manifest"), kToken).ok());
  TrainingJob kept = BuildOrDie(ShellJob("kept-proto", "sleep 1").Masters(1));
  {
    const grpc::Status s = CreateJobProto(kept, kToken);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  const std::string worker = "spec.pytorchReplicaSpecs.Master.template";
  const std::string container = worker + ".spec.containers[0]";
  auto with_template = [&](const std::string& text) {
    TrainingJob job = BuildOrDie(ShellJob("hostile", "sleep 1").Masters(1));
    (*job.mutable_spec()->mutable_replica_specs())["Master"].set_template_json(text);
    return job;
  };
  auto with_container = [&](const std::string& fields) {
    return with_template(absl::StrCat(
        R"({"spec":{"containers":[{"name":"pytorch","image":"busybox:1.36",)", fields, "}]}}"));
  };
  auto with_extra = [&](const std::string& text) {
    TrainingJob job = BuildOrDie(ShellJob("hostile", "sleep 1").Masters(1));
    job.mutable_metadata()->set_extra_json(text);
    return job;
  };
  constexpr int kDepth = 100000;
  const std::string deep = std::string(kDepth, '[') + std::string(kDepth, ']');
  struct Case {
    std::string what;
    TrainingJob job;
    std::string must_name;
  };
  std::vector<Case> cases = {
      {"extra_json [1,2]", with_extra("[1,2]"), "metadata.extra_json: must be a JSON object"},
      {"extra_json null", with_extra("null"), "metadata.extra_json: must be a JSON object"},
      {"extra_json \"x\"", with_extra(R"("x")"), "metadata.extra_json: must be a JSON object"},
      {"extra_json not JSON", with_extra("{oops"), "metadata.extra_json: extra_json is not valid"},
      {"extra_json holding labels", with_extra(R"({"labels":{}})"), "metadata.extra_json"},
      {"extra_json 100000 deep", with_extra(R"({"x":)" + deep + "}"),
       "metadata.extra_json: extra_json: line 1"},
      {"extra_json 2 MiB", with_extra(absl::StrCat(R"({"x":")", std::string(2 << 20, 'x'), "\"}")),
       "more than the 1572864"},
      {"template_json [1,2]", with_template("[1,2]"), worker + ": must be an object"},
      {"template_json not JSON", with_template("{"), worker + ": template_json is not valid JSON"},
      {"template_json 100000 deep", with_template(R"({"x":)" + deep + "}"),
       worker + ": template_json: line 1"},
      {"containers not a list", with_template(R"({"spec":{"containers":"pytorch"}})"),
       worker + ".spec.containers: must be a list"},
      {"ports \"x\"", with_container(R"("ports":"x")"), container + ".ports: must be a list"},
      {"env value a number", with_container(R"("env":[{"name":"A","value":5}])"),
       container + ".env[0].value: must be a string"},
      {"command a string", with_container(R"("command":"sleep 1")"),
       container + ".command: must be a list"},
  };
  {
    TrainingJob job = BuildOrDie(ShellJob("hostile", "sleep 1").Masters(1));
    job.mutable_spec()->mutable_elastic_policy()->set_metrics_json("{}");
    cases.push_back({"metrics_json {}", job, "spec.elasticPolicy.metrics: must be a list"});
  }
  {
    TrainingJob job = BuildOrDie(ShellJob("hostile", "sleep 1").Masters(1));
    (*job.mutable_status()->mutable_replica_statuses())["Master"].set_label_selector_json("[]");
    cases.push_back({"status label_selector_json []", job,
                     "status.replicaStatuses.Master.labelSelector: must be an object"});
  }
  for (const Case& c : cases) {
    Expect("proto job: " + c.what, CreateJobProto(c.job, kToken), {grpc::INVALID_ARGUMENT},
           c.must_name);
  }

  // Nothing refused was stored; what was accepted before reads back, one by one and listed.
  api::v1::ListJobsResponse out;
  grpc::Status listed = List(&out);
  ASSERT_TRUE(listed.ok()) << listed.error_message();
  std::vector<std::string> names;
  for (const TrainingJob& j : out.jobs()) names.push_back(j.metadata().name());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"kept-manifest", "kept-proto"}));
  for (const std::string& name : names) {
    auto stub = TrainingService::NewStub(Channel());
    grpc::ClientContext ctx;
    Authorize(&ctx, kToken);
    api::v1::GetJobRequest req;
    req.set_namespace_(kNs);
    req.set_name(name);
    TrainingJob got;
    const grpc::Status s = stub->GetJob(&ctx, req, &got);
    EXPECT_TRUE(s.ok()) << name << ": " << s.error_message();
  }
  if (!tls()) {
    // The reads that an unreadable record would abort, through the CLI.
    CliResult get = op_->Cli({"get", "kept-proto", "-o", "yaml"});
    EXPECT_EQ(get.exit_code, 0) << get.err;
    EXPECT_TRUE(absl::StrContains(get.out, "name: kept-proto")) << get.out;
    CliResult list = op_->Cli({"list", "-o", "yaml"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_TRUE(absl::StrContains(list.out, "name: kept-manifest")) << list.out;
    EXPECT_TRUE(absl::StrContains(list.out, "name: kept-proto")) << list.out;
  }
  EXPECT_TRUE(op_->running());

  std::printf(
      "\nHostile structured jobs (%s):\n| abuse | code | message (first 90 chars) |\n"
      "|---|---|---|\n",
      tls() ? "TLS" : "plaintext");
  for (const std::string& row : rows_) std::printf("%s\n", row.c_str());
  std::fflush(stdout);
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, GrpcAbuseTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Plaintext";
                         });

}  // namespace
}  // namespace coach::e2e
