#pragma once

// What every timed run watches and reads, coach's and the floor's alike, so that both are
// measured the same way: watches counting the pods, the services and the jobs with a status in
// the run's namespace; the API server's requests and the control plane's CPU over the span from
// Start() to Finish().
//
// Not thread-safe.

#include <cstddef>
#include <map>
#include <string>

#include "bench/controlplane/speed_result.h"
#include "bench/controlplane/watch_counter.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

class TimedRun {
 public:
  // Opens the watches of ns and waits until they are open (300 ms), so that none misses the
  // run's first objects. `testenv_dir` holds the control plane's pid files.
  TimedRun(kubeclient::RestKubeClient* client, std::string testenv_dir, const std::string& ns,
           size_t pods, size_t services, const kubeclient::ResourceDescriptor& jobs,
           size_t job_count);

  // Reads the API server's request counts and the control plane's CPU, then starts the clock;
  // returns that start (NowS()). Call just before the first POST.
  double Start();
  // True once every pod and service was seen; false when `deadline` (NowS()) passed first.
  bool WaitForObjects(double deadline);
  // Returns once every job's status was seen or `deadline` (NowS()) passed.
  void WaitForStatuses(double deadline);
  // The span's figures into *r, `ok` as WaitForObjects said: wall time (until now when not
  // ok), milestones, end state, the counts, the control plane's CPU and the requests since
  // Start(), the load.
  void Finish(bool ok, SpeedResult* r);

 private:
  kubeclient::RestKubeClient* client_;
  std::string testenv_dir_;
  size_t pod_target_, svc_target_;
  Counter pods_, svcs_, statuses_;
  std::map<std::string, double> requests_before_;
  ControlPlaneCpu cpu_before_;
  double t0_ = 0;
};

}  // namespace coach::bench::controlplane
