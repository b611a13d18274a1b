#include "sdk/cpp/cli/remote_commands.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/cli/coach_status_text.h"
#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/cli/progress.h"
#include "sdk/cpp/cli/table_printer.h"
#include "sdk/cpp/job_status.h"

namespace coach::cli {
namespace {

using api::v1::TrainingJob;

int Fail(const absl::Status& status, RemoteEnv& env) {
  *env.err << "error: " << status.message() << "\n";
  return ExitCodeFor(status);
}

std::string JobRef(const TrainingJob& job) {
  return absl::StrCat(KindName(job), " ", job.metadata().namespace_(), "/", job.metadata().name());
}

absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> Connect(const RemoteOptions& options,
                                                             RemoteEnv& env) {
  return env.make_client(options.connection);
}

// Waits for a terminal or wanted condition with progress on env.out; the exit code.
int WaitAndReport(sdk::TrainingClient& client, const std::string& namespace_,
                  const std::string& name, const std::set<std::string>& conditions,
                  absl::Duration timeout, RemoteEnv& env) {
  ProgressReporter progress(*env.out, env.interactive);
  std::optional<TrainingJob> last;
  sdk::WaitOptions wait;
  wait.timeout = timeout;
  wait.on_progress = [&](const TrainingJob& job) {
    last = job;
    progress.Update(job);
  };
  absl::StatusOr<TrainingJob> job = client.WaitForJobConditions(namespace_, name, conditions, wait);
  progress.Finish();
  if (job.ok()) {
    *env.out << JobRef(*job) << " " << sdk::JobState(*job) << "\n";
    return kExitOk;
  }
  if (job.status().code() == absl::StatusCode::kFailedPrecondition && last.has_value() &&
      sdk::IsJobFailed(*last)) {
    *env.err << "error: " << job.status().message() << "\n";
    return kExitJobFailed;
  }
  return Fail(job.status(), env);
}

// -o json|yaml for one or several jobs. A job that cannot be written as a manifest (a
// record the server should never have stored) gets an error on env.err and is left out, so
// that one bad record neither aborts the command nor hides the others. The exit code.
int PrintJobs(const std::vector<TrainingJob>& jobs, const std::string& output, bool single,
              RemoteEnv& env) {
  std::vector<TrainingJob> writable;
  for (const TrainingJob& job : jobs) {
    absl::StatusOr<nlohmann::json> manifest = api::v1::codec::JobToJsonChecked(job);
    if (manifest.ok()) {
      writable.push_back(job);
    } else {
      *env.err << "error: " << JobRef(job)
               << " as the server returned it is no valid manifest: " << manifest.status().message()
               << "\n";
    }
  }
  std::ostream& out = *env.out;
  if (single && writable.empty()) return kExitServerError;
  if (output == "json") {
    out << (single ? api::v1::codec::JobToJson(writable[0])
                             .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                         "\n"
                   : api::v1::codec::JobsToJson(writable));
  } else if (single) {
    out << api::v1::codec::JobToYamlString(writable[0]);
  } else {
    out << api::v1::codec::JobsToYaml(writable);
  }
  return writable.size() == jobs.size() ? kExitOk : kExitServerError;
}

std::string FormatTimestamp(const google::protobuf::Timestamp& timestamp, absl::Time now) {
  if (timestamp.seconds() == 0 && timestamp.nanos() == 0) return "<unknown>";
  absl::Time time = absl::FromUnixSeconds(timestamp.seconds());
  return absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone()), " (",
                      FormatAge(now - time), " ago)");
}

}  // namespace

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return kExitInvalid;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kDeadlineExceeded:
      return kExitTimeout;
    case absl::StatusCode::kUnavailable:
      return kExitUnavailable;
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return kExitUnauthorized;
    default:
      return kExitServerError;
  }
}

absl::StatusOr<absl::Duration> ParseTimeout(const std::string& text) {
  absl::Duration duration;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout: not a duration: \"", text, "\" (e.g. 30s, 10m, 1h30m)"));
  }
  if (duration <= absl::ZeroDuration() || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--timeout: must be positive, got ", text));
  }
  return duration;
}

