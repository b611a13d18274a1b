// Control-plane benchmark of coach-operator --backend=kube on a real API server (figures,
// not a test; see bench/README.md, section bench/controlplane).
//
// speed: N PyTorchJobs (1 Master + R-1 Workers) are POSTed at once by the harness (an
//   unlimited parallel client); the clock runs from the first POST until a watch on the
//   namespace has seen every pod and every headless service (N*R each). The operator's CPU
//   (utime+stime from /proc) is taken over the same span: the submission is done by the
//   harness, so it is in the wall time but not in the operator's CPU. Baseline in the same
//   run: the pods and services the operator created are captured, the namespace deleted,
//   and the same bodies POSTed into a fresh namespace by --client-threads threads with no
//   rate limit (the API server's own limit), timed the same way (watch saw them all).
//   Operator runs: default settings (no flags: --kube-api-qps auto, lifted once the server shows
//   API Priority and Fairness; Events on their own --kube-event-qps budget) and, unless
//   --compare-qps 0, with upstream's fixed client-side limit (--kube-api-qps 20 --kube-api-burst
//   30).
// trainjob (--only trainjob, bench/upstream/run.sh --kind trainjob): N TrainJobs of R nodes on
//   upstream's torch-distributed runtime, coach against upstream Trainer v2 + JobSet, the clock
//   from the first POST until every pod and each TrainJob's headless service was seen.
// memory: peak RSS of a fresh operator that owns --memory-jobs jobs (a) on an otherwise empty
//   cluster, (b) on a cluster holding --unrelated ConfigMaps and as many Pods without coach's
//   labels (created before the operator starts), (c) owning --unrelated pods' worth of jobs
//   itself (U/R jobs of R replicas: U pods + U services).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/controlplane/installation.h"
#include "bench/controlplane/operator_under_test.h"
#include "bench/local/bench_util.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace {

using json = nlohmann::json;
namespace k8s = coach::kubeclient;
namespace res = coach::kubeclient::resources;
namespace bench = coach::bench;
using bench::Installation;
using bench::LoadAverage;
using bench::OperatorConfig;
using bench::OperatorKind;
using bench::StartOperator;

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// kube-apiserver's apiserver_request_total summed by "VERB group/resource/subresource"
// (watches left out): what every client sent, the operator's share is in the resources
// only it writes (pods, services, events, pytorchjobs).
std::map<std::string, double> ApiRequests(k8s::RestKubeClient* client) {
  std::map<std::string, double> out;
  k8s::HttpRequest req;
  req.path = "/metrics";
  auto r = client->Do(req);
  if (!r.ok()) return out;
  std::istringstream in(r->body);
  std::string line;
  auto label = [](const std::string& l, const std::string& name) {
    const std::string key = name + "=\"";
    size_t at = l.find("," + key);
    if (at == std::string::npos) at = l.find("{" + key);
    if (at == std::string::npos) return std::string();
    at += key.size() + 1;
    return l.substr(at, l.find('"', at) - at);
  };
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "apiserver_request_total{")) continue;
    const std::string verb = label(line, "verb");
    if (verb == "WATCH") continue;
    std::string what = absl::StrCat(verb, " ", label(line, "resource"));
    const std::string group = label(line, "group");
    if (!group.empty()) what = absl::StrCat(verb, " ", label(line, "resource"), ".", group);
    const std::string sub = label(line, "subresource");
    if (!sub.empty()) absl::StrAppend(&what, "/", sub);
    out[what] += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

std::string RequestDelta(const std::map<std::string, double>& before,
                         const std::map<std::string, double>& after) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    const double d = v - (it == before.end() ? 0 : it->second);
    if (d >= 1 && (absl::StrContains(k, "pods") || absl::StrContains(k, "services") ||
                   absl::StrContains(k, "events") || absl::StrContains(k, "jobs") ||
                   absl::StrContains(k, "endpoint"))) {
      rows.push_back({d, k});
    }
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string s;
  for (const auto& [d, k] : rows)
    absl::StrAppend(&s, s.empty() ? "" : ", ", k, " ", static_cast<int64_t>(d));
  return s;
}

// CPU seconds (utime+stime) of the test control plane's processes, from the pid files that
// tools/testenv writes next to the kubeconfig.
struct ControlPlaneCpu {
  double apiserver = 0, etcd = 0, scheduler = 0, controller_manager = 0, kwok = 0;
};

// The process's CPU and memory; zeros when it cannot be read (it is gone).
bench::ProcUsage ReadUsage(pid_t pid) {
  return bench::ReadProcUsage(pid).value_or(bench::ProcUsage{});
}

// The operator's CPU and memory, added up over its processes.
bench::ProcUsage UsageOf(const bench::OperatorUnderTest& op) {
  bench::ProcUsage sum;
  for (const pid_t pid : op.pids()) {
    const bench::ProcUsage u = ReadUsage(pid);
    sum.cpu_seconds += u.cpu_seconds;
    sum.vm_hwm_kb += u.vm_hwm_kb;
    sum.vm_rss_kb += u.vm_rss_kb;
  }
  return sum;
}

// Sum of every series of a Prometheus metric (name exactly) whose labels contain `series`
// ("": every series).
double MetricSum(const std::string& text, const std::string& name, const std::string& series = "") {
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name)) continue;
    const absl::string_view rest = line.substr(name.size());
    if (rest.empty() || (rest[0] != ' ' && rest[0] != '{')) continue;
    if (!series.empty() && !absl::StrContains(rest.substr(0, rest.rfind(' ')), series)) continue;
    const size_t space = line.rfind(' ');
    double v = 0;
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) sum += v;
  }
  return sum;
}

