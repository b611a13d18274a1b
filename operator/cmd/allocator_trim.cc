#include "operator/cmd/allocator_trim.h"

#include <utility>

namespace coach::cmd {

BurstTrimmer::BurstTrimmer(std::function<int64_t()> activity, std::function<void()> trim,
                           BurstTrimmerOptions options)
    : activity_(std::move(activity)), trim_(std::move(trim)), options_(options) {}

BurstTrimmer::~BurstTrimmer() { Stop(); }

void BurstTrimmer::Start() {
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(options_.interval)) Tick(activity_());
  });
}

void BurstTrimmer::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

bool BurstTrimmer::Tick(int64_t activity) {
  {
    absl::MutexLock lock(&mu_);
    if (activity == trimmed_at_) return false;  // nothing freed since the last trim
    const bool busy = activity != seen_;
    seen_ = activity;
    if (busy && ++busy_intervals_ < options_.max_busy_intervals) return false;
    trimmed_at_ = activity;
    busy_intervals_ = 0;
  }
  trim_();
  return true;
}

}  // namespace coach::cmd
