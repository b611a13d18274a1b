// The six kinds on a real control plane: a kubectl-applied job gets its pods
// (<job>-<type>-<i>), headless services (none for MPIJob), training.kubeflow.org labels,
// owner references and the framework's environment; kwok exits the pods with 0 and the job
// goes Created -> Running -> Succeeded (<Kind>Succeeded) with replicaStatuses counting them.

#include "api/v1/kinds.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

struct Replica {
  std::string type;  // "Master"
  int replicas;
  std::string exit_code;  // "" : no exit annotation (stays Running)
  int run_seconds = 3;
};

// A job of `kind` ("PyTorchJob") with `replicas`, restartPolicy Never; pods without an exit
// code keep running, labelled e2e=1.
JobManifest Job(const std::string& kind, const std::string& name,
                const std::vector<Replica>& replicas) {
  JobManifest job(api::v1::FindKindByName(kind)->kind, name);
  for (const Replica& r : replicas) {
    job.Replica(r.type, r.replicas).RestartPolicy("Never");
    if (r.exit_code.empty()) {
      job.PodLabel("e2e", "1");
    } else {
      job.KwokExit(std::stoi(r.exit_code), r.run_seconds);
    }
  }
  return job;
}

class KindsTest : public KubeTest {
 protected:
  // Pods and services of the job: names, labels, owner references; returns pods by name.
  std::map<std::string, json> CheckObjects(const std::string& kind, const std::string& job,
                                           const std::vector<Replica>& replicas, bool services) {
    std::set<std::string> want;
    int total = 0;
    for (const Replica& r : replicas) {
      if (kind == "MPIJob" && r.type == "Launcher") {
        // MPIJob v1 (upstream pkg/controller.v1/mpi): the launcher is "<job>-launcher".
        want.insert(job + "-launcher");
        total += r.replicas;
        continue;
      }
      for (int i = 0; i < r.replicas; ++i) {
        want.insert(absl::StrCat(job, "-", absl::AsciiStrToLower(r.type), "-", i));
      }
      total += r.replicas;
    }
    std::map<std::string, json> pods;
    EXPECT_TRUE(Eventually(
        [&] {
          pods.clear();
          for (const json& p : JobPods(job)) pods[p["metadata"]["name"]] = p;
          return static_cast<int>(pods.size()) == total;
        },
        absl::Seconds(60), kKubectlPoll))
        << "pods: " << pods.size() << " want " << total;
    std::set<std::string> got;
    for (const auto& [name, p] : pods) got.insert(name);
    EXPECT_EQ(got, want);
    const std::string lower_kind = absl::AsciiStrToLower(kind);
    std::optional<json> job_obj = Get(lower_kind + "s", job);
    EXPECT_TRUE(job_obj.has_value());
    const std::string uid = job_obj ? (*job_obj)["metadata"].value("uid", "") : "";
    for (const auto& [name, p] : pods) {
      const json& labels = p["metadata"]["labels"];
      EXPECT_EQ(labels.value("training.kubeflow.org/job-name", ""), job) << name;
      EXPECT_EQ(labels.value("training.kubeflow.org/operator-name", ""), lower_kind + "-controller")
          << name;
      if (name == job + "-launcher") {
        EXPECT_EQ(labels.value("training.kubeflow.org/replica-type", ""), "launcher");
      }
      const std::string type_index =
          name == job + "-launcher" ? "launcher-0" : name.substr(job.size() + 1);
      const std::string type = type_index.substr(0, type_index.rfind('-'));
      const std::string index = type_index.substr(type_index.rfind('-') + 1);
      EXPECT_EQ(labels.value("training.kubeflow.org/replica-type", ""), type) << name;
      EXPECT_EQ(labels.value("training.kubeflow.org/replica-index", ""), index) << name;
      if (!p["metadata"].contains("ownerReferences")) {
        ADD_FAILURE() << name << " has no ownerReferences";
        continue;
      }
      const json& owner = p["metadata"]["ownerReferences"][0];
      EXPECT_EQ(owner.value("kind", ""), kind) << name;
      EXPECT_EQ(owner.value("name", ""), job) << name;
      EXPECT_EQ(owner.value("uid", ""), uid) << name;
      EXPECT_TRUE(owner.value("controller", false)) << name;
      EXPECT_TRUE(owner.value("blockOwnerDeletion", false)) << name;
    }
    std::vector<json> svcs = List("services", "training.kubeflow.org/job-name=" + job);
    if (!services) {
      EXPECT_TRUE(svcs.empty()) << kind << " made " << svcs.size() << " services";
    } else {
      EXPECT_TRUE(Eventually(
          [&] {
            svcs = List("services", "training.kubeflow.org/job-name=" + job);
            return static_cast<int>(svcs.size()) == total;
          },
          absl::Seconds(30), kKubectlPoll));
      for (const json& s : svcs) {
        const std::string name = s["metadata"]["name"];
        EXPECT_EQ(want.count(name), 1u) << name;
        EXPECT_EQ(s["spec"].value("clusterIP", ""), "None") << name;
        EXPECT_EQ(s["metadata"]["ownerReferences"][0].value("uid", ""), uid) << name;
        EXPECT_EQ(s["spec"]["selector"].value("training.kubeflow.org/job-name", ""), job);
      }
    }
    return pods;
  }

