#include "launcher/progress_reporter.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"

namespace coach::launcher {
namespace {

class GrpcProgressSender : public ProgressSender {
 public:
  GrpcProgressSender(std::string address, std::string ca_pem, Clock* clock)
      : address_(std::move(address)), ca_pem_(std::move(ca_pem)), clock_(clock) {}

  absl::StatusOr<api::v1::ReportProgressResponse> Send(
      const api::v1::ReportProgressRequest& request, const std::string& token,
      absl::Duration timeout) override {
    if (stub_ == nullptr) {
      std::shared_ptr<grpc::ChannelCredentials> creds;
      if (ca_pem_.empty()) {
        creds = grpc::InsecureChannelCredentials();
      } else {
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = ca_pem_;
        creds = grpc::SslCredentials(ssl);
      }
      grpc::ChannelArguments args;
      // A channel of its own connection: Reconnect must reach a new connection (through the
      // Service, perhaps to another operator replica), not the process-wide one it shared.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      stub_ = api::v1::TrainingService::NewStub(grpc::CreateCustomChannel(address_, creds, args));
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(clock_->Now() + timeout));
    context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    api::v1::ReportProgressResponse response;
    grpc::Status status = stub_->ReportProgress(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return response;
  }

  void Reconnect() override { stub_.reset(); }

 private:
  const std::string address_;
  const std::string ca_pem_;
  Clock* const clock_;
  std::unique_ptr<api::v1::TrainingService::Stub> stub_;
};

std::string Get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

std::unique_ptr<ProgressSender> NewGrpcProgressSender(std::string address, std::string ca_pem,
                                                      Clock* clock) {
  return std::make_unique<GrpcProgressSender>(std::move(address), std::move(ca_pem), clock);
}

absl::StatusOr<std::unique_ptr<ProgressReporter>> ProgressReporter::FromEnv(
    const std::map<std::string, std::string>& env, Log log) {
  const std::string address = Get(env, "COACH_PROGRESS_ADDRESS");
  if (address.empty()) return nullptr;
  ProgressReporterConfig config;
  config.token_file = Get(env, "COACH_PROGRESS_TOKEN_FILE");
  config.namespace_ = Get(env, "COACH_POD_NAMESPACE");
  config.pod = Get(env, "COACH_POD_NAME");
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"COACH_PROGRESS_TOKEN_FILE", config.token_file},
        {"COACH_POD_NAMESPACE", config.namespace_},
        {"COACH_POD_NAME", config.pod}}) {
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": required with COACH_PROGRESS_ADDRESS"));
    }
  }
  return std::make_unique<ProgressReporter>(
      std::move(config), NewGrpcProgressSender(address, Get(env, "COACH_PROGRESS_CA_PEM")),
      std::move(log));
}

ProgressReporter::ProgressReporter(ProgressReporterConfig config,
                                   std::unique_ptr<ProgressSender> sender, Log log, Clock* clock)
    : config_(std::move(config)),
      sender_(std::move(sender)),
      log_(std::move(log)),
      clock_(clock),
      tracker_(config_.tracker) {}

ProgressReporter::~ProgressReporter() {
  bool finished;
  {
    absl::MutexLock lock(&mu_);
    finished = finished_;
  }
  if (!finished) Finish(absl::ZeroDuration());
}

void ProgressReporter::OnMetric(const metrics::MetricLine& metric) {
  tracker_.Observe(metric, clock_->Monotonic());
}

void ProgressReporter::Start() {
  thread_ = std::thread([this] { Run(); });
}

bool ProgressReporter::WakeLocked() const {
  return stop_ || launch_changed_ || checkpoint_changed_ || hurry_;
}

