#pragma once

// Plain-text tables as kubectl prints them (left-aligned columns, three spaces apart) and
// the per-job cells `coach list` and `coach get` show.

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace coach::cli {

class TablePrinter {
 public:
  explicit TablePrinter(std::vector<std::string> headers);
  // A row shorter than the headers is padded with empty cells; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Headers, then the rows; the last column is not padded (no trailing spaces).
  void Print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// kubectl's short human duration: "0s".."59s", "1m".."59m", "1h".."23h", "1d".."364d",
// then years ("2y"). Negative durations (clock skew) print as "0s".
std::string FormatAge(absl::Duration age);
// Age of `timestamp` at `now`; "<unknown>" when the timestamp is unset.
std::string FormatAgeSince(const google::protobuf::Timestamp& timestamp, absl::Time now);

// "PyTorchJob", ...; "Unknown" for an unspecified kind.
std::string KindName(const api::v1::TrainingJob& job);
// "active/total": pods active now over the replicas the spec asks for (an unset count
// counts as 1, upstream's default).
std::string ReplicaSummary(const api::v1::TrainingJob& job);

// What a job's row says besides its state: while it waits (Created), why, as the operator
// wrote it into the Created condition (its replicas waiting for a node: which NodePool,
// NodeClaim or Karpenter's reason); Failed or Restarting: that condition's message; else "".
std::string StateMessage(const api::v1::TrainingJob& job);

// The training's progress as status.coach.progress holds it: the step of the last report, and
// how long ago it was made (FormatAge); "-" when the job reported none.
std::string ProgressStep(const api::v1::TrainingJob& job);
std::string LastProgressAge(const api::v1::TrainingJob& job, absl::Time now);

// The columns of `coach list`/`coach get`: NAME, KIND, STATE, REPLICAS, AGE, STEP,
// LAST-PROGRESS, MESSAGE (NAMESPACE first when with_namespace). MESSAGE, free text, stays last.
std::vector<std::string> JobTableHeaders(bool with_namespace);
std::vector<std::string> JobTableRow(const api::v1::TrainingJob& job, absl::Time now,
                                     bool with_namespace);

}  // namespace coach::cli