  // Waits for Succeeded and checks the conditions and replicaStatuses.
  void CheckSucceeded(const std::string& kind, const std::string& job,
                      const std::map<std::string, int>& succeeded) {
    const absl::Time begin = absl::Now();
    std::optional<json> j =
        WaitCondition(absl::AsciiStrToLower(kind) + "s", job, "Succeeded", absl::Seconds(90));
    ASSERT_TRUE(j.has_value());
    std::fprintf(stderr, "[kube-e2e] %s %s Succeeded %s after the pods were checked\n",
                 kind.c_str(), job.c_str(), absl::FormatDuration(absl::Now() - begin).c_str());
    EXPECT_EQ(Condition(*j, "Succeeded").value("reason", ""), kind + "Succeeded");
    EXPECT_TRUE(HasCondition(*j, "Created")) << (*j)["status"].dump();
    EXPECT_EQ(Condition(*j, "Created").value("reason", ""), kind + "Created");
    const json running = Condition(*j, "Running");
    ASSERT_FALSE(running.is_null()) << "no Running condition: " << (*j)["status"].dump();
    EXPECT_EQ(running.value("status", ""), "False");
    EXPECT_FALSE(HasCondition(*j, "Failed"));
    EXPECT_TRUE((*j)["status"].contains("startTime"));
    EXPECT_TRUE((*j)["status"].contains("completionTime"));
    // The counts settle in the pass after Succeeded: a replica the success rule did not wait
    // for (TF's Worker 1 when Worker 0 decides) can still be running when it is written.
    const std::string resource = absl::AsciiStrToLower(kind) + "s";
    Eventually(
        [&] {
          std::optional<json> now = Get(resource, job);
          if (!now.has_value()) return false;
          j = now;
          for (const auto& [type, n] : succeeded) {
            const json rs = (*j)["status"]["replicaStatuses"].value(type, json::object());
            if (rs.value("succeeded", 0) != n || rs.value("active", 0) != 0) return false;
          }
          return true;
        },
        absl::Seconds(15), kKubectlPoll);
    for (const auto& [type, n] : succeeded) {
      const json rs = (*j)["status"]["replicaStatuses"].value(type, json::object());
      EXPECT_EQ(rs.value("succeeded", 0), n) << type << ": " << rs.dump();
      EXPECT_EQ(rs.value("active", 0), 0) << type << ": " << rs.dump();
    }
  }
};

TEST_F(KindsTest, PyTorchJob) {
  const std::vector<Replica> r = {{"Master", 1, "0"}, {"Worker", 2, "0"}};
  Apply(Job("PyTorchJob", "pt", r));
  std::map<std::string, json> pods = CheckObjects("PyTorchJob", "pt", r, true);
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& [name, p] : pods) {
    EXPECT_EQ(PodEnv(p, "MASTER_ADDR"), "pt-master-0") << name;
    EXPECT_EQ(PodEnv(p, "MASTER_PORT"), "23456") << name;
    EXPECT_EQ(PodEnv(p, "WORLD_SIZE"), "3") << name;
    EXPECT_EQ(PodEnv(p, "PYTHONUNBUFFERED"), "1") << name;
  }
  EXPECT_EQ(PodEnv(pods["pt-master-0"], "RANK"), "0");
  EXPECT_EQ(PodEnv(pods["pt-worker-0"], "RANK"), "1");
  EXPECT_EQ(PodEnv(pods["pt-worker-1"], "RANK"), "2");
  EXPECT_EQ(pods["pt-master-0"]["metadata"]["labels"].value("training.kubeflow.org/job-role", ""),
            "master");
  EXPECT_EQ(pods["pt-master-0"]["spec"].value("restartPolicy", ""), "Never");
  CheckSucceeded("PyTorchJob", "pt", {{"Master", 1}, {"Worker", 2}});
}