int RunSubmit(const RemoteOptions& options, RemoteEnv& env) {
  absl::Duration timeout;
  if (options.wait) {
    absl::StatusOr<absl::Duration> parsed = ParseTimeout(options.timeout);
    if (!parsed.ok()) return Fail(parsed.status(), env);
    timeout = *parsed;
  }
  absl::StatusOr<std::string> text = env.read_input(options.file);
  if (!text.ok()) {
    *env.err << "error: " << text.status().message() << "\n";
    return kExitInvalid;
  }
  // A manifest that names its namespace needs no -n (kubectl's rule); a typed -n that
  // contradicts it is refused by load_jobs.
  const std::string namespace_ = options.namespace_given ? options.namespace_ : "";
  absl::StatusOr<std::vector<TrainingJob>> jobs = env.load_jobs(*text, namespace_);
  if (!jobs.ok()) {
    *env.err << "error: " << jobs.status().message() << "\n";
    return kExitInvalid;
  }
  if (jobs->empty()) {
    *env.err << "error: " << options.file << ": no job in the file\n";
    return kExitInvalid;
  }
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);

  std::vector<TrainingJob> created;
  for (const TrainingJob& job : *jobs) {
    // One job: the server reads the user's own text, exactly as `kubectl apply` would send it.
    absl::StatusOr<TrainingJob> result = jobs->size() == 1
                                             ? (*client)->CreateJobFromManifest(*text, namespace_)
                                             : (*client)->CreateJob(job, namespace_);
    if (!result.ok()) return Fail(result.status(), env);
    *env.out << JobRef(*result) << " created\n";
    created.push_back(*result);
  }
  if (!options.wait) return kExitOk;
  int worst = kExitOk;
  for (const TrainingJob& job : created) {
    // Succeeded only: a Failed job ends the wait as FailedPrecondition, which is exit 4.
    int code = WaitAndReport(**client, job.metadata().namespace_(), job.metadata().name(),
                             {sdk::kSucceeded}, timeout, env);
    if (worst == kExitOk) worst = code;
  }
  return worst;
}

int RunGet(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  absl::StatusOr<TrainingJob> job = (*client)->GetJob(options.namespace_, options.job);
  if (!job.ok()) return Fail(job.status(), env);
  if (!options.output.empty()) {
    return PrintJobs({*job}, options.output, /*single=*/true, env);
  }
  TablePrinter table(JobTableHeaders(false));
  table.AddRow(JobTableRow(*job, env.now(), false));
  table.Print(*env.out);
  return kExitOk;
}

int RunList(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  std::string namespace_ = options.all_namespaces ? "" : options.namespace_;
  absl::StatusOr<std::vector<TrainingJob>> jobs =
      (*client)->ListAllJobs(namespace_, options.selector);
  if (!jobs.ok()) return Fail(jobs.status(), env);
  if (!options.output.empty()) {
    return PrintJobs(*jobs, options.output, /*single=*/false, env);
  }
  if (jobs->empty()) {
    *env.err << (options.all_namespaces
                     ? std::string("No jobs found.\n")
                     : absl::StrCat("No jobs found in ", namespace_, " namespace.\n"));
    return kExitOk;
  }
  TablePrinter table(JobTableHeaders(options.all_namespaces));
  absl::Time now = env.now();
  for (const TrainingJob& job : *jobs) {
    table.AddRow(JobTableRow(job, now, options.all_namespaces));
  }
  table.Print(*env.out);
  return kExitOk;
}

// The job's MLflow runs from the operator's annotation coach.dev/mlflow-runs
// (operator/tracking/linked_runs.h): (who, url) pairs; empty when there are none or the value is
// not what the operator writes.
std::vector<std::pair<std::string, std::string>> MlflowRuns(const TrainingJob& job) {
  std::vector<std::pair<std::string, std::string>> runs;
  auto it = job.metadata().annotations().find("coach.dev/mlflow-runs");
  if (it == job.metadata().annotations().end()) return runs;
  const nlohmann::json list = nlohmann::json::parse(it->second, nullptr, false);
  if (!list.is_array()) return runs;
  for (const nlohmann::json& run : list) {
    if (!run.is_object() || !run.contains("replica") || !run["replica"].is_string() ||
        !run.contains("url") || !run["url"].is_string()) {
      continue;
    }
    runs.emplace_back(run["replica"].get<std::string>(), run["url"].get<std::string>());
  }
  return runs;
}

