#include "operator/reconcile/elastic.h"

#include <algorithm>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/coach_status.h"
#include "api/v1/kinds.h"
#include "api/v1/recovery_annotations.h"
#include "operator/model/listen_ports.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using model::ObservedPod;
using model::PodPhase;

bool IsRunningWorker(const ElasticRange& range, const ObservedPod& pod) {
  return pod.replica_type == range.type && pod.phase == PodPhase::kRunning && !pod.deleting;
}

// "Workers", "nodes": the elastic type's pods in messages.
std::string Plural(const ElasticRange& range) { return absl::StrCat(range.type, "s"); }

// What a Worker that does not run is doing, in words; "" for one that runs.
std::string WorkerState(const ElasticRange& range, const ObservedPod& pod) {
  if (IsRunningWorker(range, pod)) return "";
  const std::string who = absl::StrCat(range.type, " replica ", pod.index);
  if (!pod.disruption.empty()) return absl::StrCat(who, " is gone (", pod.disruption, ")");
  if (pod.phase == PodPhase::kFailed) {
    return pod.exit_code ? absl::StrCat(who, " exited with code ", *pod.exit_code)
                         : absl::StrCat(who, " failed");
  }
  if (pod.deleting) return absl::StrCat(who, " is being deleted");
  if (pod.phase == PodPhase::kSucceeded) return absl::StrCat(who, " finished");
  return absl::StrCat(who, " waits to run");
}

// Why fewer Workers run than the job has: each stopped Worker's state; a Worker with no pod at
// all is missing.
std::string WhyFewer(const ElasticRange& range, int replicas,
                     const std::vector<ObservedPod>& pods) {
  std::map<int, std::string> states;
  std::map<int, bool> running;
  for (const ObservedPod& pod : pods) {
    if (pod.replica_type != range.type) continue;
    if (IsRunningWorker(range, pod)) {
      running[pod.index] = true;
    } else if (std::string s = WorkerState(range, pod); !s.empty()) {
      states.emplace(pod.index, std::move(s));
    }
  }
  std::vector<std::string> words;
  for (int index = 0; index < replicas; ++index) {
    if (running[index]) continue;
    auto it = states.find(index);
    words.push_back(it != states.end()
                        ? it->second
                        : absl::StrCat(range.type, " replica ", index, " is missing"));
  }
  return absl::StrJoin(words, "; ");
}

void AddChange(api::v1::WorkerCountChange change, api::v1::ElasticStatus& elastic) {
  auto& changes = *elastic.mutable_changes();
  *changes.Add() = std::move(change);
  while (changes.size() > api::v1::kMaxWorkerCountChanges) changes.erase(changes.begin() + 1);
}

// A TrainJob's node pods, from coach.dev/elastic-min-nodes on the job as the plan expands it.
std::optional<ElasticRange> TrainJobNodes(const model::Job& job) {
  const std::string* min = AnnotationOf(job, api::v1::kAnnotationElasticMinNodes);
  int n = 0;
  if (min == nullptr || !absl::SimpleAtoi(*min, &n) ||
      !HasReplicaType(job, model::kTrainerReplicatedJob)) {
    return std::nullopt;
  }
  return ElasticRange{n, Replicas(job, model::kTrainerReplicatedJob), model::kTrainerReplicatedJob,
                      api::v1::kAnnotationElasticMinNodes};
}

}  // namespace

void NoteSuspended(absl::Time now, model::JobStatus& status) {
  if (!status.coach().has_elastic() || status.coach().elastic().workers() == 0) return;
  api::v1::ElasticStatus& elastic = *status.mutable_coach()->mutable_elastic();
  elastic.set_workers(0);
  if (elastic.changes_size() == 0) return;
  api::v1::WorkerCountChange change;
  *change.mutable_time() = ToTimestamp(now);
  change.set_workers(0);
  if (status.coach().has_progress()) change.set_step(status.coach().progress().step());
  change.set_why("the job is suspended");
  AddChange(std::move(change), elastic);
}