void ProgressReporter::Run() {
  while (true) {
    // Not past the tracker's due time: the reports while waiting for the operator keep their
    // interval rather than the poll's multiple.
    const absl::Duration before = clock_->Monotonic();
    absl::Duration until = tracker_.UntilDue(before);
    bool launch_changed, checkpoint_due;
    {
      absl::MutexLock lock(&mu_);
      // An answer that failed to go is due again sooner than a heartbeat.
      if (checkpoint_version_ != checkpoint_answered_) {
        until = std::min(until, checkpoint_retry_at_ - before);
      }
      const absl::Duration wait = std::clamp(until, absl::Milliseconds(1), config_.poll);
      mu_.AwaitWithTimeout(absl::Condition(this, &ProgressReporter::WakeLocked), wait);
      if (stop_) return;
      launch_changed = launch_changed_ || hurry_;
      launch_changed_ = false;
      hurry_ = false;
      checkpoint_changed_ = false;
      checkpoint_due = checkpoint_version_ != checkpoint_answered_ &&
                       clock_->Monotonic() >= checkpoint_retry_at_;
    }
    const absl::Duration now = clock_->Monotonic();
    std::optional<ProgressSnapshot> due = tracker_.Due(now);
    if (!due && (launch_changed || checkpoint_due)) due = tracker_.Current(now);
    if (!due) continue;
    // The intervals count from the try: a failing operator is not asked more often. What a
    // failed report carried is sent again (the operator takes a heartbeat for no progress).
    switch (SendOne(*due, config_.call_timeout)) {
      case Outcome::kAnswered:
        tracker_.Sent(*due, now);
        break;
      case Outcome::kDropped:
        // Its answer counted, its progress did not: that goes again after the interval.
        tracker_.Failed(now);
        break;
      case Outcome::kFailed:
        tracker_.Failed(now);
        break;
      case Outcome::kStop:
        return;
    }
  }
}

void ProgressReporter::Finish(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  bool stopped;
  {
    absl::MutexLock lock(&mu_);
    stopped = stats_.stopped;
  }
  if (stopped || timeout <= absl::ZeroDuration()) return;
  // The last progress (the final step) reaches the operator even when it came within the
  // interval of the previous report.
  const absl::Duration now = clock_->Monotonic();
  std::optional<ProgressSnapshot> last = tracker_.Unsent(now);
  bool checkpoint_unanswered;
  {
    absl::MutexLock lock(&mu_);
    checkpoint_unanswered = checkpoint_version_ != checkpoint_answered_;
  }
  // The pod's checkpoint answer too: the pod may be about to go.
  if (!last && checkpoint_unanswered) last = tracker_.Current(now);
  if (last) {
    tracker_.Sent(*last, now);
    SendOne(*last, std::min(timeout, config_.call_timeout));
  }
}

void ProgressReporter::SetLaunchState(const api::v1::LaunchState& state) {
  bool new_attempt;
  {
    absl::MutexLock lock(&mu_);
    new_attempt = launch_.has_value() && launch_->attempt() != state.attempt();
  }
  // Before the state is visible: its first report carries the new attempt's progress only.
  if (new_attempt) tracker_.Restart();
  if (state.phase() == api::v1::LaunchState::RUNNING) {
    tracker_.SetIntervals(config_.tracker.min_interval, config_.launch_heartbeat_interval);
  } else {
    tracker_.SetIntervals(config_.launch_wait_interval, config_.launch_wait_interval);
  }
  absl::MutexLock lock(&mu_);
  launch_ = state;
  launch_changed_ = true;
}

void ProgressReporter::SetLaunchAnswerCallback(LaunchAnswer callback) {
  absl::MutexLock lock(&answer_mu_);
  on_launch_answer_ = std::move(callback);
}

void ProgressReporter::SetCheckpointReport(const api::v1::CheckpointReport& report) {
  absl::MutexLock lock(&mu_);
  checkpoint_ = report;
  ++checkpoint_version_;
  checkpoint_retry_at_ = absl::ZeroDuration();
  checkpoint_changed_ = true;
}

void ProgressReporter::SetCheckpointRequestCallback(CheckpointRequestCallback callback) {
  absl::MutexLock lock(&answer_mu_);
  on_checkpoint_request_ = std::move(callback);
}

