// Jobs started by PyTorch's own `torchrun` on the local backend: torch 2.15 from PyPI in the venv
// tools/torch_env.sh keeps (Debian's torch 1.13 torchrun cannot start its workers). torchrun
// reads only what the operator gives the replicas (PET_*, MASTER_*), no rendezvous flag of its
// own, and starts 2 ranks of examples/pytorch/ddp_train.py per replica; every rank must report
// status=ok with one params_checksum, and the job must end Succeeded.
//
// The venv reaches the replicas as a user's would: the operator's PATH (the venv's bin first,
// as after `source venv/bin/activate`), or the container's command naming the venv's torchrun.
// Without the venv the tests skip, and fail under CI=true, where they install it (waiting for
// tools/run_tests' background install through the script's lock).

#include <signal.h>
#include <sys/types.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "api/v1/codec/job_codec.h"
#include "common/testing/eventually.h"
#include "e2e/local/operator_fixture.h"
#include "e2e/local/rank_results.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

bool InCi() {
  const std::string ci = absl::AsciiStrToLower(EnvOrEmpty("CI"));
  return ci == "true" || ci == "1";
}

// The venv's bin directory, or the reason there is none. Under CI the script installs it (or
// waits for the install in progress); elsewhere it only waits for one in progress. Asked once per
// test binary.
absl::StatusOr<std::string> TorchBin() {
  static const absl::StatusOr<std::string>* const bin = [] {
    const std::string script = Runfile("e2e/local/testdata/torch_env.sh");
    CommandResult r =
        RunProcess({"/bin/bash", script, InCi() ? "install" : "python"}, ChildEnv({}, {}), "",
                   absl::StrCat(TestTmpDir(), "/torch_env"), absl::Minutes(30));
    // Its last line; progress goes to stderr.
    std::vector<std::string> lines =
        absl::StrSplit(absl::StripAsciiWhitespace(r.out), '\n', absl::SkipEmpty());
    const std::string python = lines.empty() ? "" : lines.back();
    constexpr absl::string_view kPython = "/bin/python";
    if (r.exit_code != 0 || !absl::EndsWith(python, kPython)) {
      return new absl::StatusOr<std::string>(
          absl::NotFoundError(absl::StrCat("no torch 2.15 venv (tools/torch_env.sh install): exit ",
                                           r.exit_code, ": ", absl::StripAsciiWhitespace(r.err))));
    }
    return new absl::StatusOr<std::string>(
        python.substr(0, python.size() - kPython.size() + std::string("/bin").size()));
  }();
  return *bin;
}

std::string SharedRuntimes() {
  return absl::StrCat(EnvOrEmpty("COACH_SHARED_DIR"), "/reference/kubeflow-v2/runtimes");
}