TEST_F(KindsTest, TFJob) {
  const std::vector<Replica> r = {{"PS", 1, "0"}, {"Worker", 2, "0"}};
  Apply(Job("TFJob", "tf", r));
  std::map<std::string, json> pods = CheckObjects("TFJob", "tf", r, true);
  ASSERT_EQ(pods.size(), 3u);
  const std::string dom = absl::StrCat(".", ns(), ".svc:2222");
  for (const auto& [name, p] : pods) {
    json tf = json::parse(PodEnv(p, "TF_CONFIG"), nullptr, false);
    ASSERT_FALSE(tf.is_discarded()) << name << ": " << PodEnv(p, "TF_CONFIG");
    EXPECT_EQ(tf["cluster"]["ps"], json::array({"tf-ps-0" + dom})) << tf.dump();
    EXPECT_EQ(tf["cluster"]["worker"], json::array({"tf-worker-0" + dom, "tf-worker-1" + dom}));
    EXPECT_EQ(tf.value("environment", ""), "cloud");
    const std::string type = p["metadata"]["labels"]["training.kubeflow.org/replica-type"];
    const std::string index = p["metadata"]["labels"]["training.kubeflow.org/replica-index"];
    EXPECT_EQ(tf["task"].value("type", ""), type);
    EXPECT_EQ(tf["task"].value("index", -1), std::stoi(index));
  }
  EXPECT_EQ(pods["tf-worker-0"]["metadata"]["labels"].value("training.kubeflow.org/job-role", ""),
            "master");
  CheckSucceeded("TFJob", "tf", {{"Worker", 2}});
}

TEST_F(KindsTest, XGBoostJob) {
  const std::vector<Replica> r = {{"Master", 1, "0"}, {"Worker", 2, "0"}};
  Apply(Job("XGBoostJob", "xgb", r));
  std::map<std::string, json> pods = CheckObjects("XGBoostJob", "xgb", r, true);
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& [name, p] : pods) {
    EXPECT_EQ(PodEnv(p, "MASTER_ADDR"), "xgb-master-0") << name;
    EXPECT_EQ(PodEnv(p, "MASTER_PORT"), "9999") << name;
    EXPECT_EQ(PodEnv(p, "WORLD_SIZE"), "3") << name;
    EXPECT_EQ(PodEnv(p, "WORKER_ADDRS"), "xgb-worker-0,xgb-worker-1") << name;
  }
  EXPECT_EQ(PodEnv(pods["xgb-master-0"], "RANK"), "0");
  EXPECT_EQ(PodEnv(pods["xgb-worker-0"], "RANK"), "1");
  EXPECT_EQ(PodEnv(pods["xgb-worker-1"], "RANK"), "2");
  CheckSucceeded("XGBoostJob", "xgb", {{"Master", 1}});
}

TEST_F(KindsTest, PaddleJob) {
  const std::vector<Replica> r = {{"Worker", 2, "0"}};
  Apply(Job("PaddleJob", "pd", r));
  std::map<std::string, json> pods = CheckObjects("PaddleJob", "pd", r, true);
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& [name, p] : pods) {
    EXPECT_EQ(PodEnv(p, "PADDLE_JOB_ID"), "pd") << name;
    EXPECT_EQ(PodEnv(p, "PADDLE_NNODES"), "2") << name;
  }
  EXPECT_EQ(PodEnv(pods["pd-worker-0"], "PADDLE_MASTER"), "$(POD_IP_DUMMY):36543");
  EXPECT_EQ(PodEnv(pods["pd-worker-1"], "PADDLE_MASTER"), "pd-worker-0:36543");
  CheckSucceeded("PaddleJob", "pd", {{"Worker", 2}});
}

TEST_F(KindsTest, JAXJob) {
  const std::vector<Replica> r = {{"Worker", 2, "0"}};
  Apply(Job("JAXJob", "jx", r));
  std::map<std::string, json> pods = CheckObjects("JAXJob", "jx", r, true);
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& [name, p] : pods) {
    EXPECT_EQ(PodEnv(p, "COORDINATOR_ADDRESS"), "jx-worker-0") << name;
    EXPECT_EQ(PodEnv(p, "COORDINATOR_PORT"), "6666") << name;
    EXPECT_EQ(PodEnv(p, "NUM_PROCESSES"), "2") << name;
  }
  EXPECT_EQ(PodEnv(pods["jx-worker-0"], "PROCESS_ID"), "0");
  EXPECT_EQ(PodEnv(pods["jx-worker-1"], "PROCESS_ID"), "1");
  CheckSucceeded("JAXJob", "jx", {{"Worker", 2}});
}