int RunDescribe(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  absl::StatusOr<api::v1::DescribeJobResponse> described =
      (*client)->DescribeJob(options.namespace_, options.job);
  if (!described.ok()) return Fail(described.status(), env);
  const TrainingJob& job = described->job();
  absl::Time now = env.now();
  std::ostream& out = *env.out;
  std::string state = sdk::JobState(job);
  out << "Name:        " << job.metadata().name() << "\n"
      << "Namespace:   " << job.metadata().namespace_() << "\n"
      << "Kind:        " << KindName(job) << "\n"
      << "State:       " << (state.empty() ? "Pending" : state) << "\n";
  if (state == sdk::kQueued) out << "Queue:       " << sdk::ConditionMessage(job, state) << "\n";
  out << "Replicas:    " << ReplicaSummary(job) << " active\n"
      << "Created:     " << FormatTimestamp(job.metadata().creation_timestamp(), now) << "\n";
  if (job.status().has_start_time()) {
    out << "Started:     " << FormatTimestamp(job.status().start_time(), now) << "\n";
  }
  if (job.status().has_completion_time()) {
    out << "Completed:   " << FormatTimestamp(job.status().completion_time(), now) << "\n";
  }

  out << "Conditions:\n";
  if (job.status().conditions().empty()) {
    out << "  <none>\n";
  } else {
    TablePrinter conditions({"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"});
    for (const api::v1::JobCondition& condition : job.status().conditions()) {
      conditions.AddRow({condition.type(), condition.status(), condition.reason(),
                         FormatAgeSince(condition.last_transition_time(), now),
                         condition.message()});
    }
    conditions.Print(out, "  ");
  }

  out << "Replica Pods:\n";
  if (described->replicas().empty()) {
    out << "  <none>\n";
  } else {
    TablePrinter replicas({"NAME", "TYPE", "STATE", "RESTARTS", "EXIT CODE", "MESSAGE"});
    for (const api::v1::ReplicaState& replica : described->replicas()) {
      replicas.AddRow({replica.name(), replica.replica_type(), replica.phase(),
                       absl::StrCat(replica.restarts()),
                       replica.has_exit_code() ? absl::StrCat(replica.exit_code()) : "-",
                       replica.message()});
    }
    replicas.Print(out, "  ");
  }

  PrintCoachStatus(job, now, out);

  if (std::vector<std::pair<std::string, std::string>> runs = MlflowRuns(job); !runs.empty()) {
    out << "MLflow Runs:\n";
    TablePrinter table({"WHO", "URL"});
    for (const auto& [who, url] : runs) table.AddRow({who, url});
    table.Print(out, "  ");
  }

  out << "Events:\n";
  if (described->events().empty()) {
    out << "  <none>\n";
  } else {
    TablePrinter events({"TYPE", "REASON", "AGE", "MESSAGE"});
    for (const api::v1::Event& event : described->events()) {
      events.AddRow(
          {event.type(), event.reason(), FormatAgeSince(event.time(), now), event.message()});
    }
    events.Print(out, "  ");
  }
  return kExitOk;
}

int RunLogs(const RemoteOptions& options, RemoteEnv& env) {
  if (options.tail < 0) {
    *env.err << "error: --tail: must not be negative\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  sdk::LogOptions logs;
  logs.namespace_ = options.namespace_;
  logs.name = options.job;
  logs.replica = options.replica;
  logs.follow = options.follow;
  logs.tail_lines = options.tail;
  absl::Status status = (*client)->GetJobLogs(logs, [&](const api::v1::LogChunk& chunk) {
    env.out->write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    if (options.follow) env.out->flush();
    return true;
  });
  env.out->flush();
  if (!status.ok()) return Fail(status, env);
  return kExitOk;
}

int RunWait(const RemoteOptions& options, RemoteEnv& env) {
  static const std::set<std::string> kWaitable = {sdk::kSucceeded, sdk::kFailed, sdk::kRunning,
                                                  sdk::kCreated};
  if (kWaitable.count(options.for_condition) == 0) {
    *env.err << "error: --for: one of Succeeded, Failed, Running, Created; got \""
             << options.for_condition << "\"\n";
    return kExitUsage;
  }
  absl::StatusOr<absl::Duration> timeout = ParseTimeout(options.timeout);
  if (!timeout.ok()) {
    *env.err << "error: " << timeout.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  return WaitAndReport(**client, options.namespace_, options.job, {options.for_condition}, *timeout,
                       env);
}

int RunDelete(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  absl::Status status = (*client)->DeleteJob(options.namespace_, options.job);
  if (!status.ok()) return Fail(status, env);
  *env.out << "job " << options.namespace_ << "/" << options.job << " deleted\n";
  return kExitOk;
}

int RunSuspend(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  absl::StatusOr<TrainingJob> job = (*client)->SuspendJob(options.namespace_, options.job);
  if (!job.ok()) return Fail(job.status(), env);
  *env.out << JobRef(*job) << " suspended\n";
  return kExitOk;
}

int RunResume(const RemoteOptions& options, RemoteEnv& env) {
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  absl::StatusOr<TrainingJob> job = (*client)->ResumeJob(options.namespace_, options.job);
  if (!job.ok()) return Fail(job.status(), env);
  *env.out << JobRef(*job) << " resumed\n";
  return kExitOk;
}

}  // namespace coach::cli
