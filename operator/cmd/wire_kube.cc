#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/cmd/wiring.h"

namespace coach::cmd {
namespace {

// `status` with its full text after `prefix`, as main logs it.
absl::Status Prefixed(const std::string& prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.ToString()));
}

}  // namespace

absl::Status WireKube(const Flags& flags, const Settings& settings, BackendWiring* wiring) {
  coach::kubeclient::RestKubeClientOptions client_options;
  // auto: upstream's 20 qps until the server shows API Priority and Fairness (see
  // RestKubeClientOptions::lift_limit_on_apf); < 0 maps to the limiter's "none" (qps <= 0).
  client_options.qps =
      flags.kube_api_qps == 0 ? coach::kubeclient::kDefaultQps : flags.kube_api_qps;
  client_options.burst = flags.kube_api_burst;
  client_options.lift_limit_on_apf = flags.kube_api_qps == 0;
  auto client = coach::kubeclient::RestKubeClient::Create(settings.kube_config, client_options);
  if (!client.ok()) return Prefixed("--kubeconfig: ", client.status());
  wiring->kube_client = *std::move(client);
  coach::backend::kube::CrJobStoreOptions store_options;
  store_options.namespaces = settings.namespaces;
  // Events yield to a burst of pod/service creations (the backend is made below).
  store_options.event_recorder.busy = [wiring] {
    absl::MutexLock lock(&wiring->creating_mu);
    return wiring->creating != nullptr && wiring->creating->Busy();
  };
  store_options.event_recorder.qps = flags.kube_event_qps;
  store_options.event_recorder.burst = flags.kube_event_burst;
  auto crs = coach::backend::kube::CrJobStore::Create(wiring->kube_client.get(), store_options);
  if (!crs.ok()) return Prefixed("job store: ", crs.status());
  wiring->cr_store = crs->get();
  wiring->store = *std::move(crs);
  coach::backend::kube::KubeBackendOptions backend_options;
  backend_options.client = wiring->kube_client.get();
  backend_options.namespaces = settings.namespaces;
  backend_options.gang_scheduler = flags.gang_scheduler;
  auto kb = coach::backend::kube::KubeBackend::Create(std::move(backend_options));
  if (!kb.ok()) return Prefixed("kube backend: ", kb.status());
  {
    absl::MutexLock lock(&wiring->creating_mu);
    wiring->creating = kb->get();
  }
  wiring->backend = *std::move(kb);
  return absl::OkStatus();
}

}  // namespace coach::cmd
