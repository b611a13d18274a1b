// A Kubeflow Trainer v2 TrainJob on the local backend: upstream's torch runtime read from
// --training-runtimes (the shared reference folder, unchanged), two trainer nodes as processes on
// this host that find each other through PET_MASTER_ADDR/PORT (the rendezvous port the backend
// reserved), gloo DDP for real behind coach-launch (the torchrun drop-in reading the same PET_*
// variables: Debian's torch 1.13 torchrun fails to start its workers), upstream's status and
// coach's.

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/v1/codec/job_codec.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

std::string SharedRuntimes() {
  const char* dir = std::getenv("COACH_SHARED_DIR");
  EXPECT_NE(dir, nullptr) << "COACH_SHARED_DIR must point at the shared folder";
  return absl::StrCat(dir != nullptr ? dir : "", "/reference/kubeflow-v2/runtimes");
}

// The example as a user submits it (examples/trainer/torch-ddp.yaml).
std::string TrainJobManifest() {
  return ReadFileOrEmpty(Runfile("examples/trainer/torch-ddp.yaml"));
}

class LocalTrainJobTest : public OperatorTest {
 protected:
  void SetUp() override {
    OperatorOptions options;
    options.workdir = Runfile("");
    options.extra_args = {"--training-runtimes=" + SharedRuntimes()};
    StartOperator(options);
  }
};

TEST_F(LocalTrainJobTest, TorchTrainJobTrainsWithDdpAcrossTwoNodes) {
  const std::string manifest = TrainJobManifest();
  ASSERT_FALSE(manifest.empty()) << "examples/trainer/torch-ddp.yaml is not in the runfiles";
  absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
  ASSERT_TRUE(created.ok()) << created.status();
  absl::StatusOr<TrainingJob> done = op_->WaitFinished("torch-ddp", absl::Minutes(10));
  ASSERT_TRUE(done.ok()) << done.status();
  absl::StatusOr<std::string> logs = op_->Logs("torch-ddp", "");
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n" << *logs;

  std::set<std::string> ranks;
  std::set<std::string> checksums;
  for (absl::string_view line : absl::StrSplit(*logs, '\n')) {
    const size_t at = line.find("coach-result ");
    if (at == absl::string_view::npos) continue;
    std::map<std::string, std::string> f;
    for (absl::string_view kv : absl::StrSplit(line.substr(at), ' ', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq != absl::string_view::npos) {
        f[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
      }
    }
    EXPECT_EQ(f["status"], "ok") << line;
    EXPECT_EQ(f["world_size"], "2") << line;
    ranks.insert(f["rank"]);
    checksums.insert(f["params_checksum"]);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"})) << *logs;
  EXPECT_EQ(checksums.size(), 1u) << *logs;

  // What a kubectl user would read: upstream's Complete, jobsStatus; coach's pod counts.
  const nlohmann::json shown = api::v1::codec::JobToJson(*done);
  ASSERT_TRUE(shown["status"].contains("conditions")) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["conditions"].back()["type"], "Complete") << shown["status"].dump();
  EXPECT_EQ(shown["status"]["jobsStatus"][0]["succeeded"], 1) << shown["status"].dump();
  EXPECT_EQ(done->status().replica_statuses().at("node").replicas(), 2);
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

TEST_F(LocalTrainJobTest, ARuntimeThisMachineDoesNotHaveIsRefusedAtSubmit) {
  std::string manifest = TrainJobManifest();
  const std::string ref = "name: torch-distributed";
  ASSERT_NE(manifest.find(ref), std::string::npos);
  manifest.replace(manifest.find(ref), ref.size(), "name: no-such-runtime");
  absl::StatusOr<TrainingJob> created = op_->client().CreateJobFromManifest(manifest, kNs);
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  // Upstream's webhook words.
  EXPECT_TRUE(absl::StrContains(created.status().message(),
                                "specified clusterTrainingRuntime must be created before the "
                                "TrainJob is created"))
      << created.status();
}

// The runtimes of --training-runtimes as upstream's runtime webhook would have refused them at
// create (on a cluster they never exist): a TrainJob naming one is refused at submit with the
// webhook's words.
class LocalAdmissionTest : public OperatorTest {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = MakeTempDir("runtimes");
    ASSERT_TRUE(dir.ok()) << dir.status();
    const std::string torch = ReadFileOrEmpty(SharedRuntimes() + "/torch_distributed.yaml");
    ASSERT_FALSE(torch.empty());
    auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
      std::string text = torch;
      const std::string own = "name: torch-distributed";
      text.replace(text.find(own), own.size(), "name: " + name);
      ASSERT_NE(text.find(from), std::string::npos) << from;
      text.replace(text.find(from), from.size(), to);
      WriteFileOrDie(absl::StrCat(*dir, "/", name, ".yaml"), text);
    };
    variant("no-node-container", "- name: node\n                      image",
            "- name: trainer\n                      image");
    variant("two-trainer-replicas", "        - name: node\n          template:",
            "        - name: node\n          replicas: 2\n          template:");
    variant("torch-distributed", "torch: {}", "torch: {}");
    OperatorOptions options;
    options.workdir = Runfile("");
    options.extra_args = {"--training-runtimes=" + *dir};
    StartOperator(options);
  }

  // The example with `from` replaced by `to`, validated and defaulted but not stored.
  absl::StatusOr<TrainingJob> Submit(const std::string& from, const std::string& to) {
    std::string manifest = TrainJobManifest();
    if (manifest.find(from) == std::string::npos) return absl::InternalError("no " + from);
    manifest.replace(manifest.find(from), from.size(), to);
    return op_->client().CreateJobFromManifest(manifest, kNs, /*dry_run=*/true);
  }
};

TEST_F(LocalAdmissionTest, RuntimesUpstreamRefusesAreRefusedAtSubmit) {
  absl::Status no_node = Submit("name: torch-distributed", "name: no-node-container").status();
  EXPECT_EQ(no_node.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(no_node.message(),
                                "must contain the required container for the ancestor: trainer"))
      << no_node;
  absl::Status two = Submit("name: torch-distributed", "name: two-trainer-replicas").status();
  EXPECT_EQ(two.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(two.message(), "replicas: Invalid value: 2: always must be 1"))
      << two;
}

TEST_F(LocalAdmissionTest, UnknownRuntimeKindIsRefusedAtSubmit) {
  absl::Status unknown =
      Submit("    name: torch-distributed", "    name: torch-distributed\n    kind: MyRuntime")
          .status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(unknown.message(), "unsupported runtime: MyRuntime")) << unknown;
}

TEST_F(LocalAdmissionTest, RuntimePatchesGetTheirTimeAtSubmit) {
  const std::string patch =
      "  runtimePatches:\n"
      "    - manager: example.com/tuner\n"
      "      trainingRuntimeSpec:\n"
      "        template:\n"
      "          spec:\n"
      "            replicatedJobs:\n"
      "              - name: node\n"
      "                template:\n"
      "                  metadata:\n"
      "                    labels: {team: vision}\n"
      "  trainer:\n";
  absl::StatusOr<TrainingJob> admitted = Submit("  trainer:\n", patch);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  const nlohmann::json shown = api::v1::codec::JobToJson(*admitted);
  const nlohmann::json& stamped = shown["spec"]["runtimePatches"][0];
  ASSERT_TRUE(stamped.contains("time")) << shown["spec"].dump();
  EXPECT_TRUE(absl::EndsWith(stamped["time"].get<std::string>(), "Z")) << stamped.dump();
}

}  // namespace
}  // namespace coach::e2e
