// The job store and the backend of either kind, and what they share: sqlite + processes on
// this host, or the CRs + pods of a cluster.

#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "operator/backend/backend.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/cr_job_store.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/cmd/flags.h"
#include "operator/cmd/settings.h"
#include "operator/store/job_store.h"

namespace coach::cmd {

// Members are destroyed in reverse order: the backend, then the store, then the client.
// Neither copyable nor movable: the event recorder's hook points into it.
struct BackendWiring {
  BackendWiring() = default;
  BackendWiring(const BackendWiring&) = delete;
  BackendWiring& operator=(const BackendWiring&) = delete;
  // Forget `creating` before the backend goes, on every way out.
  ~BackendWiring() {
    absl::MutexLock lock(&creating_mu);
    creating = nullptr;
  }

  std::unique_ptr<coach::kubeclient::RestKubeClient> kube_client;  // kube only
  // The backend the event recorder asks whether pods are being created. Declared before the
  // store (whose recorder asks it) and cleared, under its mutex, before the backend goes.
  absl::Mutex creating_mu;
  const coach::backend::kube::KubeBackend* creating ABSL_GUARDED_BY(creating_mu) = nullptr;
  coach::backend::kube::CrJobStore* cr_store = nullptr;  // kube only; owned by `store`
  std::unique_ptr<coach::store::JobStore> store;
  std::unique_ptr<coach::backend::Backend> backend;
};

// --backend=kube: the API client, the CR job store (with its event recorder) and the
// KubeBackend. An error's message is the line to log.
absl::Status WireKube(const Flags& flags, const Settings& settings, BackendWiring* wiring);

// --backend=local: the sqlite job store in --state-dir and the LocalBackend. An error's
// message is the line to log.
absl::Status WireLocal(const Flags& flags, BackendWiring* wiring);

}  // namespace coach::cmd
