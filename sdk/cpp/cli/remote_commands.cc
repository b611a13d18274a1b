#include "sdk/cpp/cli/remote_commands.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
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

// --attempt as typed: digits only, so that "-1", "1.5" and "one" are refused as what they are
// rather than read as something else.
absl::StatusOr<std::optional<int>> ParseAttempt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int attempt = 0;
  if (text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(text, &attempt) || attempt > sdk::kMaxAttempt) {
    return absl::InvalidArgumentError(absl::StrCat("--attempt: must be a whole number from 0 to ",
                                                   sdk::kMaxAttempt, ", got \"", text, "\""));
  }
  return attempt;
}

// Where a replica's bytes come from, in words: "kept log (store)"; "" for a live replica's
// (and for a server that does not say).
std::string SourceText(const std::string& source) {
  if (source.empty() || source == "live") return "";
  if (absl::StartsWith(source, "kept/")) return absl::StrCat("kept log (", source.substr(5), ")");
  return source;
}

std::string Rfc3339(const google::protobuf::Timestamp& timestamp) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(timestamp.seconds()),
                          absl::UTCTimeZone());
}

// How many attempts the job had: the timeline keeps the first and the latest, so the last
// entry's number tells, not the entries.
int AttemptCount(const TrainingJob& job) {
  const api::v1::CoachJobStatus& coach = job.status().coach();
  if (!coach.attempts().empty()) {
    return std::max(coach.attempt(), coach.attempts(coach.attempts_size() - 1).attempt()) + 1;
  }
  return job.status().has_start_time() ? coach.attempt() + 1 : 0;
}

std::string Result(const TrainingJob& job) {
  const std::string state = sdk::JobState(job);
  return state.empty() ? "-" : state;
}

// -o json|yaml of a job's timeline: its attempts exactly as its manifest's status.coach.attempts
// writes them, so that a script reads the same fields `coach get -o json` shows.
nlohmann::json HistoryJson(const TrainingJob& job, const api::v1::JobHistory* kept) {
  nlohmann::json out = nlohmann::json::object();
  out["namespace"] = job.metadata().namespace_();
  out["name"] = job.metadata().name();
  out["uid"] = job.metadata().uid();
  if (kept != nullptr) {
    out["deletedTime"] = Rfc3339(kept->deleted_time());
    out["deletedBy"] = kept->deleted_by();
    out["result"] = sdk::JobState(job);
    out["logs"] =
        nlohmann::json(std::vector<std::string>(kept->logs().begin(), kept->logs().end()));
  }
  const nlohmann::json manifest = api::v1::codec::JobToJson(job);
  const nlohmann::json* attempts = &manifest;
  for (const char* key : {"status", "coach", "attempts"}) {
    if (!attempts->is_object() || !attempts->contains(key)) {
      attempts = nullptr;
      break;
    }
    attempts = &(*attempts)[key];
  }
  out["attempts"] = attempts != nullptr ? *attempts : nlohmann::json::array();
  return out;
}

void PrintValue(const nlohmann::json& value, const std::string& output, std::ostream& out) {
  if (output == "json") {
    out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    out << api::v1::codec::ToYaml(value);
  }
}

// One job's timeline; `kept` when it is a deleted job's.
int PrintHistory(const TrainingJob& job, const api::v1::JobHistory* kept,
                 const RemoteOptions& options, RemoteEnv& env) {
  if (!options.output.empty()) {
    PrintValue(HistoryJson(job, kept), options.output, *env.out);
    return kExitOk;
  }
  if (job.status().coach().attempts().empty()) {
    *env.err << "No attempts recorded for " << JobRef(job) << ".\n";
    return kExitOk;
  }
  // A deleted job's open attempt ended with the job.
  const absl::Time until = kept != nullptr && kept->has_deleted_time()
                               ? absl::FromUnixSeconds(kept->deleted_time().seconds())
                               : env.now();
  PrintAttemptTimeline(job, until, /*deleted=*/kept != nullptr, *env.out);
  return kExitOk;
}

