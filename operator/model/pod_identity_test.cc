#include "operator/model/pod_identity.h"

#include <gtest/gtest.h>

#include "api/v1/kinds.h"

namespace coach::model {
namespace {

Job JobOf(api::v1::JobKind kind, const std::string& name) {
  Job job;
  job.set_kind(kind);
  job.mutable_metadata()->set_name(name);
  return job;
}

Json PodWith(Json labels) { return {{"metadata", {{"labels", std::move(labels)}}}}; }

TEST(PodIdentity, StampedLabelsReadBackTheSameForEveryKind) {
  for (api::v1::JobKind kind :
       {api::v1::PYTORCH_JOB, api::v1::TF_JOB, api::v1::MPI_JOB, api::v1::TRAIN_JOB}) {
    const Job job = JobOf(kind, "train");
    Json pod = PodWith({{"app", "mine"}, {kLabelCoachReplicaType, "forged"}});
    StampPodIdentity(job, "Worker", 3, pod);
    EXPECT_EQ(LabelOf(pod, kLabelCoachJobName), "train");
    EXPECT_EQ(LabelOf(pod, kLabelCoachReplicaType), "Worker");
    EXPECT_EQ(LabelOf(pod, kLabelCoachReplicaIndex), "3");
    EXPECT_EQ(LabelOf(pod, "app"), "mine");
    const PodIdentity id = IdentifyPod(job, pod);
    EXPECT_EQ(id.replica_type, "Worker") << kind;
    EXPECT_EQ(id.index, 3) << kind;
    EXPECT_EQ(id.attempt, 0) << kind;
  }
}

TEST(PodIdentity, StampingMakesTheMetadataItNeeds) {
  Json pod = {{"metadata", "not an object"}};
  StampPodIdentity(JobOf(api::v1::PYTORCH_JOB, "j"), "Master", 0, pod);
  EXPECT_EQ(LabelOf(pod, kLabelCoachJobName), "j");
  Json not_a_pod = "text";
  StampPodIdentity(JobOf(api::v1::PYTORCH_JOB, "j"), "Master", 0, not_a_pod);
  EXPECT_EQ(not_a_pod, "text");
}

TEST(PodIdentity, CoachsLabelsWinOverUpstreams) {
  const Json pod = PodWith({{kLabelCoachReplicaType, "Worker"},
                            {kLabelCoachReplicaIndex, "2"},
                            {"training.kubeflow.org/replica-type", "master"},
                            {"training.kubeflow.org/replica-index", "0"},
                            {kLabelAttempt, "4"}});
  const PodIdentity id = IdentifyPod(JobOf(api::v1::PYTORCH_JOB, "j"), pod);
  EXPECT_EQ(id.replica_type, "Worker");
  EXPECT_EQ(id.index, 2);
  EXPECT_EQ(id.attempt, 4);
}

TEST(PodIdentity, AnEarlierOperatorsV1PodIsReadFromUpstreamsLabels) {
  const Json pod = PodWith({{"training.kubeflow.org/replica-type", "worker"},
                            {"training.kubeflow.org/replica-index", "5"}});
  const PodIdentity id = IdentifyPod(JobOf(api::v1::PYTORCH_JOB, "j"), pod);
  EXPECT_EQ(id.replica_type, "Worker");  // the spec's spelling
  EXPECT_EQ(id.index, 5);
  // A type the kind does not know keeps the label's spelling.
  const PodIdentity odd = IdentifyPod(JobOf(api::v1::PYTORCH_JOB, "j"),
                                      PodWith({{"training.kubeflow.org/replica-type", "ps"}}));
  EXPECT_EQ(odd.replica_type, "ps");
}

TEST(PodIdentity, AnEarlierOperatorsTrainJobPodIsReadFromJobSetsLabels) {
  const Json pod =
      PodWith({{kLabelReplicatedJob, "node"}, {kLabelCompletionIndex, "1"}, {kLabelAttempt, "2"}});
  const PodIdentity id = IdentifyPod(JobOf(api::v1::TRAIN_JOB, "t"), pod);
  EXPECT_EQ(id.replica_type, "node");
  EXPECT_EQ(id.index, 1);
  EXPECT_EQ(id.attempt, 2);
}

TEST(PodIdentity, EditedLabelsDoNotFail) {
  const Json pod = PodWith(
      {{kLabelCoachReplicaType, "Worker"}, {kLabelCoachReplicaIndex, "-1"}, {kLabelAttempt, "x"}});
  const PodIdentity id = IdentifyPod(JobOf(api::v1::PYTORCH_JOB, "j"), pod);
  EXPECT_EQ(id.replica_type, "Worker");
  EXPECT_EQ(id.index, 0);
  EXPECT_EQ(id.attempt, 0);
}

}  // namespace
}  // namespace coach::model
