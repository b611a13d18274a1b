#pragma once

// An elastic job as coach runs it: a PyTorchJob with elasticPolicy (its Workers), or a TrainJob
// on a torch runtime annotated coach.dev/elastic-min-nodes (its `node` pods). torchrun's agents
// rendezvous again when a member is lost and when one joins, so under the default restart scope
// a lost member is no restart of the job while at least the minimum run: the job stays
// Running, the lost member's pod is recreated as its restartPolicy says, waits for capacity like
// any pod, and joins the others when it runs. status.coach.elastic says how many train and when
// that changed; each change after the job first ran at its full size is also an event. Below,
// "Workers" are the members of whichever replica type is elastic (ElasticRange::type).
//
// Pure: no I/O, no clock.

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

inline constexpr char kElasticShrinkReason[] = "ElasticShrink";
inline constexpr char kElasticGrowReason[] = "ElasticGrow";

// The rendezvous heartbeat of elastic torchrun agents (PET_RDZV_CONF) unless the job sets its
// own: a lost node leaves the rendezvous after 3 missed beats of 1 s, not torch's 3 of 5 s.
inline constexpr char kElasticKeepAliveConf[] = "keep_alive_interval=1";

struct ElasticRange {
  int min = 0;
  int max = 0;
  // The replica type whose pods train elastically: a PyTorchJob's Worker, a TrainJob's node.
  std::string type = "Worker";
  // What asked for the range, as messages name it.
  std::string source = "elasticPolicy";
};

// The job's elastic range, if it has one:
// - a PyTorchJob with elasticPolicy and Workers: minReplicas and maxReplicas as torchrun's
//   --nnodes gets them (pytorch_env.cc: one bound copies the other; with neither, the Worker
//   replicas);
// - a TrainJob as the plan expands it (replica type `node`) with a coach.dev/elastic-min-nodes
//   that is an integer: that many to the node pods' count (admission and the plan refuse any
//   other value: operator/trainer/elastic_nodes.h).
std::optional<ElasticRange> ElasticWorkers(const model::Job& job);

// The pods of `range.type` in `pods` that run now: Running and not being deleted.
int RunningWorkers(const ElasticRange& range, const std::vector<model::ObservedPod>& pods);

// With `running` Workers left, the others train on without the lost ones.
bool AbsorbsWorkerLoss(const ElasticRange& range, int running);

struct ElasticEvent {
  std::string type;
  std::string reason;
  std::string message;
};

// Brings status.coach.elastic up to date with `pods` (the job's pods now) at `now`: the range,
// the Workers running and, once the job has run all `replicas` Workers, each change of that
// number with the step reached (the newest report) and why, keeping the first and the
// latest changes (api/v1/coach_status.h). Returns the event of a change, if there was one.
// Once any of them has finished (Succeeded) nothing changes: the others finishing after it is the
// end of training, not a loss.
// A suspended job's Workers are none: a change once counting began. After it (as after any
// change to none) counting starts again once all the Workers run.
void NoteSuspended(absl::Time now, model::JobStatus& status);

std::optional<ElasticEvent> NoteWorkers(const ElasticRange& range, int replicas,
                                        const std::vector<model::ObservedPod>& pods, absl::Time now,
                                        model::JobStatus& status);

}  // namespace coach::reconcile
