#pragma once

// Live progress of a job for `coach submit --wait` and `coach wait`: on a terminal one
// line rewritten in place; otherwise a plain line each time the summary changes, so logs
// of scripted runs stay readable.

#include <ostream>
#include <string>

#include "api/v1/training_job.pb.h"

namespace coach::cli {

// "default/mnist Running: 1 starting, 2 running, 0 succeeded, 0 failed (of 3)"; starting
// counts the replicas the spec asks for that are not yet active or finished.
std::string ProgressLine(const api::v1::TrainingJob& job);

class ProgressReporter {
 public:
  ProgressReporter(std::ostream& out, bool interactive) : out_(out), interactive_(interactive) {}
  // Shows `job`'s progress (nothing when the line did not change).
  void Update(const api::v1::TrainingJob& job);
  // Ends the updating line so later output starts on a fresh one.
  void Finish();

 private:
  std::ostream& out_;
  bool interactive_;
  std::string last_;
  bool line_open_ = false;
};

}  // namespace coach::cli
