// Kubeflow Trainer v2's TrainJob on a real control plane, applied with kubectl as a user of
// upstream's would: upstream's torch runtime unchanged, the pods, Service and env a Trainer
// v2.3 deployment gives, upstream's status (no condition while running, Complete/Failed in
// upstream's words, every jobsStatus counter), suspend and resume, and a runtime created after
// the TrainJob that names it.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

std::string SharedFile(const std::string& relative) {
  const char* dir = std::getenv("COACH_SHARED_DIR");
  EXPECT_NE(dir, nullptr) << "COACH_SHARED_DIR must point at the shared folder";
  return absl::StrCat(dir != nullptr ? dir : "", "/", relative);
}

// A TrainJob of `nodes` trainer pods on the runtime `runtime` (a ClusterTrainingRuntime).
std::string TrainJobYaml(const std::string& name, const std::string& runtime, int nodes,
                         bool suspend = false) {
  return absl::StrCat(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: )",
                      name, R"(
spec:
  runtimeRef:
    name: )",
                      runtime, R"(
  suspend: )",
                      suspend ? "true" : "false", R"(
  trainer:
    numNodes: )",
                      nodes, R"(
    command: [torchrun, train.py]
)");
}

// A torch ClusterTrainingRuntime whose node pods exit with `exit_code` after `seconds` on kwok;
// `restart_policy` and `backoff_limit` of the trainer's Job as given.
std::string KwokRuntimeYaml(const std::string& name, int exit_code, int seconds,
                            const std::string& restart_policy, int backoff_limit) {
  return absl::StrReplaceAll(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: NAME
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            backoffLimit: LIMIT
            template:
              metadata:
                annotations: {coach.test/exit-code: "CODE", coach.test/run-seconds: "SECONDS"}
              spec:
                restartPolicy: POLICY
                containers:
                - name: node
                  image: coach.local/none:latest
)",
                             {{"NAME", name},
                              {"CODE", std::to_string(exit_code)},
                              {"SECONDS", std::to_string(seconds)},
                              {"POLICY", restart_policy},
                              {"LIMIT", std::to_string(backoff_limit)}});
}