// Counts the distinct objects a watch on one namespace has seen (ADDED or MODIFIED; with
// `counts`, only in a state it accepts), and when the count first reached `target`.
class Counter {
 public:
  Counter(k8s::KubeClient* client, k8s::ResourceDescriptor resource, std::string ns, size_t target,
          std::function<bool(const json&)> counts = nullptr)
      : client_(client),
        resource_(std::move(resource)),
        ns_(std::move(ns)),
        target_(target),
        counts_(std::move(counts)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Counter() {
    stop_ = true;
    thread_.join();
  }
  size_t count() {
    std::lock_guard<std::mutex> l(mu_);
    return names_.size();
  }
  double reached_at() {
    std::lock_guard<std::mutex> l(mu_);
    return reached_at_;
  }
  // When the first object, and half of the target, were seen (0: not yet).
  double first_at() {
    std::lock_guard<std::mutex> l(mu_);
    return first_at_;
  }
  double half_at() {
    std::lock_guard<std::mutex> l(mu_);
    return half_at_;
  }

 private:
  void Run() {
    while (!stop_) {
      k8s::WatchOptions wo;
      wo.stop = &stop_;
      absl::Status s = client_->Watch(resource_, ns_, wo, [this](const k8s::WatchEvent& e) {
        if ((e.type == k8s::WatchEventType::kAdded || e.type == k8s::WatchEventType::kModified) &&
            (!counts_ || counts_(e.object))) {
          std::lock_guard<std::mutex> l(mu_);
          names_.insert(e.object["metadata"].value("name", ""));
          if (first_at_ == 0) first_at_ = NowS();
          if (half_at_ == 0 && 2 * names_.size() >= target_) half_at_ = NowS();
          if (reached_at_ == 0 && names_.size() >= target_) reached_at_ = NowS();
        }
        return !stop_.load();
      });
      if (!stop_ && !s.ok()) usleep(200 * 1000);
    }
  }
  k8s::KubeClient* client_;
  k8s::ResourceDescriptor resource_;
  std::string ns_;
  size_t target_;
  std::function<bool(const json&)> counts_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::set<std::string> names_;
  double reached_at_ = 0;
  double first_at_ = 0;
  double half_at_ = 0;
  std::thread thread_;
};

struct Item {
  k8s::ResourceDescriptor resource;
  json body;
};

// POSTs every item into ns on `threads` threads; returns the number that failed (the first
// errors are printed). Unavailable/ResourceExhausted are retried.
int CreateAll(k8s::KubeClient* client, const std::string& ns, const std::vector<Item>& items,
              int threads, std::vector<json>* created = nullptr) {
  if (created != nullptr) created->assign(items.size(), json());
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < items.size(); i = next++) {
        for (int attempt = 0;; ++attempt) {
          auto r = client->Create(items[i].resource, ns, items[i].body);
          if (r.ok() && created != nullptr) (*created)[i] = std::move(r).value();
          if (r.ok() || r.status().code() == absl::StatusCode::kAlreadyExists) break;
          const bool retry = (r.status().code() == absl::StatusCode::kUnavailable ||
                              r.status().code() == absl::StatusCode::kResourceExhausted) &&
                             attempt < 20;
          if (!retry) {
            if (failed++ < 3) std::cerr << "create: " << r.status() << "\n";
            break;
          }
          usleep(50 * 1000);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return failed.load();
}

absl::Status CreateNamespace(k8s::KubeClient* client, const std::string& ns) {
  json body = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  auto r = client->Create(res::Namespaces(), "", body);
  return r.ok() ? absl::OkStatus() : r.status();
}

// Deletes the namespace and waits until it is gone; returns the seconds it took.
double DeleteNamespace(k8s::KubeClient* client, const std::string& ns) {
  const double t0 = NowS();
  (void)client->Delete(res::Namespaces(), "", ns, {});
  for (int i = 0; i < 3000; ++i) {
    auto g = client->Get(res::Namespaces(), "", ns);
    if (!g.ok() && g.status().code() == absl::StatusCode::kNotFound) return NowS() - t0;
    usleep(100 * 1000);
  }
  std::cerr << "namespace " << ns << " still there after 300 s\n";
  return NowS() - t0;
}

ControlPlaneCpu ReadControlPlaneCpu(const std::string& testenv_dir) {
  ControlPlaneCpu c;
  for (const char* name :
       {"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok"}) {
    std::ifstream in(absl::StrCat(testenv_dir, "/pids/", name));
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    const double cpu = ReadUsage(pid).cpu_seconds;
    const std::string n = name;
    (n == "kube-apiserver"   ? c.apiserver
     : n == "etcd"           ? c.etcd
     : n == "kube-scheduler" ? c.scheduler
     : n == "kwok"           ? c.kwok
                             : c.controller_manager) += cpu;
  }
  return c;
}

ControlPlaneCpu operator-(const ControlPlaneCpu& a, const ControlPlaneCpu& b) {
  return {a.apiserver - b.apiserver, a.etcd - b.etcd, a.scheduler - b.scheduler,
          a.controller_manager - b.controller_manager, a.kwok - b.kwok};
}

json Container() {
  return {{"name", "pytorch"},
          {"image", "docker.io/pytorch/pytorch:2.3.0"},
          {"command", {"sleep", "infinity"}},
          {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}};
}

// Unless `schedule`, the pods name a scheduler that does not exist: they stay Pending and
// unbound, so neither kube-scheduler nor kwok works on them inside the measurement.
constexpr char kNoScheduler[] = "coach-bench-unscheduled";

json PyTorchJob(const std::string& ns, const std::string& name, int replicas, bool schedule) {
  json tmpl = {{"spec", {{"containers", {Container()}}}}};
  if (!schedule) tmpl["spec"]["schedulerName"] = kNoScheduler;
  json specs = {{"Master", {{"replicas", 1}, {"restartPolicy", "OnFailure"}, {"template", tmpl}}}};
  if (replicas > 1)
    specs["Worker"] = {
        {"replicas", replicas - 1}, {"restartPolicy", "OnFailure"}, {"template", tmpl}};
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"pytorchReplicaSpecs", specs}}}};
}

std::vector<Item> Jobs(const std::string& ns, int jobs, int replicas, bool schedule) {
  std::vector<Item> items;
  for (int j = 0; j < jobs; ++j) {
    items.push_back({res::Kubeflow("pytorchjobs", "PyTorchJob"),
                     PyTorchJob(ns, absl::StrFormat("job-%04d", j), replicas, schedule)});
  }
  return items;
}

// A TrainJob of `nodes` trainer pods on upstream's torch-distributed runtime, or, unless
// `schedule`, on bench/upstream/run.sh's copy of it whose pods name the scheduler that does not
// exist (kNoScheduler; upstream's runtimePatches cannot set a pod's schedulerName).
json TrainJob(const std::string& ns, const std::string& name, int nodes, bool schedule) {
  const std::string runtime = schedule ? "torch-distributed" : "torch-distributed-unscheduled";
  return {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
          {"kind", "TrainJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"runtimeRef", {{"name", runtime}}},
            {"trainer", {{"numNodes", nodes}, {"command", {"sleep", "infinity"}}}}}}};
}

std::vector<Item> TrainJobItems(const std::string& ns, int jobs, int nodes, bool schedule) {
  std::vector<Item> items;
  for (int j = 0; j < jobs; ++j) {
    items.push_back(
        {bench::TrainJobs(), TrainJob(ns, absl::StrFormat("job-%04d", j), nodes, schedule)});
  }
  return items;
}

// A created object -> the body to create it again elsewhere: metadata name/labels/annotations,
// the spec without what the server or its controllers filled in (nodeName, clusterIP,
// priority, the service-account token volume); no ownerReferences (the owner is gone).
json Recreatable(const json& obj) {
  json out = {{"apiVersion", obj["apiVersion"]}, {"kind", obj["kind"]}};
  json meta = json::object();
  meta["name"] = obj["metadata"]["name"];
  for (const char* k : {"labels", "annotations"}) {
    if (obj["metadata"].contains(k)) meta[k] = obj["metadata"][k];
  }
  out["metadata"] = meta;
  json spec = obj["spec"];
  if (obj["kind"] == "Pod") {
    spec.erase("nodeName");
    spec.erase("priority");
    if (spec.contains("volumes")) {
      json vols = json::array();
      for (const auto& v : spec["volumes"]) {
        if (!absl::StartsWith(v.value("name", ""), "kube-api-access-")) vols.push_back(v);
      }
      spec["volumes"] = vols;
    }
    for (auto& c : spec["containers"]) {
      if (!c.contains("volumeMounts")) continue;
      json mounts = json::array();
      for (const auto& m : c["volumeMounts"]) {
        if (!absl::StartsWith(m.value("name", ""), "kube-api-access-")) mounts.push_back(m);
      }
      c["volumeMounts"] = mounts;
    }
  } else if (spec.value("clusterIP", "") != "None") {
    spec.erase("clusterIP");
    spec.erase("clusterIPs");
  }
  out["spec"] = spec;
  return out;
}

// Every item of `r` in `ns`, read 500 at a time: one unpaged answer for 16,000 pods is larger
// than the REST client accepts (64 MiB).
absl::StatusOr<std::vector<json>> ListAllPages(k8s::KubeClient* client,
                                               const k8s::ResourceDescriptor& r,
                                               const std::string& ns) {
  std::vector<json> items;
  k8s::ListOptions options;
  options.limit = 500;
  while (true) {
    auto page = client->List(r, ns, options);
    if (!page.ok()) return page.status();
    for (auto& o : page->items) items.push_back(std::move(o));
    if (page->continue_token.empty()) return items;
    options.continue_token = page->continue_token;
  }
}

