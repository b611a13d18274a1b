#include "launcher/notice_hold.h"

#include <csignal>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coach::launcher {

absl::StatusOr<absl::Duration> ParseNoticeWait(const EnvMap& env) {
  auto it = env.find(kNoticeWaitEnv);
  if (it == env.end() || it->second.empty()) return absl::ZeroDuration();
  int seconds = 0;
  if (!absl::SimpleAtoi(it->second, &seconds) || seconds < 0 || seconds > kMaxNoticeWaitSeconds) {
    return absl::InvalidArgumentError(absl::StrCat(
        kNoticeWaitEnv, "=", it->second, ": want whole seconds in 0..", kMaxNoticeWaitSeconds));
  }
  return absl::Seconds(seconds);
}

NoticeHold::NoticeHold(absl::Duration wait, NoticeSources sources, Clock* clock,
                       absl::Duration report_every)
    : wait_(wait), sources_(std::move(sources)), clock_(clock), report_every_(report_every) {}

std::optional<std::string> NoticeHold::Begin(int sig) {
  if (sig != SIGTERM || wait_ <= absl::ZeroDuration()) return std::nullopt;
  if (sources_.operator_stopping()) return std::nullopt;
  began_ = clock_->Now();
  newest_at_begin_ = sources_.newest_request();
  sources_.hurry(report_every_);
  answering_ = sources_.request_busy();
  if (answering_) {
    return std::string(
        "holding it until the workers answer the checkpoint request in hand (checkpoint on "
        "notice)");
  }
  return absl::StrCat("holding it up to ", absl::FormatDuration(wait_),
                      " for the operator's checkpoint request, should this be a notice");
}

bool NoticeHold::Holding() {
  const absl::Time now = clock_->Now();
  if (now >= began_ + wait_ + kMaxNoticeHold) return false;
  if (sources_.request_busy()) return true;
  // The request in hand, or one that came while the signal waited, was answered (or ran out
  // of time).
  if (answering_ || sources_.newest_request() > newest_at_begin_) return false;
  if (sources_.operator_stopping()) return false;
  return now < began_ + wait_;
}

}  // namespace coach::launcher
