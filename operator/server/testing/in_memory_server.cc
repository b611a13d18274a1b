#include "operator/server/testing/in_memory_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/testing/eventually.h"

namespace coach::server::testing {

InMemoryServer::InMemoryServer() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> recorders;
  recorders.push_back(recorder_.Factory());
  builder.experimental().SetInterceptorCreators(std::move(recorders));
  server_ = builder.BuildAndStart();
  EXPECT_NE(server_, nullptr) << "the in-memory server did not start";
  address_ = absl::StrCat("127.0.0.1:", port);
}

InMemoryServer::~InMemoryServer() {
  for (std::thread& change : changes_) change.join();
  // A test's hook may name its own locals: the streams ended below must not run it.
  recorder_.OnAnswered(nullptr);
  service_.BeginShutdown();
  watchers_.Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

void InMemoryServer::AddJob(const api::v1::TrainingJob& job) {
  // The store stamps the creation time from its clock.
  if (job.metadata().has_creation_timestamp()) {
    clock_.Set(absl::FromUnixSeconds(job.metadata().creation_timestamp().seconds()));
  }
  absl::StatusOr<api::v1::TrainingJob> stored = store_.Create(job);
  EXPECT_TRUE(stored.ok()) << stored.status();
}

void InMemoryServer::SetStatus(const std::string& ns, const std::string& name,
                               const api::v1::TrainingJobStatus& status) {
  absl::StatusOr<api::v1::TrainingJob> job = store_.Get({ns, name});
  ASSERT_TRUE(job.ok()) << job.status();
  *job->mutable_status() = status;
  absl::StatusOr<api::v1::TrainingJob> updated = store_.UpdateStatus(*job);
  ASSERT_TRUE(updated.ok()) << updated.status();
  watchers_.Publish(core::WatchEventType::kModified, *updated);
}

void InMemoryServer::WhenWatched(std::function<void()> change) {
  changes_.emplace_back([this, change = std::move(change)] {
    if (!coach::testing::Eventually([this] { return watchers_.size() > 0; }, absl::Seconds(10))) {
      ADD_FAILURE() << "no WatchJobs stream subscribed";
      return;
    }
    change();
  });
}

}  // namespace coach::server::testing
