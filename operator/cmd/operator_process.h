// coach-operator's running parts, each started by one step that main (operator/main.cc) calls
// in order, and stopped together by ShutDown: the store and backend (wiring.h), the core
// (operator_core.h), the HTTP endpoints, the admission webhooks, the job watch on Kubernetes
// (job_watch.h), the controller's start (leader_gate.h) and the gRPC API (api_server.h).

#pragma once

#include <atomic>
#include <memory>

#include "absl/status/status.h"
#include "operator/cmd/api_server.h"
#include "operator/cmd/flags.h"
#include "operator/cmd/leader_gate.h"
#include "operator/cmd/operator_core.h"
#include "operator/cmd/settings.h"
#include "operator/cmd/wiring.h"
#include "operator/server/http_server.h"
#include "operator/webhook/admission_server.h"

namespace coach::cmd {

// Each step's error message is the line to log; after an error no later step may be called.
// Members are destroyed in reverse order, each part before what it uses. Neither copyable nor
// movable: the parts' threads hold `this`.
class OperatorProcess {
 public:
  // `flags` and `settings`, validated (Validate), must outlive this.
  OperatorProcess(const Flags& flags, const Settings& settings)
      : flags_(flags), settings_(settings) {}
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // The store and the backend: sqlite + processes here, or the CRs + pods of a cluster.
  absl::Status WireBackend();
  // The core over them, and the MLflow tracker's workers started.
  void BuildCore();
  // /healthz, /readyz and /metrics on --http-listen; the probes alone on --probe-listen.
  absl::Status StartHttp();
  // --webhook-listen: the admission webhooks, once their serving certificate is there (every
  // replica, the leader or not).
  absl::Status StartWebhooks();
  // --backend=kube: the jobs anyone changes, reconciled and told to the API's watchers.
  absl::Status WatchJobs();
  // Now, or with --leader-elect once this replica leads.
  absl::Status StartController();
  // The gRPC API. On error the controller still runs: StopController.
  absl::Status ServeApi();
  // Ends the wait for the lease, stops the controller, then gives the lease up.
  void StopController();
  // Ready from now on; logs where everything is served.
  void BeginServing();
  // Stops everything, in order (the replicas keep running: a restarted operator re-adopts them).
  void ShutDown();

  // The process's exit code once shut down.
  int exit_code() const { return leader_.exit_code(); }

 private:
  bool Ready() const;

  const Flags& flags_;
  const Settings& settings_;
  BackendWiring wiring_;
  std::unique_ptr<OperatorCore> core_;
  // Ready only while the API is served: /readyz must not answer 200 before the gRPC port
  // is bound (a client that waited for readiness would get "connection refused").
  std::atomic<bool> serving_{false};
  std::unique_ptr<server::HttpServer> http_;
  // The kubelet's probes on a listener of their own: whatever reaches --http-listen cannot
  // make the liveness probe fail and get the operator restarted.
  std::unique_ptr<server::HttpServer> probes_;
  // The webhooks' own API client: reviews come in bursts of the API server's making, and
  // must not wait behind the reconciler's rate limit (nor it behind them); its limit is lifted
  // as the reconciler's is (--kube-api-qps auto).
  std::unique_ptr<coach::kubeclient::RestKubeClient> webhook_client_;
  std::unique_ptr<webhook::AdmissionServer> webhooks_;
  LeaderGate leader_;
  ApiServer api_;
};

}  // namespace coach::cmd
