#include "bench/controlplane/installation.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "e2e/common/child_process.h"

namespace coach::bench {
namespace {

using json = nlohmann::json;
namespace k8s = coach::kubeclient;
namespace res = coach::kubeclient::resources;

k8s::ResourceDescriptor WebhookConfigurations() {
  return {"admissionregistration.k8s.io",   "v1",  "validatingwebhookconfigurations",
          "ValidatingWebhookConfiguration", false, false};
}

json Job(const std::string& ns, const std::string& name, int masters) {
  json tmpl = {{"spec",
                {{"schedulerName", "coach-bench-unscheduled"},
                 {"containers", {{{"name", "pytorch"}, {"image", "busybox"}}}}}}};
  return {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "PyTorchJob"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"pytorchReplicaSpecs",
         {{"Master", {{"replicas", masters}, {"restartPolicy", "Never"}, {"template", tmpl}}}}}}}};
}

// Suspended, so that no operator would run it; the namespace is deleted at once anyway.
json SuspendedTrainJob(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
          {"kind", "TrainJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"runtimeRef", {{"name", "torch-distributed"}}}, {"suspend", true}}}};
}

absl::Status Kubectl(const Installation::Options& o, std::vector<std::string> args) {
  std::vector<std::string> argv = {o.kubectl, "--kubeconfig", o.kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  const e2e::CommandResult r = e2e::RunProcess(argv, e2e::ChildEnv({}, {}), "",
                                               o.log_dir + "/coach-bench-crds", absl::Seconds(180));
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("kubectl ", args[0], " exited ", r.exit_code, ": ", r.err.substr(0, 2000)));
  }
  return absl::OkStatus();
}

}  // namespace

k8s::ResourceDescriptor TrainJobs() {
  return {"trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", true, true};
}

absl::StatusOr<std::unique_ptr<Installation>> Installation::Create(k8s::KubeClient* client,
                                                                   Options options) {
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"kubectl", &options.kubectl},
        {"kubeconfig", &options.kubeconfig},
        {"coach_crds", &options.coach_crds},
        {"upstream_crds", &options.upstream_crds}}) {
    if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(name, " is empty"));
  }
  if (options.webhook_json.empty()) {
    return std::unique_ptr<Installation>(new Installation(client, std::move(options)));
  }
  std::ifstream in(options.webhook_json);
  const json body = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || body.value("kind", "") != "ValidatingWebhookConfiguration" ||
      !body.contains("metadata") || !body["metadata"].is_object() ||
      body["metadata"].value("name", "").empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook_json: ", options.webhook_json,
                     " is not a ValidatingWebhookConfiguration with metadata.name"));
  }
  auto installation = std::unique_ptr<Installation>(new Installation(client, std::move(options)));
  installation->webhook_name_ = body["metadata"]["name"];
  installation->webhook_body_ = body.dump();
  return installation;
}

absl::Status Installation::UseCrds(OperatorKind kind) {
  if (have_kind_ && installed_ == kind) return absl::OkStatus();
  const std::string& dir =
      kind == OperatorKind::kCoach ? options_.coach_crds : options_.upstream_crds;
  // Upstream's CRDs carry the whole pod template schema (600 KiB each): too large for the
  // last-applied annotation of a client-side apply.
  if (absl::Status s = Kubectl(options_, {"apply", "--server-side", "--field-manager=coach-bench",
                                          "--force-conflicts", "-f", dir});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Kubectl(
          options_, {"wait", "--for", "condition=established", "--timeout=120s", "-f", dir});
      !s.ok()) {
    return s;
  }
  // The first PyTorchJob POST after a schema change builds the handler; pay it here, in a
  // namespace of its own that is gone before any operator starts.
  const std::string ns = "cp-crd-warmup";
  json nsbody = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  (void)client_->Create(res::Namespaces(), "", nsbody);
  absl::Status warmed = absl::UnknownError("not tried");
  for (int attempt = 0; attempt < 50 && !warmed.ok(); ++attempt) {
    const std::string name = absl::StrCat("warmup-", attempt);
    auto r = options_.train_jobs ? client_->Create(TrainJobs(), ns, SuspendedTrainJob(ns, name))
                                 : client_->Create(res::Kubeflow("pytorchjobs", "PyTorchJob"), ns,
                                                   Job(ns, name, 1));
    warmed = r.ok() ? absl::OkStatus() : r.status();
    if (!warmed.ok()) usleep(200 * 1000);
  }
  (void)client_->Delete(res::Namespaces(), "", ns, {});
  for (int i = 0; i < 600; ++i) {
    auto g = client_->Get(res::Namespaces(), "", ns);
    if (!g.ok() && g.status().code() == absl::StatusCode::kNotFound) break;
    usleep(100 * 1000);
  }
  if (!warmed.ok()) return warmed;
  have_kind_ = true;
  installed_ = kind;
  return absl::OkStatus();
}

absl::Status Installation::InstallWebhook() {
  if (webhook_body_.empty()) return absl::OkStatus();
  if (absl::Status s = RemoveWebhook(); !s.ok()) return s;
  auto r = client_->Create(WebhookConfigurations(), "", json::parse(webhook_body_));
  return r.ok() ? absl::OkStatus() : r.status();
}

absl::Status Installation::RemoveWebhook() {
  if (webhook_name_.empty()) return absl::OkStatus();
  absl::Status s = client_->Delete(WebhookConfigurations(), "", webhook_name_, {});
  return s.ok() || s.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : s;
}

absl::Status Installation::ProbeWebhook(const std::string& ns) {
  const auto jobs = res::Kubeflow("pytorchjobs", "PyTorchJob");
  auto r = client_->Create(jobs, ns, Job(ns, "webhook-probe", 2));
  if (r.ok()) {
    (void)client_->Delete(jobs, ns, "webhook-probe", {});
    return absl::FailedPreconditionError(
        "a PyTorchJob with 2 Masters was created: upstream's validating webhook was not called");
  }
  if (!absl::StrContains(r.status().message(), "denied the request")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the webhook probe failed otherwise than by a denial: ", r.status().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace coach::bench