std::optional<ElasticRange> ElasticWorkers(const model::Job& job) {
  if (job.kind() == api::v1::TRAIN_JOB) return TrainJobNodes(job);
  if (job.kind() != api::v1::PYTORCH_JOB || !job.spec().has_elastic_policy() ||
      !HasReplicaType(job, api::v1::kReplicaWorker)) {
    return std::nullopt;
  }
  const api::v1::ElasticPolicy& ep = job.spec().elastic_policy();
  ElasticRange range;
  if (ep.has_min_replicas() || ep.has_max_replicas()) {
    range.min = ep.has_min_replicas() ? ep.min_replicas() : ep.max_replicas();
    range.max = ep.has_max_replicas() ? ep.max_replicas() : ep.min_replicas();
  } else {
    range.min = range.max = Replicas(job, api::v1::kReplicaWorker);
  }
  return range;
}

int RunningWorkers(const ElasticRange& range, const std::vector<ObservedPod>& pods) {
  return static_cast<int>(std::count_if(pods.begin(), pods.end(), [&](const ObservedPod& pod) {
    return IsRunningWorker(range, pod);
  }));
}

bool AbsorbsWorkerLoss(const ElasticRange& range, int running) {
  return range.min < range.max && running >= range.min;
}

std::optional<ElasticEvent> NoteWorkers(const ElasticRange& range, int replicas,
                                        const std::vector<ObservedPod>& pods, absl::Time now,
                                        model::JobStatus& status) {
  // Once one has finished, training is over: the others finish after it (a TrainJob completes
  // when all its node pods have), which is no loss of members.
  for (const ObservedPod& pod : pods) {
    if (pod.replica_type == range.type && pod.phase == PodPhase::kSucceeded) return std::nullopt;
  }
  api::v1::ElasticStatus& elastic = *status.mutable_coach()->mutable_elastic();
  elastic.set_min_workers(range.min);
  elastic.set_max_workers(range.max);
  const int before = elastic.workers();
  const int running = RunningWorkers(range, pods);
  elastic.set_workers(running);
  // Counting starts, and starts again after a change to none (a suspended job, every Worker
  // gone), once all the Workers run: their one by one start is no change of size.
  const bool counting =
      elastic.changes_size() > 0 && elastic.changes(elastic.changes_size() - 1).workers() > 0;
  if (!counting && running < replicas) return std::nullopt;
  if (counting && running == before) return std::nullopt;

  api::v1::WorkerCountChange change;
  *change.mutable_time() = ToTimestamp(now);
  change.set_workers(running);
  // The pods' own reports are newer than the status's copy of them (written at intervals).
  int64_t step = status.coach().has_progress() ? status.coach().progress().step() : 0;
  for (const ObservedPod& pod : pods) {
    if (pod.progress) step = std::max(step, pod.progress->step);
  }
  change.set_step(step);
  if (!counting) {
    change.set_why(absl::StrCat("all ", running, " ", Plural(range), " run"));
  } else if (running < before) {
    change.set_why(BoundedText(WhyFewer(range, replicas, pods), api::v1::kMaxWorkerCountWhyLength));
  } else {
    change.set_why(absl::StrCat(running, " of ", replicas, " ", Plural(range), " run"));
  }
  const std::string why = change.why();
  AddChange(std::move(change), elastic);
  if (!counting) return std::nullopt;

  const std::string policy = absl::StrCat(range.source, " ", range.min, ":", range.max);
  const std::string members = Plural(range);
  ElasticEvent event;
  if (running > before) {
    event = {"Normal", kElasticGrowReason,
             absl::StrCat(running, " of ", replicas, " ", members, " run (", policy, "): the ",
                          members, " that joined train with the others")};
  } else if (running >= range.min) {
    event = {"Normal", kElasticShrinkReason,
             absl::StrCat(why, ": training goes on with ", running, " of ", replicas, " ", members,
                          " (", policy, ") until the others run again")};
  } else {
    event = {"Warning", kElasticShrinkReason,
             absl::StrCat(why, ": ", running, " of ", replicas, " ", members,
                          " run, fewer than the ", range.min, " that ", policy, " needs to train")};
  }
  return event;
}

}  // namespace coach::reconcile
