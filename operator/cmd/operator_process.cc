#include "operator/cmd/operator_process.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "operator/cmd/job_watch.h"

namespace coach::cmd {

absl::Status OperatorProcess::WireBackend() {
  return settings_.kube ? WireKube(flags_, settings_, &wiring_) : WireLocal(flags_, &wiring_);
}

void OperatorProcess::BuildCore() {
  core_ = std::make_unique<OperatorCore>(flags_, settings_, wiring_);
  core_->StartTracker(settings_.config.mlflow);
}

bool OperatorProcess::Ready() const {
  // A replica that waits for the lease serves the API and is ready; the leader is
  // ready once its controller runs.
  return serving_.load() && (core_->controller.running() || leader_.WaitingForLease());
}

absl::Status OperatorProcess::StartHttp() {
  auto ready = [this] { return Ready(); };
  auto http = server::HttpServer::Start(flags_.http_listen, ready, &core_->registry);
  if (!http.ok()) {
    return absl::Status(http.status().code(),
                        absl::StrCat("--http-listen: ", http.status().ToString()));
  }
  http_ = *std::move(http);
  if (flags_.probe_listen.empty()) return absl::OkStatus();
  auto probes = server::HttpServer::Start(flags_.probe_listen, ready, nullptr,
                                          server::HttpServerOptions::Probe());
  if (!probes.ok()) {
    return absl::Status(probes.status().code(),
                        absl::StrCat("--probe-listen: ", probes.status().ToString()));
  }
  probes_ = *std::move(probes);
  return absl::OkStatus();
}

absl::Status OperatorProcess::StartWebhooks() {
  const Settings::Webhook& webhook = settings_.webhook;
  if (webhook.listen.empty()) return absl::OkStatus();
  // Upstream's 20 qps until the API server shows API Priority and Fairness, then none: the
  // server itself queues and rejects fairly, and one runtime read per review is its pace.
  coach::kubeclient::RestKubeClientOptions client_options;
  client_options.qps = coach::kubeclient::kDefaultQps;
  client_options.burst = 200;
  client_options.lift_limit_on_apf = true;
  auto client = coach::kubeclient::RestKubeClient::Create(settings_.kube_config, client_options);
  if (!client.ok()) return client.status();
  webhook_client_ = *std::move(client);
  webhook::AdmissionServerOptions options;
  options.listen = webhook.listen;
  options.cert_dir = webhook.cert_dir;
  options.rotator = webhook.rotator;
  options.client_ca_pem = webhook.client_ca_pem;
  options.registry = &core_->registry;
  options.clock = core_->clock;
  options.rotator.clock = core_->clock;
  auto started = webhook::AdmissionServer::Start(
      webhook_client_.get(), webhook::RuntimesFromApiServer(webhook_client_.get()), options);
  if (!started.ok()) return started.status();
  webhooks_ = *std::move(started);
  spdlog::info("coach-operator: admission webhooks on {} (HTTPS, port {})", webhook.listen,
               webhooks_->port());
  return absl::OkStatus();
}

absl::Status OperatorProcess::WatchJobs() {
  if (wiring_.cr_store == nullptr) return absl::OkStatus();
  return WatchJobChanges(wiring_.cr_store, &core_->controller, &core_->watchers, &core_->keeper);
}

absl::Status OperatorProcess::StartController() {
  if (settings_.kube && flags_.leader_elect) {
    return leader_.StartWhenLeading(wiring_.kube_client.get(), settings_.election,
                                    &core_->controller, *wiring_.backend);
  }
  return leader_.StartNow(&core_->controller, *wiring_.backend);
}

absl::Status OperatorProcess::ServeApi() {
  RETURN_IF_ERROR(api_.Start(settings_, &core_->jobs, wiring_.backend.get(),
                             wiring_.kube_client.get(), core_->clock));
  // The pods hear of checkpoint requests through their reports to the API.
  if (backend::CheckpointChannel* checkpoints = api_.checkpoints()) {
    core_->controller.SetCheckpointChannel(checkpoints);
  }
  return absl::OkStatus();
}

void OperatorProcess::StopController() {
  // The gate's thread may be about to start the controller: end that first. The lease goes
  // only once this controller has stopped: never two at once.
  leader_.StopWaiting();
  core_->controller.Stop();
  leader_.StopCampaign();
}

void OperatorProcess::BeginServing() {
  core_->trimmer.Start();
  serving_ = true;
  spdlog::info("coach-operator: API on {} ({}, auth {}), HTTP on {}{}{}, state in {}, backend {}",
               flags_.listen, api_.tls() ? "TLS" : "plaintext", api_.auth_mode(),
               flags_.http_listen, probes_ != nullptr ? ", probes on " : "", flags_.probe_listen,
               settings_.kube ? "the API server" : flags_.state_dir, wiring_.backend->Name());
  if (!settings_.own_token_file.empty()) {
    spdlog::info("coach-operator: callers present the token in {} (this user's coach CLI reads it)",
                 settings_.own_token_file);
  }
}

void OperatorProcess::ShutDown() {
  // Stop accepting calls and end the streams, finish the reconciles in flight, stop the
  // backend (replicas keep running; a restarted operator re-adopts them).
  serving_ = false;
  core_->watchers.Shutdown();
  api_.Shutdown(absl::Seconds(5));
  core_->trimmer.Stop();
  StopController();
  if (wiring_.cr_store != nullptr) wiring_.cr_store->StopWatching();
  // A moment for runs to record what just happened; the rest resumes after a restart.
  core_->tracker.Stop(absl::Seconds(2));
  core_->keeper.Stop(absl::Seconds(2));
  core_->jobs.SetObserver(nullptr);
  // Nothing appends events any more: write the queued ones (the record `kubectl describe`
  // shows), bounded by --kube-event-shutdown-grace; the rest are counted and logged.
  if (wiring_.cr_store != nullptr) {
    wiring_.cr_store->StopEvents(absl::Seconds(flags_.kube_event_shutdown_grace_s));
  }
  // Admission until the end: the API server keeps calling this replica until its endpoint goes.
  if (webhooks_ != nullptr) webhooks_->Stop();
  http_->Stop();
  if (probes_ != nullptr) probes_->Stop();
  spdlog::info("coach-operator: stopped");
}

}  // namespace coach::cmd