// The pods and services of a namespace as create bodies, and its PyTorchJobs' statuses (items
// of resource pytorchjobs whose body is {metadata.name, status}).
std::vector<Item> Capture(k8s::KubeClient* client, const std::string& ns) {
  std::vector<Item> items;
  for (const auto& r : {res::Pods(), res::Services()}) {
    auto list = ListAllPages(client, r, ns);
    if (!list.ok()) {
      std::cerr << "list " << r.plural << ": " << list.status() << "\n";
      continue;
    }
    for (const auto& o : *list) {
      json copy = o;
      copy["apiVersion"] = "v1";
      copy["kind"] = r.kind;
      items.push_back({r, Recreatable(copy)});
    }
  }
  // Job by job, as the operator makes them: listed pods-then-services, the services would come
  // last and the controller-manager's reaction to them (Endpoints, EndpointSlices: a write each)
  // would fall after the baseline's clock stopped, while in coach's run it falls inside.
  auto job_of = [](const Item& it) {
    return it.body["metadata"]
        .value("labels", json::object())
        .value("training.kubeflow.org/job-name", "");
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Item& a, const Item& b) { return job_of(a) < job_of(b); });
  const auto jobs = res::Kubeflow("pytorchjobs", "PyTorchJob");
  auto list = ListAllPages(client, jobs, ns);
  if (list.ok()) {
    for (const auto& o : *list) {
      if (o.contains("status"))
        items.push_back(
            {jobs, {{"metadata", {{"name", o["metadata"]["name"]}}}, {"status", o["status"]}}});
    }
  }
  return items;
}

// Runs fn(0..n-1) on `threads` threads.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

struct SpeedResult {
  bool ok = false;
  double wall_s = 0;              // first POST -> every pod and service seen
  double submit_s = 0;            // first POST -> last POST returned
  double first_s = 0;             // first POST -> the first pod or service seen
  double half_s = 0;              // first POST -> half of the pods and half of the services seen
  double end_state_s = 0;         // first POST -> also every job's status seen (0: not measured)
  ControlPlaneCpu control_plane;  // over wall_s
  double cpu_s = 0;               // operator utime+stime over wall_s
  double cpu_settled_s = 0;
  long hwm_kb = 0;
  long rss_kb = 0;
  double ready_after = 0;
  size_t pods = 0, services = 0;
  std::string load;
  std::string requests;  // apiserver requests during the run (all clients), by verb/resource
  double passes = 0;     // the operator's reconcile passes until every object was seen
  double pass_mean_ms = 0;
  bool webhook_refused = false;  // upstream: its webhook refused the probe job at create
};

// One operator configuration of a speed comparison and its rounds.
struct Row {
  std::string name;
  OperatorKind kind;
  std::vector<std::string> extra;
  std::vector<SpeedResult> runs;
};

struct Flags {
  std::string kubeconfig;
  std::string operator_path;
  int jobs = 50;
  int replicas = 8;
  int client_threads = 32;
  double compare_qps = 20;
  int compare_burst = 30;
  int unrelated = 2000;
  int memory_jobs = 10;
  bool schedule = false;
  int rounds = 1;
  double timeout_s = 600;
  double settle_s = 5;
  std::string only;
  std::string log_dir = "/tmp";
  // --only upstream (bench/upstream/run.sh passes these):
  std::string upstream_path;                    // training-operator binary
  std::string upstream_crds;                    // its module's CRDs
  std::string coach_crds;                       // charts/coach/crds
  std::string kubectl;                          // applies either set of CRDs
  std::string upstream_webhook;                 // its ValidatingWebhookConfiguration, JSON
  int upstream_webhook_port = 0;                // the port that configuration's URLs name
  int upstream_raised_qps = 1000;               // "limits raised": --kube-api-qps
  int upstream_raised_burst = 2000;             // and --kube-api-burst
  std::string unrelated_pods = "0,2000,10000";  // memory: unrelated pods in the cluster
  // --only trainjob: bench/upstream/upstream-trainer (starts and stops Trainer and JobSet).
  std::string upstream_trainer;
  // --only trainjob: one more coach row with these flags (what limits coach's speed).
  std::vector<std::string> coach_flags;
  bool train_jobs = false;  // --only trainjob: TrainJobs instead of PyTorchJobs
  bool skip_speed = false;
  bool skip_memory = false;
};

std::string TestenvDir(const Flags& f) {
  return std::filesystem::path(f.kubeconfig).parent_path().string();
}

bool WaitFor(Counter& pods, Counter& svcs, size_t pod_target, size_t svc_target, double deadline) {
  while (NowS() < deadline) {
    if (pods.count() >= pod_target && svcs.count() >= svc_target) return true;
    usleep(20 * 1000);
  }
  return false;
}

// Operator with `extra` flags; jobs x replicas submitted into ns; the objects' bodies are
// captured into *captured when non-null.
// A job counts once its status carries a condition (coach's first status write: Created).
bool HasConditions(const json& job) {
  return job.contains("status") && job["status"].is_object() &&
         job["status"].contains("conditions") && job["status"]["conditions"].is_array() &&
         !job["status"]["conditions"].empty();
}

// The end state is reached once every pod and service was seen and every job's status too.
void EndState(Counter& pods, Counter& svcs, Counter& statuses, double t0, SpeedResult* r) {
  if (pods.reached_at() > 0 && svcs.reached_at() > 0 && statuses.reached_at() > 0) {
    r->end_state_s = std::max({pods.reached_at(), svcs.reached_at(), statuses.reached_at()}) - t0;
  }
}

void Milestones(Counter& pods, Counter& svcs, double t0, SpeedResult* r) {
  const double first = std::min(pods.first_at() > 0 ? pods.first_at() : 1e300,
                                svcs.first_at() > 0 ? svcs.first_at() : 1e300);
  r->first_s = first < 1e300 ? first - t0 : 0;
  r->half_s =
      pods.half_at() > 0 && svcs.half_at() > 0 ? std::max(pods.half_at(), svcs.half_at()) - t0 : 0;
}

