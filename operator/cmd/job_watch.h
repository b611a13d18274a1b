// On Kubernetes, the jobs that anyone (kubectl included) creates, changes or deletes: each is
// reconciled and told to the API's watchers. A deleted job's controller pass finds it gone and
// forgets it; its pods and services go with it by owner reference (garbage collector), and
// the history keeps what it can of it (a job deleted with kubectl never passes JobService).

#pragma once

#include "absl/status/status.h"
#include "operator/backend/kube/cr_job_store.h"
#include "operator/core/controller.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/history/log_keeper.h"

namespace coach::cmd {

// Starts `store`'s change feed into `controller` and `watchers` (both must outlive it, until
// store->StopWatching()), then waits up to 60 s for every kind to be listed: past that, warns
// and goes on. The error's message is the line to log.
// `history` may be null.
absl::Status WatchJobChanges(backend::kube::CrJobStore* store, core::Controller* controller,
                             core::WatchBroadcaster* watchers, history::LogKeeper* history);

}  // namespace coach::cmd