TEST_F(KindsTest, MPIJob) {
  const std::vector<Replica> r = {{"Launcher", 1, "0", 4}, {"Worker", 2, "0", 4}};
  Apply(Job("MPIJob", "mpi", r).SlotsPerWorker(2));
  std::map<std::string, json> pods = CheckObjects("MPIJob", "mpi", r, false);
  ASSERT_EQ(pods.size(), 3u);
  std::optional<json> cm = Get("configmap", "mpi-config");
  ASSERT_TRUE(cm.has_value());
  EXPECT_EQ((*cm)["data"].value("hostfile", ""), "mpi-worker-0 slots=2\nmpi-worker-1 slots=2\n");
  EXPECT_TRUE((*cm)["data"].contains("kubexec.sh"));
  EXPECT_TRUE((*cm)["data"].contains("discover_hosts.sh"));
  EXPECT_EQ((*cm)["metadata"]["ownerReferences"][0].value("name", ""), "mpi");
  for (const char* res : {"serviceaccount", "role", "rolebinding"}) {
    std::optional<json> o = Get(res, "mpi-launcher");
    EXPECT_TRUE(o.has_value()) << res;
  }
  std::optional<json> role = Get("role", "mpi-launcher");
  if (role) {
    std::string rules = (*role)["rules"].dump();
    EXPECT_NE(rules.find("pods/exec"), std::string::npos) << rules;
  }
  EXPECT_EQ(PodEnv(pods["mpi-launcher"], "OMPI_MCA_plm_rsh_agent"), "/etc/mpi/kubexec.sh");
  EXPECT_EQ(PodEnv(pods["mpi-launcher"], "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
  EXPECT_EQ(pods["mpi-launcher"]["metadata"]["labels"].value("training.kubeflow.org/job-role", ""),
            "master");
  CheckSucceeded("MPIJob", "mpi", {{"Launcher", 1}});
}

// A name is unique per kind, not across kinds: a PyTorchJob and a TFJob both named "same" in
// one namespace are two jobs, each reconciled on its own (the operator keys its work by kind
// too) with its own pods, events and conditions. Their replica types differ: pods are named
// <job>-<type>-<i> (as upstream), so a Worker in both would be one pod name.
TEST_F(KindsTest, SameNameInTwoKinds) {
  const std::vector<Replica> pt = {{"Master", 1, "0"}};
  const std::vector<Replica> tf = {{"Worker", 1, "0"}};
  Apply(Job("PyTorchJob", "same", pt));
  Apply(Job("TFJob", "same", tf));
  std::map<std::string, json> pods;
  EXPECT_TRUE(Eventually(
      [&] {
        pods.clear();
        for (const json& p : JobPods("same")) pods[p["metadata"]["name"]] = p;
        return pods.size() == 2;
      },
      absl::Seconds(60), kKubectlPoll))
      << "pods: " << pods.size();
  ASSERT_EQ(pods.count("same-master-0"), 1u);
  ASSERT_EQ(pods.count("same-worker-0"), 1u);
  EXPECT_EQ(pods["same-master-0"]["metadata"]["ownerReferences"][0].value("kind", ""),
            "PyTorchJob");
  EXPECT_EQ(pods["same-worker-0"]["metadata"]["ownerReferences"][0].value("kind", ""), "TFJob");
  std::optional<json> pt_job = WaitCondition("pytorchjobs", "same", "Succeeded");
  std::optional<json> tf_job = WaitCondition("tfjobs", "same", "Succeeded");
  ASSERT_TRUE(pt_job && tf_job);
  EXPECT_EQ(Condition(*pt_job, "Succeeded").value("reason", ""), "PyTorchJobSucceeded");
  EXPECT_EQ(Condition(*tf_job, "Succeeded").value("reason", ""), "TFJobSucceeded");
  // Each job's events are on its own object.
  EXPECT_TRUE(Eventually(
      [&] {
        std::set<std::string> kinds;
        for (const json& e : List("events")) {
          const json& o = e["involvedObject"];
          if (o.value("name", "") == "same") kinds.insert(o.value("kind", ""));
        }
        return kinds == std::set<std::string>{"PyTorchJob", "TFJob"};
      },
      absl::Seconds(30), kKubectlPoll));
  // Never read through the plain name, which names neither job.
  EXPECT_FALSE(absl::StrContains(op().Log(), absl::StrCat("job ", ns(), "/same exists as")))
      << op().Log();
}

}  // namespace
}  // namespace coach::e2e::kube