// The operator under test (`kind`, with `extra` flags) owning `jobs` jobs submitted into ns by
// the harness, timed as described at the top. With an `installation` (the upstream
// comparison), the operator's own CRDs are installed first, and for upstream its validating
// webhook, checked to refuse a job it must refuse before anything is measured, and removed
// once it has stopped.
SpeedResult RunOperator(const Flags& f, k8s::RestKubeClient* client, Installation* installation,
                        OperatorKind kind, const std::string& ns,
                        const std::vector<std::string>& extra, const std::string& label, int jobs,
                        std::vector<Item>* captured) {
  SpeedResult r;
  if (installation != nullptr) {
    if (auto s = installation->UseCrds(kind); !s.ok()) {
      std::cerr << "CRDs for " << label << ": " << s << "\n";
      return r;
    }
    if (kind == OperatorKind::kUpstream) {
      if (auto s = installation->InstallWebhook(); !s.ok()) {
        std::cerr << "upstream's webhook configuration: " << s << "\n";
        return r;
      }
    }
  }
  absl::Cleanup remove_webhook = [&] {
    if (installation != nullptr && kind == OperatorKind::kUpstream) {
      if (auto s = installation->RemoveWebhook(); !s.ok()) std::cerr << "webhook: " << s << "\n";
    }
  };
  if (auto s = CreateNamespace(client, ns); !s.ok()) {
    std::cerr << "namespace " << ns << ": " << s << "\n";
    return r;
  }
  OperatorConfig config;
  config.kind = kind;
  config.binary = kind == OperatorKind::kCoach             ? f.operator_path
                  : kind == OperatorKind::kUpstreamTrainer ? f.upstream_trainer
                                                           : f.upstream_path;
  config.kubeconfig = f.kubeconfig;
  config.extra = extra;
  config.log_dir = f.log_dir;
  config.label = label;
  config.webhook_port = f.upstream_webhook_port;
  auto op = StartOperator(config, 120);
  if (!op.ok()) {
    std::cerr << op.status() << "\n";
    DeleteNamespace(client, ns);
    return r;
  }
  r.ready_after = (*op)->ready_after();
  if (installation != nullptr && kind == OperatorKind::kUpstream) {
    if (auto s = installation->ProbeWebhook(ns); !s.ok()) {
      std::cerr << "upstream's webhook: " << s << "\n";
      (*op)->Stop();
      DeleteNamespace(client, ns);
      return r;
    }
    r.webhook_refused = true;
  }
  const size_t target = static_cast<size_t>(jobs) * f.replicas;
  // A TrainJob has one headless Service (named after it); a PyTorchJob one per replica.
  const size_t svc_target = f.train_jobs ? static_cast<size_t>(jobs) : target;
  {
    Counter pods(client, res::Pods(), ns, target), svcs(client, res::Services(), ns, svc_target);
    // TrainJobs: upstream writes no condition while a job runs, so there is no end state to
    // time by the status.
    Counter statuses(client,
                     f.train_jobs ? bench::TrainJobs() : res::Kubeflow("pytorchjobs", "PyTorchJob"),
                     ns, static_cast<size_t>(jobs), HasConditions);
    usleep(300 * 1000);  // let the watches open
    const auto requests_before = ApiRequests(client);
    const bench::ProcUsage before = UsageOf(**op);
    const ControlPlaneCpu cp_before = ReadControlPlaneCpu(TestenvDir(f));
    const double t0 = NowS();
    const int failed = CreateAll(client, ns,
                                 f.train_jobs ? TrainJobItems(ns, jobs, f.replicas, f.schedule)
                                              : Jobs(ns, jobs, f.replicas, f.schedule),
                                 f.client_threads);
    r.submit_s = NowS() - t0;
    if (failed > 0) std::cerr << failed << " job POSTs failed\n";
    r.ok = WaitFor(pods, svcs, target, svc_target, t0 + f.timeout_s);
    for (const double deadline = NowS() + 30;
         !f.train_jobs && r.ok && statuses.reached_at() == 0 && NowS() < deadline;) {
      usleep(20 * 1000);
    }
    EndState(pods, svcs, statuses, t0, &r);
    const bench::ProcUsage at = UsageOf(**op);
    const std::string metrics = (*op)->Metrics();
    r.passes = MetricSum(metrics, (*op)->PassesMetric(), (*op)->PassesSeries());
    if (r.passes > 0) {
      r.pass_mean_ms =
          1000 * MetricSum(metrics, (*op)->PassSecondsMetric(), (*op)->PassesSeries()) / r.passes;
    }
    r.control_plane = ReadControlPlaneCpu(TestenvDir(f)) - cp_before;
    r.requests = RequestDelta(requests_before, ApiRequests(client));
    r.wall_s = std::max(pods.reached_at(), svcs.reached_at()) - t0;
    if (!r.ok) r.wall_s = NowS() - t0;
    Milestones(pods, svcs, t0, &r);
    r.cpu_s = at.cpu_seconds - before.cpu_seconds;
    r.pods = pods.count();
    r.services = svcs.count();
    r.load = LoadAverage();
    usleep(static_cast<useconds_t>(f.settle_s * 1e6));
    const bench::ProcUsage settled = UsageOf(**op);
    r.cpu_settled_s = settled.cpu_seconds - before.cpu_seconds;
    r.hwm_kb = settled.vm_hwm_kb;
    r.rss_kb = settled.vm_rss_kb;
  }
  if (captured != nullptr) *captured = Capture(client, ns);
  (*op)->Stop();
  std::move(remove_webhook).Invoke();
  DeleteNamespace(client, ns);
  return r;
}

SpeedResult RunCoach(const Flags& f, k8s::RestKubeClient* client, const std::string& ns,
                     const std::vector<std::string>& extra, const std::string& label, int jobs,
                     std::vector<Item>* captured) {
  return RunOperator(f, client, nullptr, OperatorKind::kCoach, ns, extra, label, jobs, captured);
}

// The tight parallel client. With `with_jobs`, the end state coach reaches (Events aside): the
// same PyTorchJobs POSTed first, then their pods and services owned by them (ownerReferences to
// the new uids, as coach sets them), then each job's status as coach wrote it (PUT /status), all
// inside the measurement; else the pods and services only.
SpeedResult RunBaseline(const Flags& f, k8s::RestKubeClient* client, const std::string& ns,
                        std::vector<Item> items, bool with_jobs) {
  SpeedResult r;
  if (auto s = CreateNamespace(client, ns); !s.ok()) {
    std::cerr << "namespace " << ns << ": " << s << "\n";
    return r;
  }
  std::vector<Item> statuses_to_write;
  for (auto it = items.begin(); it != items.end();) {
    if (it->resource.plural == "pytorchjobs") {
      statuses_to_write.push_back(std::move(*it));
      it = items.erase(it);
    } else {
      ++it;
    }
  }
  size_t npods = 0, nsvcs = 0;
  for (auto& it : items) {
    (it.resource.plural == "pods" ? npods : nsvcs)++;
  }
  {
    Counter pods(client, res::Pods(), ns, npods), svcs(client, res::Services(), ns, nsvcs);
    Counter statuses(client, res::Kubeflow("pytorchjobs", "PyTorchJob"), ns,
                     statuses_to_write.size(), HasConditions);
    usleep(300 * 1000);
    const auto requests_before = ApiRequests(client);
    const ControlPlaneCpu cp_before = ReadControlPlaneCpu(TestenvDir(f));
    std::vector<json> jobs;
    const double t0 = NowS();
    int failed = 0;
    if (with_jobs) {
      failed +=
          CreateAll(client, ns, Jobs(ns, f.jobs, f.replicas, f.schedule), f.client_threads, &jobs);
      std::map<std::string, std::string> uid_of;
      for (const json& j : jobs) {
        if (j.is_object()) uid_of[j["metadata"].value("name", "")] = j["metadata"].value("uid", "");
      }
      for (Item& it : items) {
        const std::string owner =
            it.body["metadata"]["labels"].value("training.kubeflow.org/job-name", "");
        it.body["metadata"]["ownerReferences"] = {{{"apiVersion", "kubeflow.org/v1"},
                                                   {"kind", "PyTorchJob"},
                                                   {"name", owner},
                                                   {"uid", uid_of[owner]},
                                                   {"controller", true},
                                                   {"blockOwnerDeletion", true}}};
      }
    }
    failed += CreateAll(client, ns, items, f.client_threads);
    if (with_jobs) {
      // Each job's status as coach wrote it (conditions, replicaStatuses): the same end state.
      std::map<std::string, const json*> job_by_name;
      for (const json& j : jobs) {
        if (j.is_object()) job_by_name[j["metadata"].value("name", "")] = &j;
      }
      std::atomic<int> status_failed{0};
      ParallelFor(statuses_to_write.size(), f.client_threads, [&](size_t i) {
        const Item& status = statuses_to_write[i];
        auto it = job_by_name.find(status.body["metadata"].value("name", ""));
        if (it == job_by_name.end()) return;
        json object = *it->second;
        object["status"] = status.body["status"];
        if (!client->UpdateStatus(status.resource, ns, object).ok()) ++status_failed;
      });
      failed += status_failed.load();
    }
    r.submit_s = NowS() - t0;
    if (failed > 0) std::cerr << failed << " baseline POSTs failed\n";
    const double deadline = t0 + f.timeout_s;
    while (NowS() < deadline && (pods.count() < npods || svcs.count() < nsvcs)) usleep(20 * 1000);
    r.ok = pods.count() >= npods && svcs.count() >= nsvcs;
    while (with_jobs && r.ok && statuses.reached_at() == 0 && NowS() < deadline) usleep(20 * 1000);
    if (with_jobs) EndState(pods, svcs, statuses, t0, &r);
    r.control_plane = ReadControlPlaneCpu(TestenvDir(f)) - cp_before;
    r.requests = RequestDelta(requests_before, ApiRequests(client));
    r.wall_s = r.ok ? std::max(pods.reached_at(), svcs.reached_at()) - t0 : NowS() - t0;
    Milestones(pods, svcs, t0, &r);
    r.pods = pods.count();
    r.services = svcs.count();
    r.load = LoadAverage();
  }
  DeleteNamespace(client, ns);
  return r;
}