ProgressReporter::Outcome ProgressReporter::SendOne(const ProgressSnapshot& snapshot,
                                                    absl::Duration timeout) {
  // Read afresh each time: the kubelet replaces the token well before it expires.
  std::ifstream in(config_.token_file);
  std::stringstream content;
  content << in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(content.str()));
  if (!in || token.empty()) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.failed;
    }
    LogOnce("token", absl::StrCat("coach-launch: progress not reported: cannot read the token in ",
                                  config_.token_file, " (COACH_PROGRESS_TOKEN_FILE)"));
    return Outcome::kFailed;
  }
  api::v1::ReportProgressRequest request;
  request.set_namespace_(config_.namespace_);
  request.set_pod(config_.pod);
  request.set_step(snapshot.step);
  request.mutable_metrics()->insert(snapshot.metrics.begin(), snapshot.metrics.end());
  request.set_steps_per_second(snapshot.steps_per_second);
  request.set_heartbeat(snapshot.heartbeat);
  if (snapshot.first_step) request.set_first_step(*snapshot.first_step);
  std::optional<api::v1::LaunchState> launch;
  uint64_t checkpoint_version;
  {
    absl::MutexLock lock(&mu_);
    launch = launch_;
    if (checkpoint_) *request.mutable_checkpoint() = *checkpoint_;
    checkpoint_version = checkpoint_version_;
  }
  if (launch) *request.mutable_launch() = *launch;
  // UNAVAILABLE is mostly an operator replica that does not lead, reached through a Service
  // that balances connections over all of them: a new connection at once reaches the leader
  // with the odds of one replica in N, not one report interval later.
  absl::StatusOr<api::v1::ReportProgressResponse> answer = sender_->Send(request, token, timeout);
  for (int retry = 0; retry < config_.unavailable_retries && absl::IsUnavailable(answer.status());
       ++retry) {
    sender_->Reconnect();
    answer = sender_->Send(request, token, timeout);
  }
  const absl::Status& s = answer.status();
  const bool unimplemented = absl::IsUnimplemented(s);
  {
    absl::MutexLock lock(&mu_);
    if (answer.ok()) {
      ++stats_.sent;
      if (answer->accepted()) ++stats_.accepted;
      checkpoint_answered_ = std::max(checkpoint_answered_, checkpoint_version);
      if (answer->stopping()) operator_stopping_ = true;
    } else {
      ++stats_.failed;
      if (unimplemented) stats_.stopped = true;
      checkpoint_retry_at_ = clock_->Monotonic() + config_.tracker.min_interval;
    }
  }
  if (answer.ok() && answer->has_checkpoint()) {
    absl::MutexLock lock(&answer_mu_);
    if (on_checkpoint_request_) on_checkpoint_request_(answer->checkpoint());
  }
  if (answer.ok()) {
    if (launch) {
      // A dropped answer carries the directive too: the operator's word does not wait for the
      // report interval.
      absl::MutexLock lock(&answer_mu_);
      if (on_launch_answer_) {
        on_launch_answer_(*launch, answer->has_launch()
                                       ? std::optional<api::v1::LaunchDirective>(answer->launch())
                                       : std::nullopt);
      }
    }
    return answer->accepted() ? Outcome::kAnswered : Outcome::kDropped;
  }
  if (unimplemented) {
    LogOnce("unimplemented",
            absl::StrCat("coach-launch: the operator takes no progress reports; not reporting: ",
                         s.message()));
    return Outcome::kStop;
  }
  if (absl::IsUnavailable(s)) sender_->Reconnect();
  const std::string kind = absl::StatusCodeToString(s.code());
  LogOnce(kind,
          absl::StrCat("coach-launch: progress report failed (", kind, "): ", s.message(),
                       "; training goes on, and later failures of this kind are only counted"));
  return Outcome::kFailed;
}

void ProgressReporter::LogOnce(const std::string& kind, const std::string& line) {
  {
    absl::MutexLock lock(&mu_);
    if (!logged_.insert(kind).second) return;
  }
  if (log_) log_(line);
}

void ProgressReporter::Hurry(absl::Duration interval) {
  tracker_.SetIntervals(interval, interval);
  absl::MutexLock lock(&mu_);
  hurry_ = true;
}

bool ProgressReporter::OperatorStopping() const {
  absl::MutexLock lock(&mu_);
  return operator_stopping_;
}

ProgressReporterStats ProgressReporter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace coach::launcher
