// A client program outside the coach tree: lists the jobs of a namespace.
// Built by tools/suites/sdk_consumers.sh twice: against `make install` (pkg-config) and
// from another Bazel workspace, to prove the SDK is usable both ways.

#include <iostream>

#include "sdk/cpp/job_builder.h"
#include "sdk/cpp/training_client.h"

int main(int argc, char** argv) {
  coach::sdk::ConnectionOptions options;
  if (argc > 1) options.server = argv[1];
  auto client = coach::sdk::TrainingClient::Create(options);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  auto job = coach::sdk::JobBuilder::PyTorch("from-sdk")
                 .Image("busybox")
                 .Command({"true"})
                 .Masters(1)
                 .Workers(1)
                 .Build();
  if (!job.ok()) {
    std::cerr << job.status() << "\n";
    return 1;
  }
  auto jobs = (*client)->ListAllJobs("default", "", 100);
  if (!jobs.ok()) {
    // No operator is listening in the build check; reaching the server is not the point.
    std::cout << "built " << job->metadata().name() << "; list: " << jobs.status().code() << "\n";
    return 0;
  }
  std::cout << "built " << job->metadata().name() << "; " << jobs->size() << " job(s)\n";
  return 0;
}