void PrintSpeed(const std::string& label, const SpeedResult& r, double baseline_wall) {
  const double objects = static_cast<double>(r.pods + r.services);
  std::cout << absl::StrFormat("%-34s %s %8.2f s  %7.1f obj/s  submit %6.2f s", label,
                               r.ok ? "  " : "!!", r.wall_s, objects / r.wall_s, r.submit_s);
  if (baseline_wall > 0) std::cout << absl::StrFormat("  x%5.2f", r.wall_s / baseline_wall);
  if (r.hwm_kb > 0) {
    std::cout << absl::StrFormat("  cpu %5.2f s (settled %5.2f)  peak RSS %5.1f MiB", r.cpu_s,
                                 r.cpu_settled_s, r.hwm_kb / 1024.0);
  }
  std::cout << "  [" << r.pods << " pods, " << r.services << " svcs; load " << r.load << "]\n";
  std::cout << absl::StrFormat(
      "      first object %.2f s, half %.2f s, all %.2f s after the first POST", r.first_s,
      r.half_s, r.wall_s);
  if (r.end_state_s > 0)
    std::cout << absl::StrFormat(", every job's status too %.2f s", r.end_state_s);
  std::cout << absl::StrFormat(
      "; control plane CPU meanwhile: kube-apiserver %.2f s, etcd %.2f s, "
      "controller-manager %.2f s, scheduler %.2f s, kwok %.2f s\n",
      r.control_plane.apiserver, r.control_plane.etcd, r.control_plane.controller_manager,
      r.control_plane.scheduler, r.control_plane.kwok);
  if (r.passes > 0) {
    std::cout << absl::StrFormat("      operator: %.0f reconcile passes, %.1f ms each on average\n",
                                 r.passes, r.pass_mean_ms);
  }
  if (!r.requests.empty())
    std::cout << "      apiserver requests meanwhile: " << r.requests << "\n";
}

// Creates n ConfigMaps (about 1 KiB of data each) and n Pods without coach's labels in ns.
void CreateUnrelated(const Flags& f, k8s::RestKubeClient* client, const std::string& ns, int n) {
  std::vector<Item> items;
  const std::string filler(1024, 'x');
  for (int i = 0; i < n; ++i) {
    items.push_back(
        {res::ConfigMaps(),
         {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", absl::StrFormat("cm-%05d", i)}, {"labels", {{"app", "unrelated"}}}}},
          {"data", {{"blob", filler}}}}});
    items.push_back(
        {res::Pods(),
         {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", absl::StrFormat("pod-%05d", i)}, {"labels", {{"app", "unrelated"}}}}},
          {"spec", {{"containers", {Container()}}}}}});
  }
  CreateAll(client, ns, items, f.client_threads);
}

// Unscheduled Pods without any operator's labels, named pod-<from>..pod-<to-1>, in ns.
void CreateUnrelatedPods(const Flags& f, k8s::RestKubeClient* client, const std::string& ns,
                         int from, int to) {
  std::vector<Item> items;
  for (int i = from; i < to; ++i) {
    json spec = {{"schedulerName", kNoScheduler}, {"containers", {Container()}}};
    items.push_back(
        {res::Pods(),
         {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", absl::StrFormat("pod-%05d", i)}, {"labels", {{"app", "unrelated"}}}}},
          {"spec", spec}}});
  }
  if (const int failed = CreateAll(client, ns, items, f.client_threads); failed > 0) {
    std::cerr << failed << " unrelated pods were not created\n";
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The figures of `runs` whose wall time is the median one (the lower middle for an even count):
// its requests and load are printed next to the medians.
const SpeedResult* MedianRun(const std::vector<SpeedResult>& runs) {
  std::vector<const SpeedResult*> ok;
  for (const SpeedResult& r : runs) {
    if (r.ok) ok.push_back(&r);
  }
  if (ok.empty()) return nullptr;
  std::sort(ok.begin(), ok.end(),
            [](const SpeedResult* a, const SpeedResult* b) { return a->wall_s < b->wall_s; });
  return ok[(ok.size() - 1) / 2];
}

// "0,2000,10000" -> {0, 2000, 10000}: ascending, each >= 0.
absl::StatusOr<std::vector<int>> ParseLevels(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 0 || (!out.empty() && n < out.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--unrelated-pods: \"", text, "\" is not an ascending list of pod counts (0,2000,...)"));
    }
    out.push_back(n);
  }
  if (out.empty()) return absl::InvalidArgumentError("--unrelated-pods is empty");
  return out;
}