class TrainJobTest : public KubeTest {
 protected:
  std::vector<json> TrainJobPods(const std::string& name) const {
    return List("pods", "jobset.sigs.k8s.io/jobset-name=" + name);
  }
  // The TrainJob once `pred` holds for it (nullopt, with the operator's log, on timeout).
  std::optional<json> WaitTrainJob(const std::string& name,
                                   const std::function<bool(const json&)>& pred,
                                   const std::string& what,
                                   absl::Duration timeout = absl::Seconds(90)) {
    std::optional<json> last;
    if (Eventually(
            [&] {
              last = Get("trainjobs", name);
              return last.has_value() && pred(*last);
            },
            timeout, kKubectlPoll)) {
      return last;
    }
    ADD_FAILURE() << name << ": timed out waiting for " << what
                  << "; last: " << (last ? (*last)["status"].dump() : "none") << "\n"
                  << OperatorLogTail();
    return std::nullopt;
  }
  // A job just created has no status yet: both read an absent one as empty.
  static json UpstreamCondition(const json& job, const std::string& type) {
    const json status = job.value("status", json::object());
    for (const json& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return nullptr;
  }
  static std::string Phase(const json& job) {
    const json conditions = job.value("status", json::object())
                                .value("coach", json::object())
                                .value("conditions", json::array());
    return conditions.empty() ? "" : conditions.back().value("type", "");
  }
};

TEST_F(TrainJobTest, UpstreamRuntimeAndTrainJobRunAsTrainerV2) {
  const CmdResult runtime =
      Kubectl({"apply", "--server-side", "-f",
               SharedFile("reference/kubeflow-v2/runtimes/torch_distributed.yaml")});
  ASSERT_EQ(runtime.exit_code, 0) << runtime.err;
  Apply(TrainJobYaml("mnist", "torch-distributed", 2));

  std::vector<json> pods;
  ASSERT_TRUE(Eventually([&] { return (pods = TrainJobPods("mnist")).size() == 2; },
                         absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();
  for (const json& pod : pods) {
    const json& labels = pod["metadata"]["labels"];
    const std::string index = labels.value("batch.kubernetes.io/job-completion-index", "");
    ASSERT_FALSE(index.empty()) << pod["metadata"].dump();
    EXPECT_EQ(pod["metadata"]["name"].get<std::string>().rfind("mnist-node-0-" + index + "-", 0),
              0u);
    EXPECT_EQ(labels.value("jobset.sigs.k8s.io/replicatedjob-name", ""), "node");
    EXPECT_EQ(labels.value("batch.kubernetes.io/job-name", ""), "mnist-node-0");
    EXPECT_EQ(pod["metadata"]["annotations"].value("batch.kubernetes.io/job-completion-index", ""),
              index);
    EXPECT_EQ(pod["spec"]["hostname"], "mnist-node-0-" + index);
    EXPECT_EQ(pod["spec"]["subdomain"], "mnist");
    EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
    EXPECT_EQ(pod["spec"]["containers"][0]["name"], "node");
    EXPECT_EQ(PodEnv(pod, "PET_NNODES"), "2");
    EXPECT_EQ(PodEnv(pod, "PET_MASTER_ADDR"), "mnist-node-0-0.mnist");
    EXPECT_EQ(PodEnv(pod, "PET_MASTER_PORT"), "29500");
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  }
  std::optional<json> service = Get("service", "mnist");
  ASSERT_TRUE(service) << OperatorLogTail();
  EXPECT_EQ((*service)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*service)["spec"]["selector"]["jobset.sigs.k8s.io/jobset-name"], "mnist");
  EXPECT_EQ((*service)["spec"]["publishNotReadyAddresses"], true);
  std::optional<json> snapshot = Get("configmap", "mnist-runtime-snapshot");
  ASSERT_TRUE(snapshot);
  EXPECT_NE((*snapshot)["data"].value("runtime", "").find("torch-distributed"), std::string::npos);

  // Running: upstream readers see no condition at all; coach's phase says Running.
  std::optional<json> running = WaitTrainJob(
      "mnist", [](const json& j) { return Phase(j) == "Running"; }, "coach's Running");
  ASSERT_TRUE(running);
  EXPECT_FALSE((*running)["status"].contains("conditions")) << (*running)["status"].dump();
  const json jobs = (*running)["status"]["jobsStatus"];
  ASSERT_EQ(jobs.size(), 1u) << (*running)["status"].dump();
  for (const char* counter : {"ready", "succeeded", "failed", "active", "suspended"}) {
    EXPECT_TRUE(jobs[0].contains(counter)) << counter;
  }
  EXPECT_EQ(jobs[0]["name"], "node");
  EXPECT_EQ(jobs[0]["active"], 1);

  // kubectl's columns: STATE empty (upstream's), PHASE coach's.
  const CmdResult table = Kubectl({"get", "trainjob", "mnist", "-n", ns(), "--no-headers"});
  EXPECT_NE(table.out.find("Running"), std::string::npos) << table.out;
}

TEST_F(TrainJobTest, CompletesAndFailsInUpstreamsWords) {
  const std::string ok_runtime = "kwok-ok-" + ns();
  const std::string bad_runtime = "kwok-fail-" + ns();
  Apply(KwokRuntimeYaml(ok_runtime, 0, 2, "OnFailure", 6));
  Apply(KwokRuntimeYaml(bad_runtime, 1, 2, "Never", 0));
  Apply(TrainJobYaml("good", ok_runtime, 2));
  Apply(TrainJobYaml("bad", bad_runtime, 1));

  std::optional<json> good = WaitTrainJob(
      "good", [](const json& j) { return !UpstreamCondition(j, "Complete").is_null(); },
      "Complete");
  ASSERT_TRUE(good);
  const json complete = UpstreamCondition(*good, "Complete");
  EXPECT_EQ(complete["status"], "True");
  EXPECT_EQ(complete["reason"], "AllJobsCompleted");
  EXPECT_EQ(complete["message"], "jobset completed successfully");
  EXPECT_TRUE(complete.contains("lastTransitionTime"));
  EXPECT_EQ((*good)["status"]["conditions"].size(), 1u) << (*good)["status"].dump();
  EXPECT_EQ((*good)["status"]["jobsStatus"][0]["succeeded"], 1);
  EXPECT_EQ(Phase(*good), "Succeeded");

  std::optional<json> bad = WaitTrainJob(
      "bad", [](const json& j) { return !UpstreamCondition(j, "Failed").is_null(); }, "Failed");
  ASSERT_TRUE(bad);
  const json failed = UpstreamCondition(*bad, "Failed");
  EXPECT_EQ(failed["reason"], "FailedJobs");
  EXPECT_EQ(failed["message"],
            "jobset failed due to one or more job failures (first failed job: bad-node-0)");
  EXPECT_EQ((*bad)["status"]["jobsStatus"][0]["failed"], 1) << (*bad)["status"].dump();
  Kubectl({"delete", "clustertrainingruntime", ok_runtime, bad_runtime});
}

TEST_F(TrainJobTest, InvalidTrainJobsAreRefusedNamingTheField) {
  const std::string runtime = "kwok-inv-" + ns();
  Apply(KwokRuntimeYaml(runtime, 0, 600, "OnFailure", 6));
  // The CRD's own rules: kubectl is refused, nothing is stored.
  CmdResult bad_name =
      Kubectl({"apply", "-n", ns(), "-f", "-"}, TrainJobYaml("Not-A-DNS-Label", runtime, 1));
  EXPECT_NE(bad_name.exit_code, 0);
  EXPECT_NE(bad_name.err.find("metadata.name must match RFC 1035 DNS label format"),
            std::string::npos)
      << bad_name.err;
  // Upstream's webhook rules: the job fails at once, naming the field, and runs nothing.
  std::string reserved = TrainJobYaml("reserved", runtime, 1);
  reserved += "    env: [{name: PET_NNODES, value: \"9\"}]\n";
  Apply(reserved);
  std::optional<json> failed = WaitTrainJob(
      "reserved", [](const json& j) { return !UpstreamCondition(j, "Failed").is_null(); },
      "Failed");
  ASSERT_TRUE(failed);
  const json c = UpstreamCondition(*failed, "Failed");
  EXPECT_EQ(c["reason"], "FailedValidation");
  EXPECT_NE(c["message"].get<std::string>().find("spec.trainer.env"), std::string::npos)
      << c.dump();
  EXPECT_TRUE(TrainJobPods("reserved").empty());
  Kubectl({"delete", "clustertrainingruntime", runtime});
}

TEST_F(TrainJobTest, AFinishedTrainJobGoesAfterItsTtl) {
  const std::string runtime = "kwok-ttl-" + ns();
  Apply(KwokRuntimeYaml(runtime, 0, 1, "OnFailure", 6));
  std::string job = TrainJobYaml("brief", runtime, 1);
  job = absl::StrReplaceAll(job, {{"  name: brief\n",
                                   "  name: brief\n  annotations: "
                                   "{coach.dev/ttl-seconds-after-finished: \"2\"}\n"}});
  Apply(job);
  ASSERT_TRUE(WaitTrainJob(
      "brief", [](const json& j) { return !UpstreamCondition(j, "Complete").is_null(); },
      "Complete"));
  EXPECT_TRUE(Eventually([&] { return !Get("trainjobs", "brief").has_value(); }, absl::Seconds(30),
                         kKubectlPoll))
      << OperatorLogTail();
  Kubectl({"delete", "clustertrainingruntime", runtime});
}

TEST_F(TrainJobTest, SuspendAndResumeAsUpstream) {
  const std::string runtime = "kwok-run-" + ns();
  Apply(KwokRuntimeYaml(runtime, 0, 600, "OnFailure", 6));
  Apply(TrainJobYaml("pausing", runtime, 2));
  ASSERT_TRUE(Eventually([&] { return TrainJobPods("pausing").size() == 2; }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();

  ASSERT_EQ(Kubectl({"patch", "trainjob", "pausing", "-n", ns(), "--type=merge", "-p",
                     R"({"spec":{"suspend":true}})"})
                .exit_code,
            0);
  std::optional<json> suspended = WaitTrainJob(
      "pausing",
      [](const json& j) {
        const json c = UpstreamCondition(j, "Suspended");
        return !c.is_null() && c.value("status", "") == "True";
      },
      "Suspended");
  ASSERT_TRUE(suspended);
  EXPECT_EQ(UpstreamCondition(*suspended, "Suspended")["reason"], "Suspended");
  EXPECT_EQ(UpstreamCondition(*suspended, "Suspended")["message"], "TrainJob is suspended");
  ASSERT_TRUE(
      Eventually([&] { return TrainJobPods("pausing").empty(); }, absl::Seconds(60), kKubectlPoll));

  ASSERT_EQ(Kubectl({"patch", "trainjob", "pausing", "-n", ns(), "--type=merge", "-p",
                     R"({"spec":{"suspend":false}})"})
                .exit_code,
            0);
  std::optional<json> resumed = WaitTrainJob(
      "pausing",
      [](const json& j) {
        const json c = UpstreamCondition(j, "Suspended");
        return !c.is_null() && c.value("status", "") == "False";
      },
      "Resumed");
  ASSERT_TRUE(resumed);
  EXPECT_EQ(UpstreamCondition(*resumed, "Suspended")["reason"], "Resumed");
  EXPECT_EQ(UpstreamCondition(*resumed, "Suspended")["message"], "TrainJob is resumed");
  EXPECT_TRUE(Eventually([&] { return TrainJobPods("pausing").size() == 2; }, absl::Seconds(60),
                         kKubectlPoll));
  Kubectl({"delete", "clustertrainingruntime", runtime});
}

TEST_F(TrainJobTest, ARuntimeCreatedAfterItsTrainJobStartsIt) {
  const std::string runtime = "kwok-late-" + ns();
  Apply(TrainJobYaml("early", runtime, 1));
  // Upstream's event, no condition, while the runtime does not exist.
  ASSERT_TRUE(Eventually(
      [&] {
        const CmdResult events = Kubectl({"get", "events", "-n", ns(), "--field-selector",
                                          "involvedObject.name=early", "-o", "json"});
        return events.out.find("TrainJobResourcesCreationFailed") != std::string::npos;
      },
      absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();
  std::optional<json> waiting = Get("trainjobs", "early");
  ASSERT_TRUE(waiting);
  EXPECT_FALSE((*waiting)["status"].contains("conditions")) << (*waiting)["status"].dump();
  EXPECT_TRUE(TrainJobPods("early").empty());

  Apply(KwokRuntimeYaml(runtime, 0, 600, "OnFailure", 6));
  EXPECT_TRUE(Eventually([&] { return TrainJobPods("early").size() == 1; }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  Kubectl({"delete", "clustertrainingruntime", runtime});
}

TEST_F(TrainJobTest, TheCoachCliSubmitsShowsAndWaitsForATrainJob) {
  const std::string runtime = "kwok-cli-" + ns();
  Apply(KwokRuntimeYaml(runtime, 0, 3, "OnFailure", 6));
  const std::string path = TestTmpDir() + "/cli-trainjob.yaml";
  WriteFileOrDie(path, TrainJobYaml("viacli", runtime, 2));
  // Upstream's webhook rules at submit: refused, naming the field, nothing stored.
  const std::string bad_path = TestTmpDir() + "/cli-bad-trainjob.yaml";
  WriteFileOrDie(bad_path, TrainJobYaml("badcli", runtime, 1) +
                               "    env: [{name: PET_NNODES, value: \"9\"}]\n");
  CmdResult refused = Coach({"submit", "-f", bad_path, "-n", ns()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("spec.trainer.env"), std::string::npos) << refused.err;
  EXPECT_FALSE(Get("trainjobs", "badcli").has_value());
  CmdResult submit = Coach({"submit", "-f", path, "-n", ns()});
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  CmdResult wait = Coach({"wait", "viacli", "-n", ns(), "--for", "Succeeded"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err << OperatorLogTail();
  CmdResult list = Coach({"list", "-n", ns()});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("TrainJob"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("Succeeded"), std::string::npos) << list.out;
  CmdResult describe = Coach({"describe", "viacli", "-n", ns()});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("node"), std::string::npos) << describe.out;
  std::fprintf(stderr, "[kube-e2e] coach list:\n%s\ncoach describe:\n%s\n", list.out.c_str(),
               describe.out.c_str());
  // The object the CLI created is upstream's TrainJob, with upstream's status.
  std::optional<json> stored = Get("trainjobs", "viacli");
  ASSERT_TRUE(stored);
  EXPECT_EQ(UpstreamCondition(*stored, "Complete")["reason"], "AllJobsCompleted");
  Kubectl({"delete", "clustertrainingruntime", runtime});
}

}  // namespace
}  // namespace coach::e2e::kube

namespace coach::e2e::kube {
namespace {

// An MPI runtime with a shared claim: the SSH Secret Trainer v2's MPI plugin makes (keys generated
// by the operator, which can create Secrets but read none) and the PVC JobSet's
// volumeClaimPolicies make, both owned by the TrainJob and mounted by its pods.
TEST_F(TrainJobTest, MpiSshSecretAndVolumeClaimsAsUpstreamMakesThem) {
  Apply(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: mpi-claims
spec:
  mlPolicy: {numNodes: 1, mpi: {numProcPerNode: 1, sshAuthMountPath: /root/.ssh}}
  template:
    spec:
      volumeClaimPolicies:
      - retentionPolicy: {whenDeleted: Delete}
        templates:
        - metadata: {name: scratch}
          spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
      replicatedJobs:
      - name: launcher
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: coach.local/none:latest
                  volumeMounts: [{name: scratch, mountPath: /scratch}]
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: coach.local/none:latest
                  volumeMounts: [{name: scratch, mountPath: /scratch}]
)");
  Apply(TrainJobYaml("mpi", "mpi-claims", 2));
  std::optional<json> job = Get("trainjobs", "mpi");
  ASSERT_TRUE(job);
  const std::string uid = (*job)["metadata"]["uid"];

  std::optional<json> secret;
  ASSERT_TRUE(Eventually([&] { return (secret = Get("secret", "mpi-mpi-ssh-auth")).has_value(); },
                         absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();
  EXPECT_EQ((*secret)["type"], "kubernetes.io/ssh-auth");
  EXPECT_EQ((*secret)["immutable"], true);
  EXPECT_EQ((*secret)["metadata"]["ownerReferences"][0]["uid"], uid);
  std::string key, pub;
  ASSERT_TRUE(absl::Base64Unescape((*secret)["data"].value("ssh-privatekey", ""), &key));
  ASSERT_TRUE(absl::Base64Unescape((*secret)["data"].value("ssh-publickey", ""), &pub));
  EXPECT_TRUE(absl::StartsWith(key, "-----BEGIN EC PRIVATE KEY-----")) << "a key was written";
  EXPECT_TRUE(absl::StartsWith(pub, "ecdsa-sha2-nistp521 AAAA")) << pub;
  // The operator's log never holds the key.
  EXPECT_EQ(OperatorLogTail().find(key.substr(40, 40)), std::string::npos);

  std::optional<json> claim = Get("pvc", "scratch-mpi");
  ASSERT_TRUE(claim) << OperatorLogTail();
  EXPECT_EQ((*claim)["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ((*claim)["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"], "mpi");
  EXPECT_EQ((*claim)["spec"]["resources"]["requests"]["storage"], "1Gi");

  std::vector<json> pods;
  ASSERT_TRUE(Eventually([&] { return (pods = TrainJobPods("mpi")).size() == 3; },
                         absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();
  for (const json& pod : pods) {
    bool ssh = false, scratch = false;
    for (const json& v : pod["spec"]["volumes"]) {
      ssh = ssh || v.value("secret", json::object()).value("secretName", "") == "mpi-mpi-ssh-auth";
      scratch =
          scratch ||
          v.value("persistentVolumeClaim", json::object()).value("claimName", "") == "scratch-mpi";
    }
    EXPECT_TRUE(ssh) << pod["metadata"]["name"];
    EXPECT_TRUE(scratch) << pod["metadata"]["name"];
  }
}

// A TrainJob and a PyTorchJob of one name in one namespace: each runs its own pods, and
// neither counts, nor deletes, the other's.
TEST_F(TrainJobTest, ATrainJobAndAV1JobMayShareAName) {
  Apply(KwokRuntimeYaml("kwok-long", 0, 3600, "OnFailure", 6));
  Apply(TrainJobYaml("twin", "kwok-long", 2));
  Apply(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: twin
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: pytorch, image: coach.local/none:latest}]
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: pytorch, image: coach.local/none:latest}]
)");
  ASSERT_TRUE(WaitTrainJob(
      "twin", [](const json& j) { return Phase(j) == "Running"; }, "Running"));
  std::optional<json> v1;
  ASSERT_TRUE(Eventually(
      [&] {
        v1 = Get("pytorchjobs", "twin");
        if (!v1) return false;
        for (const json& c : (*v1)["status"].value("conditions", json::array())) {
          if (c.value("type", "") == "Running" && c.value("status", "") == "True") return true;
        }
        return false;
      },
      absl::Seconds(90), kKubectlPoll))
      << (v1 ? (*v1)["status"].dump() : "none") << OperatorLogTail();
  // Settled: a few more passes of both, then the counts.
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(TrainJobPods("twin").size(), 2u);
  EXPECT_EQ(List("pods", "training.kubeflow.org/job-name=twin").size(), 4u);
  const json train_job = *Get("trainjobs", "twin");
  EXPECT_EQ(train_job["status"]["jobsStatus"][0]["active"], 1) << train_job["status"].dump();
  const json statuses = (*Get("pytorchjobs", "twin"))["status"]["replicaStatuses"];
  EXPECT_EQ(statuses["Master"].value("active", 0), 1) << statuses.dump();
  EXPECT_EQ(statuses["Worker"].value("active", 0), 3) << statuses.dump();
  const CmdResult events = Kubectl({"get", "events", "-n", ns(), "-o", "json"});
  EXPECT_EQ(events.out.find("SuccessfulDeletePod"), std::string::npos) << "a job deleted a pod";
}

}  // namespace
}  // namespace coach::e2e::kube
