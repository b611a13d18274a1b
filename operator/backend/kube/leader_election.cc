#include "operator/backend/kube/leader_election.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::optional<absl::Time> ParseMicroTime(const json& spec, const char* field) {
  auto it = spec.find(field);
  if (it == spec.end() || !it->is_string()) return std::nullopt;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, it->get<std::string>(), &t, &err)) return std::nullopt;
  return t;
}

std::string HolderOf(const json& spec) {
  auto it = spec.find("holderIdentity");
  return it != spec.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string DefaultIdentity() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    snprintf(host, sizeof(host), "coach-operator");
  }
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrFormat("%s_%016x", host, r);
}

absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.lease_namespace.empty()) return absl::InvalidArgumentError("lease namespace: required");
  if (c.lease_name.empty()) return absl::InvalidArgumentError("lease name: required");
  if (c.identity.empty()) return absl::InvalidArgumentError("identity: required");
  if (c.retry_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("retry period: must be positive");
  }
  if (c.renew_deadline <= c.retry_period * 1.2) {
    return absl::InvalidArgumentError(
        absl::StrCat("renew deadline (", absl::FormatDuration(c.renew_deadline),
                     ") must be greater than 1.2 x the retry period (",
                     absl::FormatDuration(c.retry_period), ")"));
  }
  if (c.lease_duration <= c.renew_deadline) {
    return absl::InvalidArgumentError(absl::StrCat("lease duration (",
                                                   absl::FormatDuration(c.lease_duration),
                                                   ") must be greater than the renew deadline (",
                                                   absl::FormatDuration(c.renew_deadline), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(k8s::KubeClient* client,
                                                                     LeaderElectionConfig config) {
  if (client == nullptr) return absl::InvalidArgumentError("client: null");
  if (config.identity.empty()) config.identity = DefaultIdentity();
  if (absl::Status s = ValidateLeaderElectionConfig(config); !s.ok()) return s;
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config)));
}

LeaderElector::LeaderElector(k8s::KubeClient* client, LeaderElectionConfig config)
    : client_(client),
      config_(std::move(config)),
      clock_(config_.clock != nullptr ? config_.clock : ::coach::Clock::Real()) {}

LeaderElector::~LeaderElector() { Stop(); }

std::string LeaderElector::observed_holder() const {
  absl::MutexLock lock(&mu_);
  return observed_holder_;
}

json LeaderElector::LeaseSpec(absl::Time now, absl::Time acquire_time, int64_t transitions) const {
  const int64_t seconds = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(config_.lease_duration))));
  return {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", seconds},
          {"acquireTime", FormatMicroTime(acquire_time)},
          {"renewTime", FormatMicroTime(now)},
          {"leaseTransitions", transitions}};
}

absl::StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_->Now();
  const k8s::ResourceDescriptor leases = k8s::resources::Leases();
  std::string new_holder;
  bool holder_changed = false;
  auto observe = [&](const json& spec) {
    absl::MutexLock lock(&mu_);
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_time_ = now;
      const std::string holder = HolderOf(spec);
      if (holder != observed_holder_) {
        observed_holder_ = holder;
        new_holder = holder;
        holder_changed = true;
      }
    }
  };
  auto tell = [&] {
    if (holder_changed && config_.on_new_leader) config_.on_new_leader(new_holder);
  };

  absl::StatusOr<json> got = client_->Get(leases, config_.lease_namespace, config_.lease_name);
  if (absl::IsNotFound(got.status())) {
    json lease = {
        {"apiVersion", leases.ApiVersion()},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", LeaseSpec(now, now, 0)}};
    absl::StatusOr<json> created = client_->Create(leases, config_.lease_namespace, lease);
    if (absl::IsAlreadyExists(created.status())) return false;  // another candidate was quicker
    if (!created.ok()) return created.status();
    observe(created->value("spec", json::object()));
    tell();
    return true;
  }
  if (!got.ok()) return got.status();

  json lease = std::move(got).value();
  const json spec = lease.value("spec", json::object());
  observe(spec);
  tell();
  const std::string holder = HolderOf(spec);
  absl::Duration duration = config_.lease_duration;
  if (auto it = spec.find("leaseDurationSeconds"); it != spec.end() && it->is_number_integer()) {
    duration = absl::Seconds(it->get<int64_t>());
  }
  absl::Time observed_at;
  {
    absl::MutexLock lock(&mu_);
    observed_at = observed_time_;
  }
  const bool expired = observed_at + duration <= now;
  if (!holder.empty() && holder != config_.identity && !expired) return false;

  int64_t transitions = 0;
  if (auto it = spec.find("leaseTransitions"); it != spec.end() && it->is_number_integer()) {
    transitions = it->get<int64_t>();
  }
  absl::Time acquire_time = now;
  if (holder == config_.identity) {
    acquire_time = ParseMicroTime(spec, "acquireTime").value_or(now);
  } else {
    ++transitions;
  }
  lease["spec"] = LeaseSpec(now, acquire_time, transitions);
  // Conditional on the resourceVersion we read: of two candidates, one wins.
  absl::StatusOr<json> updated = client_->Update(leases, config_.lease_namespace, lease);
  if (absl::IsAborted(updated.status())) return false;
  if (!updated.ok()) return updated.status();
  holder_changed = false;
  observe(updated->value("spec", json::object()));
  tell();
  return true;
}

