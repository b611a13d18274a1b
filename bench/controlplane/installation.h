#pragma once

// What the benchmark's cluster has installed for the operator under test: each operator's own
// kubeflow.org CRDs (coach's from charts/coach/crds, upstream's from its module's manifests),
// and, while upstream runs, upstream's ValidatingWebhookConfiguration (bench/upstream/run.sh
// renders it: the module's webhooks, pointed at the operator on loopback). Both are installed
// as each project's deployment installs them, so the API server does for each operator's jobs
// the admission work it does in a real cluster.
//
// Not thread-safe.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/controlplane/operator_under_test.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::bench {

// trainer.kubeflow.org/v1alpha1 TrainJobs.
kubeclient::ResourceDescriptor TrainJobs();

class Installation {
 public:
  struct Options {
    std::string kubectl;        // kubectl binary (server-side apply of the CRDs)
    std::string kubeconfig;     // admin kubeconfig
    std::string coach_crds;     // folder of coach's CRD manifests
    std::string upstream_crds;  // folder of upstream's CRD manifests
    std::string webhook_json;   // upstream's ValidatingWebhookConfiguration, JSON ("": none;
                                // upstream-trainer registers Trainer's and JobSet's itself)
    std::string log_dir;        // kubectl's output (<log_dir>/coach-bench-crds.{out,err})
    bool train_jobs = false;    // the warm-up POSTs a TrainJob instead of a PyTorchJob
  };
  // InvalidArgument naming the option when a path is empty or the webhook file is not a
  // ValidatingWebhookConfiguration with a name.
  static absl::StatusOr<std::unique_ptr<Installation>> Create(kubeclient::KubeClient* client,
                                                              Options options);

  // Makes `kind`'s CRDs the installed ones (nothing when they already are): server-side apply
  // under one field manager, so the fields only the other project's CRDs set are removed; waits
  // until they are established and one PyTorchJob (or TrainJob) POST was served (a fresh schema's
  // handler is built on the first request: seconds that are no operator's). Internal when kubectl
  // failed.
  absl::Status UseCrds(OperatorKind kind);
  // Creates upstream's ValidatingWebhookConfiguration (replacing one left behind); nothing
  // without one.
  absl::Status InstallWebhook();
  // Deletes it; OK when it is not there or there is none.
  absl::Status RemoveWebhook();
  // POSTs into `ns` a PyTorchJob that upstream's webhook refuses (Master replicas 2) and the
  // CRD schema accepts: OK when the API server answered that the webhook denied it;
  // FailedPrecondition when it was created (the webhook was not called; the job is deleted).
  absl::Status ProbeWebhook(const std::string& ns);

 private:
  Installation(kubeclient::KubeClient* client, Options options)
      : client_(client), options_(std::move(options)) {}

  kubeclient::KubeClient* client_;
  Options options_;
  std::string webhook_name_;
  std::string webhook_body_;
  bool have_kind_ = false;
  OperatorKind installed_ = OperatorKind::kCoach;
};

}  // namespace coach::bench