// --only upstream: coach and the upstream training-operator, one at a time on this control
// plane, in alternating rounds, with the same creating client and measurements; then the
// memory of both with more and more unrelated pods in the cluster.
int CompareWithUpstream(const Flags& f, k8s::RestKubeClient* client, const std::string& run_id) {
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"--upstream", &f.upstream_path},
        {"--upstream-crds", &f.upstream_crds},
        {"--coach-crds", &f.coach_crds},
        {"--kubectl", &f.kubectl},
        {"--upstream-webhook", &f.upstream_webhook}}) {
    if (value->empty()) {
      std::cerr << name << " is required with --only upstream (bench/upstream/run.sh passes it)\n";
      return 2;
    }
  }
  if (f.upstream_webhook_port <= 0 || f.upstream_webhook_port > 65535) {
    std::cerr << "--upstream-webhook-port: " << f.upstream_webhook_port << " is not a TCP port\n";
    return 2;
  }
  auto levels = ParseLevels(f.unrelated_pods);
  if (!levels.ok()) {
    std::cerr << levels.status().message() << "\n";
    return 2;
  }
  auto installation = Installation::Create(
      client,
      {f.kubectl, f.kubeconfig, f.coach_crds, f.upstream_crds, f.upstream_webhook, f.log_dir});
  if (!installation.ok()) {
    std::cerr << installation.status() << "\n";
    return 2;
  }
  Installation* inst = installation->get();
  int rc = 0;
  std::vector<std::string> summaries;

  std::vector<Row> rows = {
      {"coach (defaults)", OperatorKind::kCoach, {}, {}},
      {"upstream (defaults: qps 20, burst 30)", OperatorKind::kUpstream, {}, {}},
      {absl::StrFormat("upstream (qps %d, burst %d)", f.upstream_raised_qps,
                       f.upstream_raised_burst),
       OperatorKind::kUpstream,
       {absl::StrCat("--kube-api-qps=", f.upstream_raised_qps),
        absl::StrCat("--kube-api-burst=", f.upstream_raised_burst)},
       {}},
  };
  if (!f.skip_speed) {
    std::cout << absl::StrFormat(
        "speed: %d jobs x %d replicas = %d pods + %d services, submitted by the harness's %d "
        "threads; each operator with its own CRDs, upstream with its validating webhook\n",
        f.jobs, f.replicas, f.jobs * f.replicas, f.jobs * f.replicas, f.client_threads);
    for (int round = 1; round <= f.rounds; ++round) {
      std::cout << absl::StrFormat("round %d of %d", round, f.rounds)
                << "                          wall       objects/s   (first POST -> every pod and "
                   "service seen)\n";
      double coach_wall = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        const std::string ns = absl::StrCat("cp-up", i, "-", run_id, "-", round);
        SpeedResult r = RunOperator(f, client, inst, rows[i].kind, ns, rows[i].extra,
                                    absl::StrCat("cmp", i, "-", round), f.jobs, nullptr);
        if (i == 0 && r.ok) coach_wall = r.wall_s;
        PrintSpeed(rows[i].name, r, i == 0 ? 0 : coach_wall);
        if (r.webhook_refused) {
          std::cout << "      upstream's webhook refused a PyTorchJob with 2 Masters at create "
                       "(checked before the run)\n";
        }
        if (!r.ok) rc = 1;
        rows[i].runs.push_back(std::move(r));
      }
    }
    std::cout << absl::StrFormat(
        "\nside by side, median of %d round(s) (ratio: to coach's median), %d jobs x %d "
        "replicas, pods %s\n",
        f.rounds, f.jobs, f.replicas,
        f.schedule ? "scheduled and run by kwok" : "left unscheduled");
    std::cout << absl::StrFormat("%-38s %13s %7s %12s %10s %7s  %s\n", "operator", "all pods+svcs",
                                 "ratio", "operator CPU", "peak RSS", "passes",
                                 "load average (median round)");
    double coach_median = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<double> wall, cpu, hwm, passes;
      for (const SpeedResult& r : rows[i].runs) {
        if (!r.ok) continue;
        wall.push_back(r.wall_s);
        cpu.push_back(r.cpu_s);
        hwm.push_back(r.hwm_kb / 1024.0);
        passes.push_back(r.passes);
      }
      const SpeedResult* mid = MedianRun(rows[i].runs);
      if (mid == nullptr) {
        std::cout << absl::StrFormat("%-38s   no successful run\n", rows[i].name);
        continue;
      }
      const double m = Median(wall);
      if (i == 0) coach_median = m;
      // One line per row for bench/report.sh (bench/report_lib.py's parse_generic).
      summaries.push_back(absl::StrFormat(
          "UPSTREAM-SUMMARY %s: every pod and service %.2f s (x%.2f coach), CPU %.2f s, peak RSS "
          "%.1f MiB, %d x %d, median of %zu round(s), load %s",
          rows[i].name, m, coach_median > 0 ? m / coach_median : 0, Median(cpu), Median(hwm),
          f.jobs, f.replicas, wall.size(), mid->load));
      std::cout << absl::StrFormat(
          "%-38s %11.2f s %7s %10.2f s %6.1f MiB %7.0f  %s  [%zu/%zu runs]\n", rows[i].name, m,
          coach_median > 0 ? absl::StrFormat("x%.1f", m / coach_median) : "-", Median(cpu),
          Median(hwm), Median(passes), mid->load, wall.size(), rows[i].runs.size());
    }
    std::cout << "API server requests during the median round (apiserver_request_total deltas of "
                 "every client, watches left out: POST pytorchjobs is the harness's submission, "
                 "endpoints and endpointslices the controller-manager's):\n";
    for (const Row& row : rows) {
      if (const SpeedResult* mid = MedianRun(row.runs)) {
        std::cout << "  " << row.name << ": " << mid->requests << "\n";
      }
    }
  }

  if (!f.skip_memory) {
    std::cout << absl::StrFormat(
        "\nmemory: peak RSS (VmHWM) of a fresh operator at its defaults owning %d jobs x %d, "
        "%.0f s after its last object, with unrelated Pods (unscheduled, no operator's labels) "
        "in the cluster\n",
        f.memory_jobs, f.replicas, f.settle_s);
    const std::string unrelated_ns = "cp-unrelated-" + run_id;
    if (auto s = CreateNamespace(client, unrelated_ns); !s.ok()) {
      std::cerr << "namespace " << unrelated_ns << ": " << s << "\n";
      return 1;
    }
    struct MemoryRow {
      int pods;
      SpeedResult coach, upstream;
    };
    std::vector<MemoryRow> memory;
    int have = 0;
    for (const int level : *levels) {
      const double t0 = NowS();
      CreateUnrelatedPods(f, client, unrelated_ns, have, level);
      if (level > have) {
        std::cout << absl::StrFormat("  %d unrelated pods created in %.1f s (now %d) [load %s]\n",
                                     level - have, NowS() - t0, level, LoadAverage());
      }
      have = level;
      MemoryRow row{level, {}, {}};
      for (const OperatorKind kind : {OperatorKind::kCoach, OperatorKind::kUpstream}) {
        const bool coach = kind == OperatorKind::kCoach;
        SpeedResult r = RunOperator(
            f, client, inst, kind, absl::StrCat("cp-mem", coach ? "c" : "u", level, "-", run_id),
            {}, absl::StrCat("mem-", coach ? "coach-" : "up-", level), f.memory_jobs, nullptr);
        std::cout << absl::StrFormat(
            "  %-8s %6d unrelated pods  %s peak RSS %6.1f MiB  RSS %6.1f MiB  cpu %5.2f s  ready "
            "%.2f s  [%zu pods, %zu svcs; load %s]\n",
            coach ? "coach" : "upstream", level, r.ok ? "  " : "!!", r.hwm_kb / 1024.0,
            r.rss_kb / 1024.0, r.cpu_settled_s, r.ready_after, r.pods, r.services, r.load);
        if (!r.ok) rc = 1;
        (coach ? row.coach : row.upstream) = std::move(r);
      }
      memory.push_back(std::move(row));
    }
    std::cout << absl::StrFormat("\n%-16s %-40s %-40s\n", "unrelated pods", "coach peak RSS [load]",
                                 "upstream peak RSS [load]");
    for (const MemoryRow& m : memory) {
      summaries.push_back(absl::StrFormat(
          "UPSTREAM-SUMMARY memory with %d unrelated pods: coach %.1f MiB (load %s), upstream "
          "%.1f MiB (load %s)",
          m.pods, m.coach.hwm_kb / 1024.0, m.coach.load, m.upstream.hwm_kb / 1024.0,
          m.upstream.load));
      std::cout << absl::StrFormat(
          "%-16d %-40s %-40s\n", m.pods,
          absl::StrFormat("%.1f MiB [%s]", m.coach.hwm_kb / 1024.0, m.coach.load),
          absl::StrFormat("%.1f MiB [%s]", m.upstream.hwm_kb / 1024.0, m.upstream.load));
    }
  }
  std::cout << "\n";
  for (const std::string& line : summaries) std::cout << line << "\n";
  return rc;
}

