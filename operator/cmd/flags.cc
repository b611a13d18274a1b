#include "operator/cmd/flags.h"

#include <cstdlib>
#include <string>

#include "common/version/version.h"
#include "operator/cmd/exit_codes.h"

namespace coach::cmd {

Flags DefaultFlags() {
  Flags flags;
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    flags.state_dir = std::string(home) + "/.local/state/coach";
  }
  return flags;
}

void RegisterFlags(CLI::App* app, Flags* flags) {
  app->add_option("--backend", flags->backend, "Where replicas run: local | kube")
      ->envname("COACH_BACKEND")
      ->capture_default_str();
  app->add_option("--listen", flags->listen, "gRPC API address (host:port)")
      ->envname("COACH_LISTEN")
      ->capture_default_str();
  app->add_option("--http-listen", flags->http_listen,
                  "/healthz, /readyz and /metrics address (host:port)")
      ->envname("COACH_HTTP_LISTEN")
      ->capture_default_str();
  app->add_option("--probe-listen", flags->probe_listen,
                  "/healthz and /readyz alone, for the kubelet's probes (host:port), on their "
                  "own connections and thread, so that clients of --http-listen cannot delay "
                  "them; empty: none")
      ->envname("COACH_PROBE_LISTEN");
  app->add_option("--state-dir", flags->state_dir, "Durable state (jobs database, logs)")
      ->envname("COACH_STATE_DIR")
      ->capture_default_str();
  app->add_option("--tls-cert", flags->tls_cert, "Server certificate (PEM); enables TLS")
      ->envname("COACH_TLS_CERT");
  app->add_option("--tls-key", flags->tls_key, "Server private key (PEM)")
      ->envname("COACH_TLS_KEY");
  app->add_option("--tls-client-ca", flags->tls_client_ca,
                  "CA bundle (PEM) client certificates must chain to (mutual TLS)")
      ->envname("COACH_TLS_CLIENT_CA");
  app->add_option("--token-file", flags->token_file,
                  "File holding the bearer token every API call must present")
      ->envname("COACH_TOKEN_FILE");
  app->add_option("--api-auth", flags->api_auth,
                  "Who may call the API: none | token (--token-file) | kubernetes (the "
                  "caller's own Kubernetes token, TokenReview + SubjectAccessReview; "
                  "--backend=kube). Default: token with --token-file, else none")
      ->envname("COACH_API_AUTH");
  app->add_option("--workers", flags->workers, "Reconcile workers")
      ->envname("COACH_WORKERS")
      ->capture_default_str();
  app->add_option("--gang-scheduler", flags->gang_scheduler, "none | volcano | scheduler-plugins")
      ->envname("COACH_GANG_SCHEDULER")
      ->capture_default_str();
  app->add_option("--log-level", flags->log_level, "trace|debug|info|warn|error|critical|off")
      ->envname("COACH_LOG_LEVEL")
      ->capture_default_str();
  app->add_option("--shim", flags->shim,
                  "coach-replica-shim executable (local backend); default: next to this binary")
      ->envname("COACH_SHIM");
  app->add_option("--workdir", flags->workdir,
                  "working directory of local replicas whose container sets no workingDir; "
                  "default: this process's working directory")
      ->envname("COACH_WORKDIR");
  app->add_option("--training-runtimes", flags->training_runtimes,
                  "local backend: a directory of Kubeflow Trainer v2 runtimes (YAML files of "
                  "ClusterTrainingRuntimes and TrainingRuntimes, read recursively) that "
                  "TrainJobs name; default: none")
      ->envname("COACH_TRAINING_RUNTIMES");
  app->add_option("--mlflow-tracking-uri", flags->mlflow_tracking_uri,
                  "Track every job in this MLflow server (default: $MLFLOW_TRACKING_URI; jobs "
                  "may also name one with the coach.dev/mlflow-tracking-uri annotation)")
      ->envname("COACH_MLFLOW_TRACKING_URI");
  app->add_option("--mlflow-allowed-tracking-uris", flags->mlflow_allowed_tracking_uris,
                  "Servers jobs may name in coach.dev/mlflow-tracking-uri besides the "
                  "operator's own, comma-separated (default: none). The operator calls a "
                  "job-named server without its credentials; link-local and metadata "
                  "addresses are never allowed")
      ->delimiter(',')
      ->envname("COACH_MLFLOW_ALLOWED_TRACKING_URIS");
  app->add_option("--mlflow-experiment", flags->mlflow_experiment,
                  "Experiment of tracked jobs without coach.dev/mlflow-experiment (default: "
                  "$MLFLOW_EXPERIMENT_NAME, else coach)")
      ->envname("COACH_MLFLOW_EXPERIMENT");
  app->add_flag("--mlflow-forward-credentials", flags->mlflow_forward_credentials,
                "Pass the operator's MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN and TLS variables "
                "to tracked replicas (they are stored in the replicas' pod specs)")
      ->envname("COACH_MLFLOW_FORWARD_CREDENTIALS");
  app->add_option(
         "--mlflow-run-wait", flags->mlflow_run_wait_s,
         "Seconds a tracked job's first replicas wait at most for its MLflow run, so "
         "that they get its id and the master's mlflow.start_run() logs into the job's run. "
         "The default leaves room for a server that is still starting (a fresh one "
         "took 26 s to answer on a loaded host; a server pod pulling its image takes "
         "longer). Past it the replicas start without the run's id, the job gets a "
         "Warning event and the run, once made, the tag coach.run_incomplete=true. "
         "0: never wait; at most 3600")
      ->envname("COACH_MLFLOW_RUN_WAIT")
      ->capture_default_str();
  app->add_option("--mlflow-max-backoff", flags->mlflow_max_backoff_s,
                  "Longest wait between retries of a failing MLflow call, seconds")
      ->envname("COACH_MLFLOW_MAX_BACKOFF")
      ->capture_default_str();
  app->add_flag("--karpenter", flags->karpenter.enabled,
                "Place replica pods for Karpenter: accelerator replicas on the GPU NodePool "
                "(tolerating its taint), the others on the CPU NodePool, one zone per job, "
                "karpenter.sh/do-not-disrupt from creation; a job opts out with "
                "coach.dev/karpenter: \"false\" (integrations/karpenter/README.md)")
      ->envname("COACH_KARPENTER");
  app->add_option("--karpenter-gpu-nodepool", flags->karpenter.gpu_nodepool,
                  "NodePool of replicas that request nvidia.com/gpu, amd.com/gpu or "
                  "aws.amazon.com/neuron")
      ->envname("COACH_KARPENTER_GPU_NODEPOOL")
      ->capture_default_str();
  app->add_option("--karpenter-cpu-nodepool", flags->karpenter.cpu_nodepool,
                  "NodePool of the other replicas; empty: anywhere but the GPU NodePool")
      ->envname("COACH_KARPENTER_CPU_NODEPOOL")
      ->capture_default_str();
  app->add_option("--karpenter-gpu-taint", flags->karpenter.gpu_taint,
                  "The GPU NodePool's taint (key[=value]:Effect), which accelerator replicas "
                  "tolerate; empty: none")
      ->envname("COACH_KARPENTER_GPU_TAINT")
      ->capture_default_str();
  app->add_option("--karpenter-zone-policy", flags->karpenter.zone_policy,
                  "Keep a job's replicas in one zone: none | preferred | required (a job "
                  "chooses with coach.dev/zone-policy)")
      ->envname("COACH_KARPENTER_ZONE_POLICY")
      ->capture_default_str();
  app->add_option("--history-s3-endpoint", flags->history_s3_endpoint,
                  "Keep every attempt's replica logs and deleted jobs' histories in this "
                  "S3-compatible store (http(s)://host[:port]); credentials from "
                  "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Empty: no store (earlier "
                  "attempts' logs are kept only in tracked jobs' MLflow runs, and on the local "
                  "backend in its state dir)")
      ->envname("COACH_HISTORY_S3_ENDPOINT");
  app->add_option("--history-s3-bucket", flags->history_s3_bucket, "The history store's bucket")
      ->envname("COACH_HISTORY_S3_BUCKET");
  app->add_option("--history-s3-region", flags->history_s3_region,
                  "The region requests to the history store are signed for")
      ->envname("COACH_HISTORY_S3_REGION")
      ->capture_default_str();
  app->add_option("--history-s3-prefix", flags->history_s3_prefix,
                  "Key prefix of everything coach writes to the bucket (ends with '/')")
      ->envname("COACH_HISTORY_S3_PREFIX")
      ->capture_default_str();
  app->add_option("--history-s3-ca-file", flags->history_s3_ca_file,
                  "CA bundle (PEM) to verify an https history store with; default: the system's")
      ->envname("COACH_HISTORY_S3_CA_FILE");
  app->add_option("--history-max-log-bytes", flags->history_max_log_bytes,
                  "Per replica and attempt: the log's last bytes that are kept (1 KiB..1 GiB)")
      ->envname("COACH_HISTORY_MAX_LOG_BYTES")
      ->capture_default_str();
  app->add_option("--history-retention-hours", flags->history_retention_hours,
                  "How long a deleted job's history stays in the store (1..87600 hours)")
      ->envname("COACH_HISTORY_RETENTION_HOURS")
      ->capture_default_str();
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (--backend=kube); default: in-cluster, else ~/.kube/config")
      ->envname("KUBECONFIG");
  app->add_option(
         "--kube-api-qps", flags->kube_api_qps,
         "Client-side limit on requests per second to the Kubernetes API server. 0 (auto): "
         "none once the server shows it enforces API Priority and Fairness (every supported "
         "Kubernetes does), else 20; > 0: that limit always; < 0: no client-side limit")
      ->envname("COACH_KUBE_API_QPS")
      ->capture_default_str();
  app->add_option("--kube-event-qps", flags->kube_event_qps,
                  "Events per second written to the API server (their own budget, inside "
                  "--kube-api-qps's). Events wait while pods and services are being created "
                  "(up to 30 s each), so this budget only applies beside a long burst or once it "
                  "is over: at 50, the 3200 Created events of 200 jobs x 8 replicas take about "
                  "a minute after the burst, a small share of what the API server writes")
      ->envname("COACH_KUBE_EVENT_QPS")
      ->capture_default_str();
  app->add_option("--kube-event-burst", flags->kube_event_burst,
                  "Events above --kube-event-qps allowed in a burst (a dozen jobs' Created events "
                  "go out at once)")
      ->envname("COACH_KUBE_EVENT_BURST")
      ->capture_default_str();
  app->add_option("--kube-event-shutdown-grace", flags->kube_event_shutdown_grace_s,
                  "Seconds the operator spends at shutdown writing the events still queued, "
                  "without the event budget (a few thousand take a few seconds); what is left is "
                  "counted (coach_kube_events_total{outcome=\"dropped\"}) and logged. Keep the "
                  "pod's terminationGracePeriodSeconds above it plus about 20 s")
      ->envname("COACH_KUBE_EVENT_SHUTDOWN_GRACE")
      ->capture_default_str();
  app->add_option("--lost-node-grace", flags->lost_node_grace,
                  "How long a replica pod may stay Terminating on a lost node (NotReady, "
                  "Unknown or deleted) before the operator deletes it with grace period 0, so "
                  "that its replacement can start (--backend=kube; 0s..1h). Its kubelet will "
                  "never confirm the deletion; a node that comes back within it ends the pod "
                  "itself")
      ->envname("COACH_LOST_NODE_GRACE")
      ->capture_default_str();
  app->add_option("--in-place-restart-timeout", flags->in_place_restart_timeout,
                  "How long after a whole-job restart in place (coach.dev/restart-mode: InPlace) "
                  "every rank must run the new attempt before the operator recreates the job's "
                  "pods instead (--backend=kube; 5s..1h)")
      ->envname("COACH_IN_PLACE_RESTART_TIMEOUT")
      ->capture_default_str();
  app->add_option("--kube-api-burst", flags->kube_api_burst,
                  "Requests above the client-side limit allowed in a burst (a fixed --kube-api-qps "
                  "or auto's fallback of 20 qps)")
      ->envname("COACH_KUBE_API_BURST")
      ->capture_default_str();
  app->add_option("--launcher-image", flags->launcher_image,
                  "Image of the init container that installs coach-launch into replicas of jobs "
                  "annotated coach.dev/launcher: \"true\" (--backend=kube; the chart passes the "
                  "operator's own image, with /usr/local/bin/coach-launch)")
      ->envname("COACH_LAUNCHER_IMAGE");
  app->add_option("--pytorch-wait-for-master", flags->pytorch_wait_for_master,
                  "Give PyTorchJob Workers an init container that waits until their Master's "
                  "name resolves, as upstream does, and XGBoostJob Workers the same "
                  "(--backend=kube; a job opts out with coach.dev/wait-for-master: \"false\")")
      ->envname("COACH_PYTORCH_WAIT_FOR_MASTER")
      ->capture_default_str();
  app->add_option("--pytorch-init-container-image", flags->pytorch_init_container_image,
                  "Image of that init container; it runs /usr/local/bin/coach-launch "
                  "--wait-for-host (default: --launcher-image, the operator's own image; with "
                  "neither, Workers do not wait)")
      ->envname("COACH_PYTORCH_INIT_CONTAINER_IMAGE");
  app->add_option("--pytorch-init-container-max-tries", flags->pytorch_init_container_max_tries,
                  "Tries of that wait, 2 s apart, before the init container fails (1..10000)")
      ->envname("COACH_PYTORCH_INIT_CONTAINER_MAX_TRIES")
      ->capture_default_str();
  app->add_option("--pytorch-restart-scope", flags->pytorch_restart_scope,
                  "How PyTorchJobs without a coach.dev/restart-scope annotation restart: Replica "
                  "(upstream: each failed replica on its own) or Job (every replica together, as "
                  "one counted attempt)")
      ->envname("COACH_PYTORCH_RESTART_SCOPE")
      ->capture_default_str();
  app->add_option("--mpi-kubectl-delivery-image", flags->mpi_kubectl_delivery_image,
                  "Image of the MPIJob launcher's kubectl-delivery init container: it copies "
                  "kubectl for kubexec.sh and waits for the workers (default: upstream's "
                  "mpioperator/kubectl-delivery:latest; tools/image/build-kubectl-delivery "
                  "builds coach's)")
      ->envname("COACH_MPI_KUBECTL_DELIVERY_IMAGE");
  app->add_option("--progress-report-address", flags->progress_report_address,
                  "host:port at which replica pods reach this API (e.g. the chart's Service, "
                  "coach.coach-system.svc:7450): replicas of jobs behind coach-launch that have "
                  "coach.dev/progress-deadline or restart as a whole job report their progress "
                  "there with a token of their own pod (--backend=kube; empty: no reports)")
      ->envname("COACH_PROGRESS_REPORT_ADDRESS");
  app->add_option("--progress-report-ca-file", flags->progress_report_ca_file,
                  "CA certificate(s) (PEM) replica pods trust for --progress-report-address; "
                  "required when the API serves TLS")
      ->envname("COACH_PROGRESS_REPORT_CA_FILE");
  app->add_option("--namespaces", flags->namespaces,
                  "Comma-separated namespaces whose jobs this operator manages (--backend=kube); "
                  "empty: all")
      ->envname("COACH_NAMESPACES");
  app->add_flag("--leader-elect", flags->leader_elect,
                "Leader election over a coordination.k8s.io Lease (--backend=kube): only the "
                "leader reconciles; every replica serves the API")
      ->envname("COACH_LEADER_ELECT");
  app->add_option("--leader-elect-namespace", flags->leader_elect_namespace,
                  "Namespace of the Lease; default: $POD_NAMESPACE, else default")
      ->envname("COACH_LEADER_ELECT_NAMESPACE");
  app->add_option("--leader-elect-lease-name", flags->leader_elect_lease_name, "Name of the Lease")
      ->envname("COACH_LEADER_ELECT_LEASE_NAME")
      ->capture_default_str();
  app->add_option("--leader-elect-lease-duration", flags->leader_elect_lease_duration,
                  "How long candidates wait after the last renewal before taking over")
      ->envname("COACH_LEADER_ELECT_LEASE_DURATION")
      ->capture_default_str();
  app->add_option("--leader-elect-renew-deadline", flags->leader_elect_renew_deadline,
                  "How long the leader retries renewing before it gives up leading")
      ->envname("COACH_LEADER_ELECT_RENEW_DEADLINE")
      ->capture_default_str();
  app->add_option("--leader-elect-retry-period", flags->leader_elect_retry_period,
                  "Time between acquire/renew attempts")
      ->envname("COACH_LEADER_ELECT_RETRY_PERIOD")
      ->capture_default_str();
  app->add_option("--webhook-listen", flags->webhook_listen,
                  "Admission webhooks for TrainJobs and training runtimes over HTTPS "
                  "(--backend=kube; host:port); empty: none")
      ->envname("COACH_WEBHOOK_LISTEN");
  app->add_option("--webhook-cert-dir", flags->webhook_cert_dir,
                  "Serve the webhooks with DIR/tls.crt and DIR/tls.key (re-read when they "
                  "change: a mounted cert-manager Secret); empty: the operator makes and rotates "
                  "its own in --webhook-secret")
      ->envname("COACH_WEBHOOK_CERT_DIR");
  app->add_option("--webhook-secret", flags->webhook_secret,
                  "NAMESPACE/NAME of the Secret holding the webhooks' CA and certificate, which "
                  "every replica serves and any renews")
      ->envname("COACH_WEBHOOK_SECRET");
  app->add_option("--webhook-service", flags->webhook_service,
                  "NAMESPACE/NAME of the Service the API server calls the webhooks through: the "
                  "certificate's DNS names")
      ->envname("COACH_WEBHOOK_SERVICE");
  app->add_option("--webhook-extra-names", flags->webhook_extra_names,
                  "Comma-separated extra DNS names of the certificate (localhost for a "
                  "registration by URL on loopback)")
      ->envname("COACH_WEBHOOK_EXTRA_NAMES");
  app->add_option("--webhook-mutating-configuration", flags->webhook_mutating_configuration,
                  "MutatingWebhookConfiguration whose caBundle the operator keeps equal to its CA")
      ->envname("COACH_WEBHOOK_MUTATING_CONFIGURATION");
  app->add_option("--webhook-validating-configuration", flags->webhook_validating_configuration,
                  "ValidatingWebhookConfiguration whose caBundle the operator keeps equal to its "
                  "CA")
      ->envname("COACH_WEBHOOK_VALIDATING_CONFIGURATION");
  app->add_option("--webhook-client-ca", flags->webhook_client_ca,
                  "CA bundle (PEM) the API server's client certificate must chain to (mutual "
                  "TLS); empty: any client")
      ->envname("COACH_WEBHOOK_CLIENT_CA");
}

std::optional<int> ParseCommandLine(int argc, char** argv, Flags* flags) {
  CLI::App app{
      "coach-operator: Kubeflow training jobs (kubeflow.org/v1) on this host or "
      "Kubernetes, served over gRPC"};
  app.set_version_flag("--version", std::string("coach-operator ") + coach::kVersion);
  RegisterFlags(&app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace coach::cmd
