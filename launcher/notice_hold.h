#pragma once

// NoticeHold: what coach-launch does with a SIGTERM when checkpoint on notice may apply. A pod
// evicted through the Eviction API (a drain, Karpenter's disruption of a node) gets SIGTERM as
// the operator learns of the eviction; passed on at once, the workers would end before the
// operator's checkpoint request (checkpoint_relay.h) reaches them. So the launcher holds the
// signal back from its workers, reports at once and every `report_every` (the answers carry the
// request), and passes it on when
//   - a request it was given while holding (or held already) has been answered by the workers,
//     or reached its deadline;
//   - the operator says it deletes the pod itself (ReportProgressResponse.stopping: a restart,
//     a suspension), so no request is coming;
//   - `wait` passed without a request (the signal was no notice: a user's delete, the job
//     deleted), or `wait` plus kMaxNoticeHold in any case.
// The kubelet's own deadline (the pod's termination grace) bounds it all: the launcher does
// not outlive it. On by COACH_NOTICE_WAIT (seconds; operator/reconcile/progress_report_env.h
// sets it for jobs that restart as a whole); without progress reports, nothing is held.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "launcher/launch_config.h"
#include "launcher/supervisor.h"

namespace coach::launcher {

inline constexpr char kNoticeWaitEnv[] = "COACH_NOTICE_WAIT";
inline constexpr int kMaxNoticeWaitSeconds = 60;
// The operator's requests have deadlines of at most 120 s.
inline constexpr absl::Duration kMaxNoticeHold = absl::Seconds(120);

// COACH_NOTICE_WAIT: unset or empty: zero (never hold); else whole seconds in
// 0..kMaxNoticeWaitSeconds. InvalidArgument naming the variable otherwise.
absl::StatusOr<absl::Duration> ParseNoticeWait(const EnvMap& env);

// What the hold looks at; each must be thread-safe and must not block.
struct NoticeSources {
  std::function<void(absl::Duration every)> hurry;  // ProgressReporter::Hurry
  std::function<bool()> operator_stopping;          // ProgressReporter::OperatorStopping
  std::function<bool()> request_busy;               // CheckpointRelay::Busy
  std::function<int64_t()> newest_request;          // CheckpointRelay::NewestId
};

class NoticeHold : public SignalHold {
 public:
  // `clock` is not owned.
  NoticeHold(absl::Duration wait, NoticeSources sources, Clock* clock = Clock::Real(),
             absl::Duration report_every = absl::Milliseconds(250));

  std::optional<std::string> Begin(int sig) override;
  bool Holding() override;

 private:
  const absl::Duration wait_;
  const NoticeSources sources_;
  Clock* const clock_;
  const absl::Duration report_every_;
  absl::Time began_;
  int64_t newest_at_begin_ = 0;
  bool answering_ = false;  // a request was in hand at Begin
};

}  // namespace coach::launcher