int PrintHistories(const std::vector<const api::v1::JobHistory*>& histories,
                   const RemoteOptions& options, RemoteEnv& env) {
  if (!options.output.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const api::v1::JobHistory* history : histories) {
      list.push_back(HistoryJson(history->job(), history));
    }
    PrintValue(list, options.output, *env.out);
    return kExitOk;
  }
  if (histories.empty()) {
    *env.err << (options.all_namespaces
                     ? std::string("No kept histories of deleted jobs found.\n")
                     : absl::StrCat("No kept histories of deleted jobs found in ",
                                    options.namespace_, " namespace.\n"));
    return kExitOk;
  }
  TablePrinter table({"NAMESPACE", "NAME", "UID", "DELETED", "BY", "RESULT", "ATTEMPTS", "LOGS"});
  const absl::Time now = env.now();
  for (const api::v1::JobHistory* history : histories) {
    const TrainingJob& job = history->job();
    table.AddRow({job.metadata().namespace_(), job.metadata().name(), job.metadata().uid(),
                  FormatAgeSince(history->deleted_time(), now), history->deleted_by(), Result(job),
                  absl::StrCat(AttemptCount(job)), absl::StrCat(history->logs_size())});
  }
  table.Print(*env.out);
  return kExitOk;
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
  absl::StatusOr<std::optional<int>> attempt = ParseAttempt(options.attempt);
  if (!attempt.ok()) {
    *env.err << "error: " << attempt.status().message() << "\n";
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
  logs.attempt = *attempt;
  logs.uid = options.uid;
  absl::Status status = (*client)->GetJobLogs(logs, [&](const api::v1::LogChunk& chunk) {
    if (std::string source = SourceText(chunk.source()); !source.empty()) {
      // The note goes to stderr so that the bytes on stdout stay the log itself; the bytes
      // before it leave first, so that a terminal shows the note where the replica's begin.
      env.out->flush();
      *env.err << "# " << chunk.replica() << ", attempt " << chunk.attempt() << ": " << source
               << "\n";
      env.err->flush();
    }
    env.out->write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    if (options.follow) env.out->flush();
    return true;
  });
  env.out->flush();
  if (!status.ok()) return Fail(status, env);
  return kExitOk;
}

int RunHistory(const RemoteOptions& options, RemoteEnv& env) {
  const bool deleted = options.deleted || !options.uid.empty();
  if (!deleted && options.job.empty()) {
    *env.err << "error: JOB is required (or --deleted for the histories of deleted jobs)\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = Connect(options, env);
  if (!client.ok()) return Fail(client.status(), env);
  if (!deleted) {
    absl::StatusOr<TrainingJob> job = (*client)->GetJob(options.namespace_, options.job);
    if (!job.ok()) return Fail(job.status(), env);
    return PrintHistory(*job, nullptr, options, env);
  }

  const std::string namespace_ = options.all_namespaces ? "" : options.namespace_;
  // A uid may belong to an old deletion: ask for as many as the server gives.
  absl::StatusOr<api::v1::ListJobHistoriesResponse> response = (*client)->ListJobHistories(
      namespace_, options.job, options.uid.empty() ? 0 : sdk::kMaxHistoryPageSize);
  if (!response.ok()) return Fail(response.status(), env);
  std::vector<const api::v1::JobHistory*> histories;
  for (const api::v1::JobHistory& history : response->histories()) {
    if (options.uid.empty() || history.job().metadata().uid() == options.uid) {
      histories.push_back(&history);
    }
  }
  std::string wanted = "a deleted job";
  if (!options.job.empty()) {
    absl::StrAppend(&wanted, " ",
                    namespace_.empty() ? options.job : namespace_ + "/" + options.job);
  }
  if (namespace_.empty() || options.job.empty()) {
    absl::StrAppend(&wanted, namespace_.empty() ? " in any namespace" : " in " + namespace_);
  }
  if (!options.uid.empty()) absl::StrAppend(&wanted, " with uid ", options.uid);
  if ((!options.job.empty() || !options.uid.empty()) && histories.empty()) {
    return Fail(absl::NotFoundError(absl::StrCat(
                    "no kept history of ", wanted,
                    response->truncated() ? " among the newest the operator lists" : "")),
                env);
  }
  // The one asked for by uid, or the only one of JOB: its timeline. With -o a JOB's histories
  // stay a list however many there are, so that a script reads one shape.
  if (histories.size() == 1 &&
      (!options.uid.empty() || (!options.job.empty() && options.output.empty()))) {
    return PrintHistory(histories[0]->job(), histories[0], options, env);
  }
  if (response->truncated()) {
    *env.err << "# more kept histories exist than shown: the newest " << response->histories_size()
             << "\n";
  }
  if (!options.job.empty() && options.output.empty()) {
    *env.err << "# " << histories.size() << " deleted jobs named " << options.job
             << " were kept: --uid UID shows one's attempts\n";
  }
  return PrintHistories(histories, options, env);
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