void LeaderElector::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stop_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (leading_.load()) {
    if (config_.release_on_stop) {
      if (absl::Status s = Release(); !s.ok()) {
        spdlog::warn("leader election: releasing lease {}/{}: {}", config_.lease_namespace,
                     config_.lease_name, s.ToString());
      }
    }
    SetLeading(false);
  }
}

bool LeaderElector::Wait(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  return !mu_.AwaitWithTimeout(absl::Condition(&stop_), d);
}

void LeaderElector::SetLeading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  if (leading) {
    spdlog::info("leader election: {} now leads (lease {}/{})", config_.identity,
                 config_.lease_namespace, config_.lease_name);
    if (config_.on_started_leading) config_.on_started_leading();
  } else {
    spdlog::warn("leader election: {} stopped leading (lease {}/{})", config_.identity,
                 config_.lease_namespace, config_.lease_name);
    if (config_.on_stopped_leading) config_.on_stopped_leading();
  }
}

void LeaderElector::Run() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(1.0, 1.2);
  while (true) {
    absl::StatusOr<bool> won = TryAcquireOrRenew();
    if (!won.ok()) {
      spdlog::warn("leader election: lease {}/{}: {}", config_.lease_namespace, config_.lease_name,
                   won.status().ToString());
    }
    if (won.ok() && *won) {
      SetLeading(true);
      absl::Time last_renew = clock_->Now();
      while (Wait(config_.retry_period)) {
        absl::StatusOr<bool> renewed = TryAcquireOrRenew();
        if (renewed.ok() && *renewed) {
          last_renew = clock_->Now();
          continue;
        }
        if (renewed.ok()) {
          spdlog::warn("leader election: lease {}/{} taken by {}", config_.lease_namespace,
                       config_.lease_name, observed_holder());
          break;
        }
        spdlog::warn("leader election: renewing lease {}/{}: {}", config_.lease_namespace,
                     config_.lease_name, renewed.status().ToString());
        if (clock_->Now() - last_renew >= config_.renew_deadline) break;
      }
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return;  // Stop() releases and tells
      }
      SetLeading(false);
    }
    if (!Wait(config_.retry_period * jitter(rng))) return;
  }
}

absl::Status LeaderElector::Release() {
  const k8s::ResourceDescriptor leases = k8s::resources::Leases();
  absl::StatusOr<json> got = client_->Get(leases, config_.lease_namespace, config_.lease_name);
  if (!got.ok()) return got.status();
  json lease = std::move(got).value();
  json& spec = lease["spec"];
  if (HolderOf(spec) != config_.identity) return absl::OkStatus();
  const std::string now = FormatMicroTime(clock_->Now());
  spec.erase("holderIdentity");
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = now;
  spec["acquireTime"] = now;
  return client_->Update(leases, config_.lease_namespace, lease).status();
}

}  // namespace coach::backend::kube
