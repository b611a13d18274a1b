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
  sdk::WaitOptions wait;
  wait.timeout = absl::Minutes(10);
  absl::StatusOr<TrainingJob> done =
      op_->client().WaitForJobConditions(kNs, "torch-ddp", {"Succeeded", "Failed"}, wait);
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

}  // namespace
}  // namespace coach::e2e
