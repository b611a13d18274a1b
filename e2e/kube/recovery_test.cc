// Whole-job recovery (docs/recovery.md) of coach-operator --backend=kube on a real control
// plane: a lost node and a retryable exit under coach.dev/restart-scope: Job, and the same
// situation for a job without the annotations (upstream's per-pod behaviour).
//
// The lost node is a Node of the test's own. kwok cannot lose one of its nodes: its
// node-initialize stage writes Ready=True back within seconds over a Ready=False or Unknown, and
// it goes on managing a node whose kwok.x-k8s.io/node annotation was removed. So the test plays
// the kubelet of a Node without that annotation: it writes the pod scheduled there Running, then
// the node's Ready=False, both through the status subresource, as a kubelet that reports itself
// broken would. As on a node whose kubelet is gone, a pod deleted there stays Terminating
// (tools/testenv/pod_finalizer.py leaves it) until something deletes it with grace period 0:
// here the operator, after --lost-node-grace. The other replicas run on kwok's nodes; kwok fails
// a pod when the test annotates the live pod with coach.test/exit-code (stages/pod-exit.yaml).

#include <sys/types.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "e2e/common/child_process.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// Short, so that the test waits seconds, not the default 2 minutes.
constexpr absl::Duration kLostNodeGrace = absl::Seconds(5);
// The label and NoSchedule taint of a test's own node: only the replica that tolerates the taint
// (and prefers the label) lands there.
constexpr char kTestNodeKey[] = "coach.test/lost-node";

absl::Time ParseTime(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return absl::InfinitePast();
  return t;
}

std::string Now() { return absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone()); }

// The pod's coach.dev/attempt label; -1 without it.
int Attempt(const json& pod) {
  const json& labels = pod["metadata"].value("labels", json::object());
  int attempt = -1;
  if (!labels.contains("coach.dev/attempt") ||
      !absl::SimpleAtoi(labels["coach.dev/attempt"].get<std::string>(), &attempt)) {
    return -1;
  }
  return attempt;
}

bool Deleting(const json& pod) { return pod["metadata"].contains("deletionTimestamp"); }

// The events of a namespace's pods, in the API server's order, from one watch by a kubectl that
// runs beside the test: a DELETED before an ADDED in it happened before it in etcd.
class PodWatch {
 public:
  PodWatch(const ControlPlane& cp, const std::string& ns, std::string out) : out_(std::move(out)) {
    unlink(out_.c_str());
    pid_ = Spawn(
        cp.KubectlArgv({"get", "--raw", absl::StrCat("/api/v1/namespaces/", ns, "/pods?watch=1")}),
        ChildEnv({}, {"COACH_", "KUBECONFIG="}), "", out_, out_ + ".err",
        /*die_with_parent=*/true);
  }
  ~PodWatch() { Stop(); }

  // The events so far, one JSON object a line (a line still being written is left out).
  std::vector<json> Events() const {
    std::vector<json> out;
    for (absl::string_view line : absl::StrSplit(ReadFileOrEmpty(out_), '\n', absl::SkipEmpty())) {
      json e = json::parse(line, nullptr, false);
      if (!e.is_discarded() && e.contains("object")) out.push_back(std::move(e));
    }
    return out;
  }
  void Stop() {
    if (pid_ > 0) KillAndReap(pid_);
    pid_ = -1;
  }

 private:
  std::string out_;
  pid_t pid_ = -1;
};

class RecoveryTest : public KubeTest {
 protected:
  static void SetUpTestSuite() {
    OperatorArgs().push_back(
        absl::StrCat("--lost-node-grace=", absl::ToInt64Seconds(kLostNodeGrace), "s"));
    KubeTest::SetUpTestSuite();
  }

  void TearDown() override {
    // The node first: a pod still bound to it would stay Terminating with the namespace.
    for (const std::string& node : nodes_) Kubectl({"delete", "node", node, "--wait=false"});
    KubeTest::TearDown();
  }

