#pragma once

// One timed run of an operator under test: it starts, the harness submits the jobs, and the
// clock runs from the first POST until a watch has seen every pod and every headless service
// the operator made. Its CPU (utime+stime from /proc) is read over the same span: the
// submission is the harness's, in the wall time but not in the operator's CPU.

#include <string>
#include <vector>

#include "bench/controlplane/flags.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/installation.h"
#include "bench/controlplane/operator_under_test.h"
#include "bench/controlplane/speed_result.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// The operator under test (`kind`, with `extra` flags, its log named by `label`) owning `jobs`
// jobs (TrainJobs with f.train_jobs, else PyTorchJobs; f.replicas each) submitted into the fresh
// namespace ns, which is deleted afterwards. With an `installation` (the comparisons with
// upstream), the operator's own CRDs are installed first, and for upstream its validating
// webhook, checked to refuse a job it must refuse before anything is measured, and removed once
// it has stopped. The namespace's pods, services and job statuses are captured into *captured
// when non-null. A run that could not start or did not see every object has ok false (why is
// printed to stderr).
SpeedResult RunOperator(const Flags& f, kubeclient::RestKubeClient* client,
                        Installation* installation, OperatorKind kind, const std::string& ns,
                        const std::vector<std::string>& extra, const std::string& label, int jobs,
                        std::vector<Item>* captured);

// RunOperator of coach on the CRDs already installed.
SpeedResult RunCoach(const Flags& f, kubeclient::RestKubeClient* client, const std::string& ns,
                     const std::vector<std::string>& extra, const std::string& label, int jobs,
                     std::vector<Item>* captured);

}  // namespace coach::bench::controlplane
