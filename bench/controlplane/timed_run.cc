#include "bench/controlplane/timed_run.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "bench/local/bench_util.h"

namespace coach::bench::controlplane {

namespace res = coach::kubeclient::resources;

TimedRun::TimedRun(kubeclient::RestKubeClient* client, std::string testenv_dir,
                   const std::string& ns, size_t pods, size_t services,
                   const kubeclient::ResourceDescriptor& jobs, size_t job_count)
    : client_(client),
      testenv_dir_(std::move(testenv_dir)),
      pod_target_(pods),
      svc_target_(services),
      pods_(client, res::Pods(), ns, pods),
      svcs_(client, res::Services(), ns, services),
      statuses_(client, jobs, ns, job_count, HasConditions) {
  usleep(300 * 1000);
}

double TimedRun::Start() {
  requests_before_ = ApiRequests(client_);
  cpu_before_ = ReadControlPlaneCpu(testenv_dir_);
  t0_ = NowS();
  return t0_;
}

bool TimedRun::WaitForObjects(double deadline) {
  return WaitFor(pods_, svcs_, pod_target_, svc_target_, deadline);
}

void TimedRun::WaitForStatuses(double deadline) {
  while (statuses_.reached_at() == 0 && NowS() < deadline) usleep(20 * 1000);
}

void TimedRun::Finish(bool ok, SpeedResult* r) {
  r->ok = ok;
  // The end state is reached once every pod and service was seen and every job's status too.
  if (pods_.reached_at() > 0 && svcs_.reached_at() > 0 && statuses_.reached_at() > 0) {
    r->end_state_s =
        std::max({pods_.reached_at(), svcs_.reached_at(), statuses_.reached_at()}) - t0_;
  }
  r->control_plane = ReadControlPlaneCpu(testenv_dir_) - cpu_before_;
  r->requests = RequestDelta(requests_before_, ApiRequests(client_));
  r->wall_s = ok ? std::max(pods_.reached_at(), svcs_.reached_at()) - t0_ : NowS() - t0_;
  const double first = std::min(pods_.first_at() > 0 ? pods_.first_at() : 1e300,
                                svcs_.first_at() > 0 ? svcs_.first_at() : 1e300);
  r->first_s = first < 1e300 ? first - t0_ : 0;
  r->half_s = pods_.half_at() > 0 && svcs_.half_at() > 0
                  ? std::max(pods_.half_at(), svcs_.half_at()) - t0_
                  : 0;
  r->pods = pods_.count();
  r->services = svcs_.count();
  r->load = LoadAverage();
}

}  // namespace coach::bench::controlplane