  static json ReadyCondition(const std::string& status, const std::string& reason,
                             const std::string& message) {
    const std::string now = Now();
    return {{"type", "Ready"},    {"status", status},         {"reason", reason},
            {"message", message}, {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
  }

  // A Ready Node that kwok does not manage (no kwok.x-k8s.io/node annotation), labelled and
  // tainted kTestNodeKey=<name>, deleted at the end of the test. Only a pod that tolerates the
  // taint is scheduled there, and it runs when PlayKubelet says.
  std::string MakeTestNode() {
    const std::string name = ns() + "-node";
    const json resources = {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}};
    const json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata",
         {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {kTestNodeKey, name}}}}},
        {"spec",
         {{"taints",
           json::array({{{"key", kTestNodeKey}, {"value", name}, {"effect", "NoSchedule"}}})}}},
        {"status",
         {{"allocatable", resources},
          {"capacity", resources},
          {"conditions",
           json::array({ReadyCondition("True", "KubeletReady",
                                       "the e2e test plays this node's kubelet")})}}}};
    CmdResult r = Kubectl({"create", "-f", "-"}, node.dump());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nodes_.push_back(name);
    // A new Node gets the not-ready taint at admission (TaintNodesByCondition); the node
    // lifecycle controller lifts it once it reads Ready=True. Before that, nothing lands here.
    EXPECT_TRUE(Eventually(
        [&] {
          CmdResult t = Kubectl({"get", "node", name, "-o", "jsonpath={.spec.taints[*].key}"});
          return t.exit_code == 0 && absl::StripAsciiWhitespace(t.out) == kTestNodeKey;
        },
        absl::Seconds(30), kKubectlPoll))
        << "the test's node " << name << " kept a taint other than " << kTestNodeKey;
    return name;
  }

  // The node's Ready condition False, as its kubelet would write it before it stops.
  void MakeNotReady(const std::string& node) {
    const json patch = {
        {"status",
         {{"conditions", json::array({ReadyCondition("False", "KubeletNotReady",
                                                     "coach e2e: the node's kubelet is gone")})}}}};
    CmdResult r = Kubectl(
        {"patch", "node", node, "--subresource=status", "--type=strategic", "-p", patch.dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // What a kubelet writes of a pod it started: what kwok's stages/pod-ready.yaml writes on its
  // own nodes.
  // Waits until the job's Master is scheduled, expects it on `node` (the test's own, which no
  // kubelet runs) and plays that node's kubelet for it. The pod as first seen scheduled; nullopt
  // (with the failure recorded) when it is not scheduled, or elsewhere.
  std::optional<json> MasterRunningOn(const std::string& job, const std::string& node) {
    json master;
    const bool scheduled = Eventually(
        [&] {
          std::optional<json> p = Get("pod", job + "-master-0");
          if (!p || (*p)["spec"].value("nodeName", "").empty()) return false;
          master = *p;
          return true;
        },
        absl::Seconds(60), kKubectlPoll);
    if (!scheduled) {
      ADD_FAILURE() << job << "-master-0 was not scheduled\n" << OperatorLogTail();
      return std::nullopt;
    }
    if (master["spec"].value("nodeName", "") != node) {
      ADD_FAILURE() << job << "-master-0 is not on " << node << ": " << master.dump();
      return std::nullopt;
    }
    PlayKubelet(master);
    return master;
  }

  void PlayKubelet(const json& pod) {
    const std::string now = Now();
    json containers = json::array();
    for (const json& c : pod["spec"]["containers"]) {
      containers.push_back({{"name", c["name"]},
                            {"image", c["image"]},
                            {"imageID", ""},
                            {"ready", true},
                            {"started", true},
                            {"restartCount", 0},
                            {"state", {{"running", {{"startedAt", now}}}}}});
    }
    json conditions = json::array();
    for (const char* type : {"Initialized", "Ready", "ContainersReady"}) {
      conditions.push_back({{"type", type}, {"status", "True"}, {"lastTransitionTime", now}});
    }
    const json patch = {{"status",
                         {{"phase", "Running"},
                          {"startTime", now},
                          {"conditions", conditions},
                          {"containerStatuses", containers}}}};
    CmdResult r = Kubectl({"patch", "pod", pod["metadata"]["name"].get<std::string>(), "-n", ns(),
                           "--subresource=status", "--type=strategic", "-p", patch.dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The containers of a running pod on a kwok node exit with `code` at once.
  void KwokFail(const std::string& pod, int code) {
    CmdResult r = Kubectl({"annotate", "pod", pod, "-n", ns(), "--overwrite",
                           absl::StrCat("coach.test/exit-code=", code)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // A PyTorchJob of 1 Master and 2 Workers (restartPolicy ExitCode) whose pods run until the
  // test fails one; `job_scoped`: coach.dev/restart-scope: Job with coach.dev/max-restarts
  // `budget`. With `node`, the Master tolerates that node's taint and prefers it.
  std::string Job(const std::string& name, bool job_scoped, int budget,
                  const std::string& node = "") {
    JobManifest m = JobManifest::PyTorch(name);
    if (job_scoped) {
      m.Annotation("coach.dev/restart-scope", "Job")
          .Annotation("coach.dev/max-restarts", absl::StrCat(budget));
    }
    m.Replicas({{"Master", 1}, {"Worker", 2}}).RestartPolicy("ExitCode");
    json job = m.Json();
    if (!node.empty()) {
      json& spec = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"];
      spec["tolerations"] = json::array({{{"key", kTestNodeKey},
                                          {"operator", "Equal"},
                                          {"value", node},
                                          {"effect", "NoSchedule"}}});
      spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array(
              {{{"weight", 100},
                {"preference",
                 {{"matchExpressions", json::array({{{"key", kTestNodeKey},
                                                     {"operator", "In"},
                                                     {"values", json::array({node})}}})}}}}});
    }
    return job.dump();
  }

  // True when the job has exactly `n` pods, each Running, not being deleted, of attempt
  // `attempt` (-1: without the label); they go to `out`.
  bool RunningPods(const std::string& job, int attempt, size_t n, std::vector<json>* out) {
    std::vector<json> pods = JobPods(job);
    if (pods.size() != n) return false;
    for (const json& p : pods) {
      if (p["status"].value("phase", "") != "Running" || Deleting(p) || Attempt(p) != attempt) {
        return false;
      }
    }
    *out = std::move(pods);
    return true;
  }

  // The namespace's events with `reason` (of any object), once at least one is there.
  std::vector<json> EventsWithReason(const std::string& reason) {
    std::vector<json> found;
    Eventually(
        [&] {
          found.clear();
          for (const json& e : List("events")) {
            if (e.value("reason", "") == reason) found.push_back(e);
          }
          return !found.empty();
        },
        absl::Seconds(30), kKubectlPoll);
    return found;
  }

  std::vector<std::string> nodes_;
};

// A replica's node goes NotReady under coach.dev/restart-scope: Job with a budget of 0: the job
// restarts as a whole without spending it (a disruption); the Master's pod, Terminating on the
// lost node, is force-deleted after --lost-node-grace; attempt 1 starts only once every pod of
// attempt 0 is gone.
TEST_F(RecoveryTest, LostNodeRestartsTheWholeJobWithoutSpendingTheBudget) {
  const std::string node = MakeTestNode();
  Apply(Job("lost", true, 0, node));
  std::optional<json> master = MasterRunningOn("lost", node);
  ASSERT_TRUE(master.has_value());
  std::vector<json> first;
  ASSERT_TRUE(Eventually([&] { return RunningPods("lost", 0, 3, &first); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  std::set<std::string> first_uids;
  for (const json& p : first) {
    first_uids.insert(p["metadata"]["uid"].get<std::string>());
    EXPECT_EQ(PodEnv(p, "COACH_ATTEMPT"), "0") << p["metadata"]["name"];
    if (p["metadata"]["name"] != "lost-master-0") {
      EXPECT_NE(p["spec"].value("nodeName", ""), node) << "only the Master tolerates the node";
    }
  }
  const std::string master_uid = (*master)["metadata"]["uid"];

  PodWatch watch(cp(), ns(), absl::StrCat(TestTmpDir(), "/", ns(), "-pods.watch"));
  // The watch's first events (the pods there) say it is established.
  ASSERT_TRUE(
      Eventually([&] { return watch.Events().size() >= 3; }, absl::Seconds(30), kKubectlPoll));

  const absl::Time lost_at = absl::Now();
  MakeNotReady(node);
  std::optional<json> j = WaitCondition("pytorchjobs", "lost", "Restarting", absl::Seconds(60));
  ASSERT_TRUE(j) << OperatorLogTail();
  const absl::Duration to_restarting = absl::Now() - lost_at;
  const std::string message = Condition(*j, "Restarting").value("message", "");
  EXPECT_TRUE(absl::StrContains(message, "Master replica 0 lost its node")) << message;
  EXPECT_TRUE(absl::StrContains(message, "not counted")) << message;
  EXPECT_TRUE(absl::StrContains(message, "attempt 1")) << message;
  {
    const json coach = (*j)["status"].value("coach", json::object());
    EXPECT_EQ(coach.value("attempt", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("disruptions", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("restarts", 0), 0) << coach.dump();
  }

  // The Master's pod: Terminating on the lost node (no kubelet confirms its deletion) until the
  // operator force-deletes it, --lost-node-grace after the deletion was asked for.
  absl::Time requested = absl::InfinitePast();
  ASSERT_TRUE(Eventually(
      [&] {
        std::optional<json> p = Get("pod", "lost-master-0");
        if (!p || (*p)["metadata"].value("uid", "") != master_uid) return true;
        if (Deleting(*p)) {
          requested = ParseTime((*p)["metadata"].value("deletionTimestamp", "")) -
                      absl::Seconds((*p)["metadata"].value("deletionGracePeriodSeconds", 0));
        }
        return false;
      },
      absl::Seconds(60), kKubectlPoll))
      << "the Master's pod of attempt 0 is still there\n"
      << OperatorLogTail();
  const absl::Time gone_at = absl::Now();
  ASSERT_NE(requested, absl::InfinitePast()) << "the Master's pod was never seen Terminating";
  // deletionTimestamp has whole seconds.
  EXPECT_GE(gone_at - requested, kLostNodeGrace - absl::Seconds(1));

  std::vector<json> second;
  ASSERT_TRUE(Eventually([&] { return RunningPods("lost", 1, 3, &second); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  const absl::Duration to_running = absl::Now() - lost_at;
  for (const json& p : second) {
    EXPECT_EQ(first_uids.count(p["metadata"]["uid"].get<std::string>()), 0u);
    EXPECT_EQ(PodEnv(p, "COACH_ATTEMPT"), "1") << p["metadata"]["name"];
    EXPECT_NE(p["spec"].value("nodeName", ""), node) << p["metadata"]["name"];
  }
  std::fprintf(stderr,
               "[kube-e2e] lost node: Restarting %s after NotReady; the Master's pod force-deleted "
               "%s after its deletion (grace %s); attempt 1 Running %s after NotReady\n",
               absl::FormatDuration(to_restarting).c_str(),
               absl::FormatDuration(gone_at - requested).c_str(),
               absl::FormatDuration(kLostNodeGrace).c_str(),
               absl::FormatDuration(to_running).c_str());

  // In the watch's order: no pod of attempt 1 was created while one of attempt 0 was there.
  watch.Stop();
  std::map<std::string, std::string> present;  // uid -> "name (attempt n)"
  std::map<std::string, int> attempts;         // uid -> attempt
  bool master_deleted = false;
  int created_later = 0;
  for (const json& e : watch.Events()) {
    const json& pod = e["object"];
    const std::string uid = pod["metadata"].value("uid", "");
    const std::string type = e.value("type", "");
    if (type == "DELETED") {
      present.erase(uid);
      attempts.erase(uid);
      if (uid == master_uid) master_deleted = true;
      continue;
    }
    if (type == "ADDED" && Attempt(pod) == 1) {
      ++created_later;
      for (const auto& [other, attempt] : attempts) {
        EXPECT_NE(attempt, 0) << pod["metadata"]["name"] << " of attempt 1 was created while "
                              << present[other] << " was still there";
      }
    }
    present[uid] = absl::StrCat(pod["metadata"].value("name", ""), " (attempt ", Attempt(pod), ")");
    attempts[uid] = Attempt(pod);
  }
  EXPECT_TRUE(master_deleted) << "the watch did not see the Master's pod of attempt 0 go";
  EXPECT_EQ(created_later, 3) << "the watch did not see the 3 pods of attempt 1 created";

  j = Get("pytorchjobs", "lost");
  ASSERT_TRUE(j);
  EXPECT_FALSE(HasCondition(*j, "Failed")) << (*j)["status"].dump();
  {
    const json coach = (*j)["status"].value("coach", json::object());
    EXPECT_EQ(coach.value("attempt", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("disruptions", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("restarts", 0), 0) << coach.dump();
  }

  bool normal_restarting = false;
  for (const json& e : EventsWithReason("PyTorchJobRestarting")) {
    const std::string m = e.value("message", "");
    EXPECT_EQ(e.value("type", ""), "Normal") << m;
    normal_restarting = normal_restarting || (absl::StrContains(m, "lost its node") &&
                                              absl::StrContains(m, "not counted"));
  }
  EXPECT_TRUE(normal_restarting) << "no Normal Restarting event about the lost node";
  std::vector<json> forced = EventsWithReason("ForceDeletePod");
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0].value("type", ""), "Warning");
  EXPECT_TRUE(absl::StrContains(forced[0].value("message", ""), "lost-master-0"))
      << forced[0].dump();
}

// A retryable exit (137 under ExitCode) of one replica under restart-scope Job with a budget of
// 1: one counted restart of every replica; the next one finds the budget spent and fails the
// job, saying so.
TEST_F(RecoveryTest, RetryableExitIsACountedRestartUntilTheBudgetIsSpent) {
  Apply(Job("exit", true, 1));
  std::vector<json> first;
  ASSERT_TRUE(Eventually([&] { return RunningPods("exit", 0, 3, &first); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  std::set<std::string> first_uids;
  for (const json& p : first) first_uids.insert(p["metadata"]["uid"].get<std::string>());

  const absl::Time failed_at = absl::Now();
  KwokFail("exit-worker-1", 137);
  std::vector<json> second;
  ASSERT_TRUE(Eventually([&] { return RunningPods("exit", 1, 3, &second); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  std::fprintf(stderr, "[kube-e2e] exit 137: attempt 1 Running %s after the failure\n",
               absl::FormatDuration(absl::Now() - failed_at).c_str());
  for (const json& p : second) {
    EXPECT_EQ(first_uids.count(p["metadata"]["uid"].get<std::string>()), 0u)
        << p["metadata"]["name"] << " is a pod of attempt 0";
  }
  std::optional<json> j = Get("pytorchjobs", "exit");
  ASSERT_TRUE(j);
  {
    const json coach = (*j)["status"].value("coach", json::object());
    EXPECT_EQ(coach.value("attempt", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("restarts", 0), 1) << coach.dump();
    EXPECT_EQ(coach.value("disruptions", 0), 0) << coach.dump();
    EXPECT_EQ(coach.value("restartsByType", json::object()).value("Worker", 0), 1) << coach.dump();
  }
  bool counted = false;
  for (const json& e : EventsWithReason("PyTorchJobRestarting")) {
    const std::string m = e.value("message", "");
    EXPECT_EQ(e.value("type", ""), "Warning") << m;
    counted = counted || (absl::StrContains(m, "attempt 1, restart 1 of 1") &&
                          absl::StrContains(m, "Worker replica 1 exited with code 137"));
  }
  EXPECT_TRUE(counted) << "no Warning Restarting event counting restart 1 of 1";

  KwokFail("exit-worker-0", 137);
  j = WaitCondition("pytorchjobs", "exit", "Failed");
  ASSERT_TRUE(j) << OperatorLogTail();
  const std::string message = Condition(*j, "Failed").value("message", "");
  EXPECT_TRUE(absl::StrContains(message, "Worker replica 0 exited with code 137")) << message;
  EXPECT_TRUE(absl::StrContains(message, "its restart budget (1) is spent")) << message;
  const json coach = (*j)["status"].value("coach", json::object());
  EXPECT_EQ(coach.value("attempt", 0), 1) << coach.dump();
  EXPECT_EQ(coach.value("restarts", 0), 1) << coach.dump();
  for (const json& p : JobPods("exit")) {
    EXPECT_LE(Attempt(p), 1) << p["metadata"]["name"] << " of a failed job";
  }
}

// With coach.dev/max-restarts: "0" the first retryable exit fails the job: no attempt 1.
TEST_F(RecoveryTest, BudgetZeroFailsOnTheFirstRetryableExit) {
  Apply(Job("zero", true, 0));
  std::vector<json> first;
  ASSERT_TRUE(Eventually([&] { return RunningPods("zero", 0, 3, &first); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  KwokFail("zero-master-0", 137);
  std::optional<json> j = WaitCondition("pytorchjobs", "zero", "Failed");
  ASSERT_TRUE(j) << OperatorLogTail();
  const std::string message = Condition(*j, "Failed").value("message", "");
  EXPECT_TRUE(absl::StrContains(message, "Master replica 0 exited with code 137")) << message;
  EXPECT_TRUE(absl::StrContains(message, "its restart budget (0) is spent")) << message;
  const json coach = (*j)["status"].value("coach", json::object());
  EXPECT_EQ(coach.value("attempt", 0), 0) << coach.dump();
  EXPECT_EQ(coach.value("restarts", 0), 0) << coach.dump();
  for (const json& p : JobPods("zero")) {
    EXPECT_EQ(Attempt(p), 0) << p["metadata"]["name"] << " of a failed job";
  }
}

// The same situation without the annotations: upstream's behaviour. The Master's node goes
// NotReady and Worker 1 exits with 137: only Worker 1's pod is recreated; the Master's pod stays
// (upstream leaves it to the taint-based eviction, minutes later), nothing carries an attempt.
TEST_F(RecoveryTest, WithoutTheAnnotationsOnlyTheFailedPodIsRecreated) {
  const std::string node = MakeTestNode();
  Apply(Job("upstream", false, 0, node));
  std::optional<json> master = MasterRunningOn("upstream", node);
  ASSERT_TRUE(master.has_value());
  std::vector<json> pods;
  ASSERT_TRUE(Eventually([&] { return RunningPods("upstream", -1, 3, &pods); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  const std::map<std::string, std::string> before = PodUids("upstream");

  MakeNotReady(node);
  // The node controllers saw it (the not-ready taint); the operator's node watch sees the same.
  ASSERT_TRUE(Eventually(
      [&] {
        CmdResult r = Kubectl({"get", "node", node, "-o", "jsonpath={.spec.taints[*].key}"});
        return absl::StrContains(r.out, "node.kubernetes.io/not-ready");
      },
      absl::Seconds(30), kKubectlPoll));
  KwokFail("upstream-worker-1", 137);
  ASSERT_TRUE(Eventually(
      [&] {
        std::optional<json> p = Get("pod", "upstream-worker-1");
        return p && (*p)["metadata"].value("uid", "") != before.at("upstream-worker-1") &&
               (*p)["status"].value("phase", "") == "Running";
      },
      absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();

  std::map<std::string, std::string> after = PodUids("upstream");
  EXPECT_EQ(after.size(), 3u);
  EXPECT_EQ(after["upstream-master-0"], before.at("upstream-master-0"));
  EXPECT_EQ(after["upstream-worker-0"], before.at("upstream-worker-0"));
  for (const json& p : JobPods("upstream")) {
    EXPECT_FALSE(Deleting(p)) << p["metadata"]["name"];
    EXPECT_EQ(Attempt(p), -1) << p["metadata"]["name"];
    EXPECT_EQ(PodEnv(p, "COACH_ATTEMPT"), "") << p["metadata"]["name"];
  }
  std::optional<json> j = Get("pytorchjobs", "upstream");
  ASSERT_TRUE(j);
  EXPECT_FALSE(HasCondition(*j, "Failed")) << (*j)["status"].dump();
  // coach's own status holds the attempt timeline alone: one attempt, no restarts counted.
  const json& coach = (*j)["status"]["coach"];
  EXPECT_EQ(coach.value("attempt", 0), 0) << coach.dump();
  EXPECT_FALSE(coach.contains("restarts")) << coach.dump();
  ASSERT_EQ(coach["attempts"].size(), 1u) << coach.dump();
  for (const json& e : List("events")) EXPECT_NE(e.value("reason", ""), "ForceDeletePod");
}

}  // namespace
}  // namespace coach::e2e::kube