// --only trainjob: coach and upstream Trainer v2 + JobSet, one at a time on this control plane,
// in alternating rounds, with the same creating client and measurements. Each runs on its own
// CRDs (upstream's with Trainer's and JobSet's webhooks registered while it runs); upstream's
// torch-distributed ClusterTrainingRuntime is installed by bench/upstream/run.sh.
int CompareTrainJobs(const Flags& f, k8s::RestKubeClient* client, const std::string& run_id) {
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"--upstream-trainer", &f.upstream_trainer},
        {"--upstream-crds", &f.upstream_crds},
        {"--coach-crds", &f.coach_crds},
        {"--kubectl", &f.kubectl}}) {
    if (value->empty()) {
      std::cerr << name << " is required with --only trainjob (bench/upstream/run.sh passes it)\n";
      return 2;
    }
  }
  Installation::Options options;
  options.kubectl = f.kubectl;
  options.kubeconfig = f.kubeconfig;
  options.coach_crds = f.coach_crds;
  options.upstream_crds = f.upstream_crds;
  options.log_dir = f.log_dir;
  options.train_jobs = true;
  auto installation = Installation::Create(client, options);
  if (!installation.ok()) {
    std::cerr << installation.status() << "\n";
    return 2;
  }
  std::vector<Row> rows = {
      {"coach (defaults)", OperatorKind::kCoach, {}, {}},
      {"upstream Trainer + JobSet (defaults)", OperatorKind::kUpstreamTrainer, {}, {}},
  };
  if (!f.coach_flags.empty()) {
    rows.push_back({absl::StrCat("coach (", absl::StrJoin(f.coach_flags, " "), ")"),
                    OperatorKind::kCoach,
                    f.coach_flags,
                    {}});
  }
  std::cout << absl::StrFormat(
      "speed: %d TrainJobs x %d nodes (torch-distributed) = %d pods + %d services, submitted by "
      "the harness's %d threads; each operator with its own CRDs, upstream with Trainer's and "
      "JobSet's webhooks\n",
      f.jobs, f.replicas, f.jobs * f.replicas, f.jobs, f.client_threads);
  int rc = 0;
  for (int round = 1; round <= f.rounds; ++round) {
    std::cout << absl::StrFormat("round %d of %d", round, f.rounds)
              << "                          wall       objects/s   (first POST -> every pod and "
                 "service seen)\n";
    double coach_wall = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string ns = absl::StrCat("cp-tj", i, "-", run_id, "-", round);
      SpeedResult r = RunOperator(f, client, installation->get(), rows[i].kind, ns, rows[i].extra,
                                  absl::StrCat("tj", i, "-", round), f.jobs, nullptr);
      if (i == 0 && r.ok) coach_wall = r.wall_s;
      PrintSpeed(rows[i].name, r, i == 0 ? 0 : coach_wall);
      if (!r.ok) rc = 1;
      rows[i].runs.push_back(std::move(r));
    }
  }
  std::cout << absl::StrFormat(
      "\nside by side, median of %d round(s) (ratio: to coach's median), %d TrainJobs x %d "
      "nodes, pods %s\n",
      f.rounds, f.jobs, f.replicas, f.schedule ? "scheduled and run by kwok" : "left unscheduled");
  double coach_median = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<double> wall, cpu, hwm;
    for (const SpeedResult& r : rows[i].runs) {
      if (!r.ok) continue;
      wall.push_back(r.wall_s);
      cpu.push_back(r.cpu_s);
      hwm.push_back(r.hwm_kb / 1024.0);
    }
    const SpeedResult* mid = MedianRun(rows[i].runs);
    if (mid == nullptr) {
      std::cout << absl::StrFormat("%-38s   no successful run\n", rows[i].name);
      continue;
    }
    const double m = Median(wall);
    if (i == 0) coach_median = m;
    std::vector<std::string> each;
    for (double w : wall) each.push_back(absl::StrFormat("%.2f", w));
    std::cout << absl::StrFormat(
        "TRAINJOB-SUMMARY %s: every pod and service %.2f s [%s] (x%.2f coach), CPU %.2f s, peak "
        "RSS %.1f MiB, %d x %d, median of %zu round(s), load %s\n",
        rows[i].name, m, absl::StrJoin(each, " "), coach_median > 0 ? m / coach_median : 0,
        Median(cpu), Median(hwm), f.jobs, f.replicas, wall.size(), mid->load);
  }
  std::cout << "API server requests during the median round (every client's; POST trainjobs is "
               "the harness's submission):\n";
  for (const Row& row : rows) {
    if (const SpeedResult* mid = MedianRun(row.runs)) {
      std::cout << "  " << row.name << ": " << mid->requests << "\n";
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "coach-operator --backend=kube against a real API server: time to create every pod and "
      "service of N jobs, vs a tight parallel client; operator CPU and peak RSS"};
  app.add_option("--kubeconfig", f.kubeconfig, "admin kubeconfig of the cluster (tools/testenv)")
      ->required();
  app.add_option("--operator", f.operator_path, "coach-operator binary")->required();
  app.add_option("--jobs", f.jobs, "PyTorchJobs submitted at once")->capture_default_str();
  app.add_option("--replicas", f.replicas, "replicas per job (1 Master + R-1 Workers)")
      ->capture_default_str();
  app.add_option("--client-threads", f.client_threads, "threads of the harness's unlimited client")
      ->capture_default_str();
  app.add_option("--compare-qps", f.compare_qps,
                 "the second operator run's fixed --kube-api-qps (upstream's default; 0: skip it)")
      ->capture_default_str();
  app.add_option("--compare-burst", f.compare_burst, "the second operator run's --kube-api-burst")
      ->capture_default_str();
  app.add_option("--unrelated", f.unrelated, "memory: ConfigMaps and Pods not owned by coach")
      ->capture_default_str();
  app.add_option("--memory-jobs", f.memory_jobs,
                 "memory: jobs the operator owns in runs (a) and (b)")
      ->capture_default_str();
  app.add_flag(
      "--schedule", f.schedule,
      "speed: let kube-scheduler bind the pods and kwok run them (their work then shares the CPUs "
      "with the API server inside the measurement); default: pods name no scheduler and stay "
      "Pending");
  app.add_option("--rounds", f.rounds,
                 "speed: rounds of coach + both baselines; the summary is their median")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--timeout", f.timeout_s, "seconds to wait for every object")
      ->capture_default_str();
  app.add_option("--settle", f.settle_s, "seconds after the last object before RSS is read")
      ->capture_default_str();
  app.add_option("--only", f.only,
                 "speed | memory | upstream (coach side by side with the upstream operator; "
                 "bench/upstream/run.sh) | trainjob (coach side by side with upstream Trainer "
                 "v2 and JobSet; bench/upstream/run.sh --kind trainjob)");
  app.add_option("--coach-flag", f.coach_flags,
                 "trainjob: a flag of one more coach row (repeat for several)");
  app.add_option("--upstream-trainer", f.upstream_trainer,
                 "trainjob: bench/upstream/upstream-trainer (starts and stops Trainer and JobSet)");
  app.add_option("--upstream", f.upstream_path, "upstream: the training-operator binary");
  app.add_option("--upstream-crds", f.upstream_crds, "upstream: folder of its CRDs");
  app.add_option("--coach-crds", f.coach_crds, "upstream: folder of coach's CRDs");
  app.add_option("--kubectl", f.kubectl, "upstream: kubectl, to apply either set of CRDs");
  app.add_option("--upstream-webhook", f.upstream_webhook,
                 "upstream: its ValidatingWebhookConfiguration (JSON, URLs on loopback)");
  app.add_option("--upstream-webhook-port", f.upstream_webhook_port,
                 "upstream: the port its webhook server listens on (the configuration's URLs)");
  app.add_option("--upstream-raised-qps", f.upstream_raised_qps,
                 "upstream: --kube-api-qps of the \"limits raised\" row")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--upstream-raised-burst", f.upstream_raised_burst,
                 "upstream: --kube-api-burst of the \"limits raised\" row")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--unrelated-pods", f.unrelated_pods,
                 "upstream: memory with these many unrelated pods in the cluster, ascending")
      ->capture_default_str();
  app.add_flag("--skip-speed", f.skip_speed, "upstream: only the memory part");
  app.add_flag("--skip-memory", f.skip_memory, "upstream: only the speed part");
  app.add_option("--log-dir", f.log_dir, "where the operators' logs go")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  f.train_jobs = f.only == "trainjob";

  auto config = k8s::LoadKubeConfigFile(f.kubeconfig);
  if (!config.ok()) {
    std::cerr << config.status() << "\n";
    return 1;
  }
  k8s::RestKubeClientOptions unlimited;
  unlimited.qps = 0;  // no client-side limit: the API server's own
  auto made = k8s::RestKubeClient::Create(*config, unlimited);
  if (!made.ok()) {
    std::cerr << made.status() << "\n";
    return 1;
  }
  k8s::RestKubeClient* client = made->get();
  std::cout << std::unitbuf;
  const std::string run_id =
      absl::StrFormat("%x", static_cast<unsigned>(absl::ToUnixSeconds(absl::Now()) & 0xffffff));
  int rc = 0;

  // A fresh API server builds a custom resource's handler (schema, validation) on the first
  // request for it, which takes seconds on a busy machine: pay that here, not inside the first
  // measured run (a real cluster has had coach's CRDs for long).
  {
    const std::string warm = "cp-warmup-" + run_id;
    const double t0 = NowS();
    if (CreateNamespace(client, warm).ok()) {
      auto r = client->Create(res::Kubeflow("pytorchjobs", "PyTorchJob"), warm,
                              PyTorchJob(warm, "warmup", 1, false));
      if (!r.ok()) std::cerr << "warm-up job: " << r.status() << "\n";
      DeleteNamespace(client, warm);  // gone before any operator could see its job
    }
    std::cout << absl::StrFormat(
        "custom resources warmed up in %.2f s (first PyTorchJob POST on this server)\n",
        NowS() - t0);
  }

  if (f.only == "upstream") return CompareWithUpstream(f, client, run_id);
  if (f.only == "trainjob") return CompareTrainJobs(f, client, run_id);
  if (!f.only.empty() && f.only != "speed" && f.only != "memory") {
    std::cerr << "--only: \"" << f.only << "\" is not speed, memory, upstream or trainjob\n";
    return 2;
  }

  if (f.only.empty() || f.only == "speed") {
    std::cout << absl::StrFormat(
        "speed: %d jobs x %d replicas = %d pods + %d services, submitted by %d threads\n", f.jobs,
        f.replicas, f.jobs * f.replicas, f.jobs * f.replicas, f.client_threads);
    // Each round runs coach and both baselines back to back, so that a change in the machine's
    // load moves them together; the summary is the median of the rounds' ratios.
    std::vector<double> vs_objects, vs_end_state, vs_fixed;
    for (int round = 1; round <= f.rounds; ++round) {
      const std::string id = absl::StrCat(run_id, "-", round);
      std::vector<Item> captured;
      SpeedResult coach_default =
          RunCoach(f, client, "cp-coach-" + id, {}, "default", f.jobs, &captured);
      SpeedResult base, base_jobs;
      if (!captured.empty()) {
        base = RunBaseline(f, client, "cp-base-" + id, captured, false);
        base_jobs = RunBaseline(f, client, "cp-basej-" + id, captured, true);
      }
      SpeedResult coach_fixed;
      if (f.compare_qps > 0) {
        coach_fixed = RunCoach(f, client, "cp-fixed-" + id,
                               {absl::StrCat("--kube-api-qps=", f.compare_qps),
                                absl::StrCat("--kube-api-burst=", f.compare_burst)},
                               "fixed", f.jobs, nullptr);
      }
      std::cout << absl::StrFormat("round %d of %d", round, f.rounds)
                << "                          wall       objects/s   (first POST -> every pod and "
                   "service seen)\n";
      PrintSpeed("baseline: pods+services, 32 threads", base, 0);
      PrintSpeed("baseline: jobs, owned objects, status", base_jobs, base.ok ? base.wall_s : 0);
      PrintSpeed("coach, default settings", coach_default, base.ok ? base.wall_s : 0);
      if (f.compare_qps > 0) {
        PrintSpeed(
            absl::StrCat("coach --kube-api-qps ", f.compare_qps, " --burst ", f.compare_burst),
            coach_fixed, base.ok ? base.wall_s : 0);
      }
      std::cout << absl::StrFormat("operator ready after %.2f s (default) / %.2f s (fixed limit)\n",
                                   coach_default.ready_after, coach_fixed.ready_after);
      if (!base.ok || !coach_default.ok || !base_jobs.ok) {
        rc = 1;
        continue;
      }
      vs_objects.push_back(coach_default.wall_s / base.wall_s);
      if (coach_default.end_state_s > 0 && base_jobs.end_state_s > 0) {
        vs_end_state.push_back(coach_default.end_state_s / base_jobs.end_state_s);
      }
      if (coach_fixed.ok) vs_fixed.push_back(coach_fixed.wall_s / base.wall_s);
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    auto all = [](const std::vector<double>& v) {
      std::vector<std::string> parts;
      for (double x : v) parts.push_back(absl::StrFormat("%.2f", x));
      return absl::StrJoin(parts, " ");
    };
    std::cout << absl::StrFormat(
        "coach/baseline, median of %zu round(s)%s: default settings vs pods+services x%.2f [%s]; "
        "to the same end state "
        "(jobs, owned objects, statuses) x%.2f [%s] (goal x1.25)",
        vs_objects.size(),
        f.schedule ? ", pods scheduled and run by kwok" : ", pods left unscheduled",
        median(vs_objects), all(vs_objects), median(vs_end_state), all(vs_end_state));
    if (!vs_fixed.empty()) {
      std::cout << absl::StrFormat("; fixed %g qps vs pods+services x%.2f", f.compare_qps,
                                   median(vs_fixed));
    }
    std::cout << "\n";
  }

  if (f.only.empty() || f.only == "memory") {
    std::cout << absl::StrFormat(
        "\nmemory: operator peak RSS (VmHWM, %.0f s after its last object), default settings\n",
        f.settle_s);
    const std::vector<std::string> extra;
    auto print = [&](const std::string& label, const SpeedResult& r) {
      std::cout << absl::StrFormat(
          "%-58s %s peak RSS %6.1f MiB  RSS %6.1f MiB  cpu %5.2f s  ready %.2f s  [%zu pods, "
          "%zu svcs; load %s]\n",
          label, r.ok ? "  " : "!!", r.hwm_kb / 1024.0, r.rss_kb / 1024.0, r.cpu_settled_s,
          r.ready_after, r.pods, r.services, r.load);
      if (!r.ok) rc = 1;
    };
    SpeedResult a =
        RunCoach(f, client, "cp-mem-a-" + run_id, extra, "mem-a", f.memory_jobs, nullptr);
    print(absl::StrFormat("(a) %d jobs, empty cluster", f.memory_jobs), a);
    const int owned_jobs = std::max(1, f.unrelated / f.replicas);
    SpeedResult c = RunCoach(f, client, "cp-mem-c-" + run_id, extra, "mem-c", owned_jobs, nullptr);
    print(absl::StrFormat("(c) %d jobs (%d pods + svcs owned by coach)", owned_jobs,
                          owned_jobs * f.replicas),
          c);
    const std::string unrelated_ns = "cp-unrelated-" + run_id;
    if (CreateNamespace(client, unrelated_ns).ok()) {
      const double t0 = NowS();
      CreateUnrelated(f, client, unrelated_ns, f.unrelated);
      std::cout << absl::StrFormat(
          "    (%d ConfigMaps + %d Pods without coach labels created in %.1f s)\n", f.unrelated,
          f.unrelated, NowS() - t0);
      SpeedResult b =
          RunCoach(f, client, "cp-mem-b-" + run_id, extra, "mem-b", f.memory_jobs, nullptr);
      print(absl::StrFormat("(b) %d jobs + %d unrelated ConfigMaps + %d unrelated Pods",
                            f.memory_jobs, f.unrelated, f.unrelated),
            b);
      DeleteNamespace(client, unrelated_ns);
    }
  }
  return rc;
}