class TorchrunTest : public OperatorTest {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> bin = TorchBin();
    if (!bin.ok()) {
      if (InCi()) GTEST_FAIL() << bin.status();
      GTEST_SKIP() << bin.status();
    }
    torch_bin_ = *bin;
  }

  // The job never restarted; its members went 3, 2 (`why`), 3, with both events in
  // `coach describe <job>`.
  void ExpectShrankAndGrewBack(const api::v1::TrainingJob& done, const std::string& why,
                               const std::string& job) {
    for (const api::v1::JobCondition& c : done.status().conditions()) {
      EXPECT_NE(c.type(), "Restarting") << done.status().ShortDebugString();
    }
    const api::v1::ElasticStatus& elastic = done.status().coach().elastic();
    std::vector<int> counts;
    for (const api::v1::WorkerCountChange& c : elastic.changes()) counts.push_back(c.workers());
    EXPECT_EQ(counts, (std::vector<int>{3, 2, 3})) << elastic.ShortDebugString();
    ASSERT_GE(elastic.changes_size(), 2);
    EXPECT_EQ(elastic.changes(1).why(), why);
    const std::string described = op_->Cli({"describe", job}).out;
    EXPECT_TRUE(absl::StrContains(described, "ElasticShrink")) << described;
    EXPECT_TRUE(absl::StrContains(described, "ElasticGrow")) << described;
  }

  // An operator whose working directory is the runfiles root (the manifests name the program
  // relative to the repository root), the venv's bin first on its PATH when `venv_on_path`.
  void Start(bool venv_on_path, std::vector<std::string> extra_args = {}) {
    OperatorOptions options;
    options.workdir = Runfile("");
    options.extra_args = std::move(extra_args);
    if (venv_on_path) options.path_prepend = {torch_bin_};
    StartOperator(options);
  }

  // Submits `manifest`, waits for its end, and checks that it Succeeded and that the
  // coach-result lines of `replicas` ("" for all of them) hold ranks 0..world_size-1 once each,
  // every one status=ok, with one params_checksum. Returns the job as it ended.
  TrainingJob RunAndCheck(const std::string& manifest, const std::string& name,
                          const std::vector<std::string>& replicas, int world_size) {
    absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return {};
    absl::StatusOr<TrainingJob> done = op_->WaitFinished(name, absl::Minutes(5));

    std::string all_logs;
    for (const std::string& replica : replicas) {
      absl::StatusOr<std::string> log = op_->Logs(name, replica);
      EXPECT_TRUE(log.ok()) << replica << ": " << log.status();
      if (!log.ok()) continue;
      absl::StrAppend(&all_logs, "--- ", replica.empty() ? "all replicas" : replica, " ---\n",
                      *log);
    }
    const bool succeeded = done.ok() && sdk::IsJobSucceeded(*done);
    if (!succeeded) {
      absl::StrAppend(&all_logs, "--- coach describe ---\n", op_->Cli({"describe", name}).out);
    }
    EXPECT_TRUE(succeeded) << (done.ok() ? done->status().ShortDebugString()
                                         : done.status().ToString())
                           << "\n"
                           << all_logs;
    ExpectRanksAgree(all_logs, world_size);
    // torchrun, not a stand-in, started the ranks.
    EXPECT_TRUE(absl::StrContains(all_logs, "torch/distributed/run.py"));
    EXPECT_TRUE(op_->WaitNoProcesses().empty());
    return done.ok() ? *done : TrainingJob();
  }

  std::string torch_bin_;
};

// Master + Worker, the manifest submitted unchanged: torchrun found on the operator's PATH, its
// --nnodes, --node_rank, --master_addr and --master_port from PET_*.
TEST_F(TorchrunTest, MasterAndWorkerTrainUnderTorchrunFromThePetVariables) {
  Start(/*venv_on_path=*/true);
  const std::string manifest =
      ReadFileOrEmpty(Runfile("examples/pytorch/pytorch-ddp-torchrun.yaml"));
  ASSERT_FALSE(manifest.empty()) << "examples/pytorch/pytorch-ddp-torchrun.yaml not in runfiles";
  RunAndCheck(manifest, "pytorch-ddp-torchrun", {"master-0", "worker-0"}, 4);
}

// Workers only: torchrun's c10d rendezvous at the endpoint elasticPolicy makes the operator set
// (PET_RDZV_*), the node ranks handed out by the rendezvous. Here the container's command names
// the venv's torchrun and the operator's PATH has no torch 2.x.
TEST_F(TorchrunTest, WorkerOnlyTrainsUnderTorchrunThroughC10dRendezvous) {
  Start(/*venv_on_path=*/false);
  std::string manifest =
      ReadFileOrEmpty(Runfile("examples/pytorch/pytorch-ddp-torchrun-elastic.yaml"));
  ASSERT_FALSE(manifest.empty()) << "pytorch-ddp-torchrun-elastic.yaml not in runfiles";
  const int replaced = absl::StrReplaceAll(
      {{"command: [torchrun,", absl::StrCat("command: [", torch_bin_, "/torchrun,")}}, &manifest);
  ASSERT_EQ(replaced, 1) << manifest;
  RunAndCheck(manifest, "pytorch-ddp-torchrun-elastic", {"worker-0", "worker-1"}, 4);
}

// The pid of the process that `shim_marker` (a replica's files, "<job>-worker-1.") started: the
// replica's own process, leader of its process group.
pid_t ReplicaPid(const std::vector<ProcessInfo>& processes, const std::string& shim_marker) {
  pid_t shim = 0;
  for (const ProcessInfo& p : processes) {
    if (absl::StrContains(p.cmdline, "coach-replica-shim") &&
        absl::StrContains(p.cmdline, shim_marker)) {
      shim = p.pid;
    }
  }
  if (shim == 0) return 0;
  for (const ProcessInfo& p : processes) {
    std::ifstream in(absl::StrCat("/proc/", p.pid, "/stat"));
    std::string stat;
    std::getline(in, stat);
    // pid (comm) state ppid ...: the fields after the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
    if (fields.size() > 1 && fields[1] == absl::StrCat(shim)) return p.pid;
  }
  return 0;
}

// An elastic job (Workers 2:3) loses a Worker mid-training: torchrun's agents on the other two
// rendezvous again and train on without their replicas restarting, the operator recreates the
// lost one, which joins them, and the job Succeeds with every rank agreeing. The job never
// restarts; its status and events tell the Workers' count as it changed.
TEST_F(TorchrunTest, ElasticJobLosesAWorkerTrainsOnAndGrowsBack) {
  Start(/*venv_on_path=*/true);
  const std::string checkpoints = absl::StrCat(TestTmpDir(), "/elastic-checkpoints");
  const std::string manifest = absl::StrCat(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: elastic
spec:
  elasticPolicy:
    minReplicas: 2
    maxReplicas: 3
    maxRestarts: 3
  runPolicy:
    backoffLimit: 3
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: x
            command: [torchrun, --nproc_per_node=1, examples/pytorch/ddp_train.py, --epochs, "14",
                      --epoch-seconds, "1.5", --checkpoint-dir, )",
                                            checkpoints, "]\n");
  ASSERT_TRUE(op_->client().CreateJobFromManifest(manifest, kNs).ok());
  // Rank 0 (on whichever Worker the rendezvous made it) saved epoch 3: training is under way.
  ASSERT_TRUE(coach::testing::Eventually(
      [&] {
        for (const char* replica : {"worker-0", "worker-1", "worker-2"}) {
          if (absl::StrContains(op_->Logs("elastic", replica).value_or(""),
                                "coach-checkpoint saved epoch=3")) {
            return true;
          }
        }
        return false;
      },
      absl::Minutes(3), absl::Milliseconds(200)));
  absl::StatusOr<TrainingJob> training = op_->client().GetJob(kNs, "elastic");
  ASSERT_TRUE(training.ok()) << training.status();
  ASSERT_EQ(training->status().coach().elastic().workers(), 3) << training->ShortDebugString();
  const std::vector<ProcessInfo> processes = op_->Processes();
  const pid_t agent = ReplicaPid(processes, "elastic-worker-1.");
  ASSERT_GT(agent, 0) << training->status().ShortDebugString() << "\n"
                      << op_->Cli({"describe", "elastic"}).out
                      << absl::StrJoin(processes, "\n", [](std::string* out, const ProcessInfo& p) {
                           absl::StrAppend(out, p.pid, " ", p.cmdline);
                         });
  ASSERT_EQ(kill(-agent, SIGKILL), 0);

  absl::StatusOr<TrainingJob> done = op_->WaitFinished("elastic", absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  std::string logs;
  for (const char* replica : {"worker-0", "worker-1", "worker-2"}) {
    absl::StrAppend(&logs, "--- ", replica, " ---\n", op_->Logs("elastic", replica).value_or(""));
  }
  ASSERT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n"
                                          << op_->Cli({"describe", "elastic"}).out << logs;
  ExpectRanksAgree(logs, 3);
  // Every rank of the last rendezvous resumed from a checkpoint. The survivors' agents started
  // their ranks again in place: each of their logs has two rendezvous, and so has the lost
  // Worker's (its first life and the replacement's).
  for (const ResultFields& r : ResultLines(logs)) EXPECT_NE(r.at("resumed_from"), "-1") << logs;
  for (const char* replica : {"worker-0", "worker-1", "worker-2"}) {
    const std::string log = op_->Logs("elastic", replica).value_or("");
    int joined = 0;
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      joined += absl::StartsWith(line, "ddp_train: rank ") && absl::StrContains(line, " joined ");
    }
    EXPECT_EQ(joined, 2) << replica << "\n" << log;
  }
  ExpectShrankAndGrewBack(*done, "Worker replica 1 exited with code 137", "elastic");
  ASSERT_GE(done->status().coach().elastic().changes_size(), 2);
  EXPECT_GE(done->status().coach().elastic().changes(1).step(), 3);
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

// The same on a Trainer v2 TrainJob (upstream's torch-distributed runtime, unchanged) that opts
// in with coach.dev/elastic-min-nodes: 3 node pods, 2:3. Node 1 is killed mid-training; the
// others train on, its pod is recreated and joins them, and the job Succeeds without a restart.
TEST_F(TorchrunTest, ElasticTrainJobLosesANodeTrainsOnAndGrowsBack) {
  ASSERT_FALSE(EnvOrEmpty("COACH_SHARED_DIR").empty())
      << "COACH_SHARED_DIR must name the shared folder (tools/run_tests sets it)";
  Start(/*venv_on_path=*/true, {"--training-runtimes=" + SharedRuntimes()});
  const std::string name = "elastic-tj";
  const std::string checkpoints = absl::StrCat(TestTmpDir(), "/elastic-tj-checkpoints");
  const std::string manifest = absl::StrCat(R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: elastic-tj
  annotations:
    coach.dev/elastic-min-nodes: "2"
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 3
    numProcPerNode: 1
    command: [torchrun, examples/pytorch/ddp_train.py, --epochs, "14", --epoch-seconds, "1.5",
              --checkpoint-dir, )",
                                            checkpoints, "]\n");
  absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(coach::testing::Eventually(
      [&] {
        return absl::StrContains(op_->Logs(name, "").value_or(""),
                                 "coach-checkpoint saved epoch=3");
      },
      absl::Minutes(3), absl::Milliseconds(200)));
  absl::StatusOr<TrainingJob> training = op_->client().GetJob(kNs, name);
  ASSERT_TRUE(training.ok()) << training.status();
  ASSERT_EQ(training->status().coach().elastic().workers(), 3) << training->ShortDebugString();
  // Node 1's pod: <job>-node-0-1-<suffix> (Trainer v2's names).
  const std::vector<ProcessInfo> processes = op_->Processes();
  const pid_t agent = ReplicaPid(processes, "/elastic-tj-node-0-1-");
  ASSERT_GT(agent, 0) << op_->Cli({"describe", name}).out
                      << absl::StrJoin(processes, "\n", [](std::string* out, const ProcessInfo& p) {
                           absl::StrAppend(out, p.pid, " ", p.cmdline);
                         });
  ASSERT_EQ(kill(-agent, SIGKILL), 0);

  absl::StatusOr<TrainingJob> done = op_->WaitFinished(name, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  const std::string logs = op_->Logs(name, "").value_or("");
  ASSERT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n"
                                          << op_->Cli({"describe", name}).out << logs;
  ExpectRanksAgree(logs, 3);
  for (const ResultFields& r : ResultLines(logs)) EXPECT_NE(r.at("resumed_from"), "-1") << logs;
  // Each node's agent started its rank twice: the survivors in place after the loss, node 1 in
  // its first life and in its recreated pod.
  int joined = 0;
  for (absl::string_view line : absl::StrSplit(logs, '\n')) {
    joined += absl::StartsWith(line, "ddp_train: rank ") && absl::StrContains(line, " joined ");
  }
  EXPECT_EQ(joined, 6) << logs;
  ExpectShrankAndGrewBack(*done, "node replica 1 exited with code 137", name);
  // Upstream readers see a TrainJob that completed; the elastic record is coach's own.
  const nlohmann::json shown = api::v1::codec::JobToJson(*done);
  EXPECT_EQ(shown["status"]["conditions"].back()["type"], "Complete") << shown["status"].dump();
  EXPECT_TRUE(shown["status"]["coach"].contains("elastic")) << shown["status"].dump();
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

// A Trainer v2 TrainJob on upstream's torch-distributed runtime (read unchanged from the shared
// reference folder) whose trainer command is `torchrun`, as v2 users write it: PET_NPROC_PER_NODE
// from numProcPerNode, PET_NODE_RANK from the completion index.
TEST_F(TorchrunTest, TrainJobOnUpstreamsTorchRuntimeTrainsUnderTorchrun) {
  ASSERT_FALSE(EnvOrEmpty("COACH_SHARED_DIR").empty())
      << "COACH_SHARED_DIR must name the shared folder (tools/run_tests sets it)";
  Start(/*venv_on_path=*/true, {"--training-runtimes=" + SharedRuntimes()});
  const std::string manifest = ReadFileOrEmpty(Runfile("examples/trainer/torch-ddp-torchrun.yaml"));
  ASSERT_FALSE(manifest.empty()) << "examples/trainer/torch-ddp-torchrun.yaml not in runfiles";
  const TrainingJob done = RunAndCheck(manifest, "torch-ddp-torchrun", {""}, 4);
  if (HasFailure()) return;
  const nlohmann::json shown = api::v1::codec::JobToJson(done);
  ASSERT_TRUE(shown["status"].contains("conditions")) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["conditions"].back()["type"], "Complete") << shown["status"].dump();
  EXPECT_EQ(done.status().replica_statuses().at("node").replicas(), 2);
}

}  // namespace
}  // namespace coach::e2e
