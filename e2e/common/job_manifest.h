#pragma once

// JobManifest: a kubeflow.org/v1 job as the YAML manifest a user writes for `kubectl apply` or
// `coach submit`, for the end-to-end suites:
//
//   std::string yaml = JobManifest::PyTorch("mnist")
//                          .Replicas({{"Master", 1}, {"Worker", 2}}).RestartPolicy("Never")
//                          .Replica("Worker", 2).KwokExit(0, 3)
//                          .BackoffLimit(2)
//                          .Yaml();
//
// Replica()/Replicas() add replica types, or change the count of one added before; the
// replica setters after them (RestartPolicy, Image, Command, Env, Port, ContainerName,
// PodAnnotation, PodLabel, KwokExit) change the types that call named, and no other: above,
// both types restart Never and only the Workers exit. Each pod template has one container,
// named after the kind's default container ("pytorch", "tensorflow", ...), with image
// kDefaultImage.
//
// Only what is set is written, as by hand: no restartPolicy without RestartPolicy(), no
// runPolicy without a runPolicy setter, no pod metadata without annotations or labels. Nothing
// is checked either: a test can write what the operator must refuse (a bad name, a negative
// count, a type the kind does not have, a container without an image).
//
// Why not sdk::JobBuilder or reconcile/testing's JobBuilder: the first gives every replica type
// the same pod template (no per-type annotations or restart policies) and refuses invalid jobs;
// the second makes the reconciler's defaulted model, not a manifest.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/v1/training_job.pb.h"
#include "nlohmann/json.hpp"

namespace coach::e2e {

// An image no node pulls: kwok nodes never run it, and the local backend runs the command on
// this host.
inline constexpr char kDefaultImage[] = "coach.local/none";

class JobManifest {
 public:
  JobManifest(api::v1::JobKind kind, std::string name);
  static JobManifest PyTorch(std::string name) {
    return JobManifest(api::v1::PYTORCH_JOB, std::move(name));
  }

  // metadata.
  JobManifest& Namespace(const std::string& namespace_);
  JobManifest& Annotation(const std::string& key, const std::string& value);

  // Replica types: `type` (CamelCase, as in the manifest) with `count` replicas.
  JobManifest& Replica(const std::string& type, int count);
  JobManifest& Replicas(const std::vector<std::pair<std::string, int>>& types);

  // Of the replica types of the latest Replica()/Replicas().
  JobManifest& RestartPolicy(const std::string& policy);
  JobManifest& Image(const std::string& image);  // "": the container has no image
  JobManifest& ContainerName(const std::string& name);
  JobManifest& Command(const std::vector<std::string>& command);
  JobManifest& Env(const std::string& name, const std::string& value);
  JobManifest& Port(const std::string& name, int container_port);
  JobManifest& PodAnnotation(const std::string& key, const std::string& value);
  JobManifest& PodLabel(const std::string& key, const std::string& value);
  // On a kwok node of tools/testenv, the containers exit with `exit_code` `run_seconds` after
  // they started (the coach.test/* annotations of tools/testenv/stages/pod-exit.yaml); a pod
  // without them stays Running. The first form writes no run-seconds (0: at once).
  JobManifest& KwokExit(int exit_code);
  JobManifest& KwokExit(int exit_code, int run_seconds);

  // spec.runPolicy.
  JobManifest& BackoffLimit(int limit);
  JobManifest& ActiveDeadlineSeconds(int64_t seconds);
  JobManifest& TtlSecondsAfterFinished(int seconds);
  JobManifest& CleanPodPolicy(const std::string& policy);
  JobManifest& Suspend(bool suspend);
  JobManifest& ManagedBy(const std::string& manager);
  // spec.runPolicy.schedulingPolicy.
  JobManifest& MinAvailable(int count);
  JobManifest& Queue(const std::string& queue);
  JobManifest& PriorityClass(const std::string& priority_class);
  JobManifest& ScheduleTimeoutSeconds(int seconds);

  // Fields of one kind's spec.
  JobManifest& SlotsPerWorker(int slots);  // MPIJob
  JobManifest& ElasticPolicy(const std::string& rdzv_backend, int min_replicas,
                             int max_replicas);  // PyTorchJob

  nlohmann::json Json() const;
  // Block-style YAML of Json(), ending in a newline, without a "---" line.
  std::string Yaml() const;

 private:
  struct ReplicaType {
    std::string type;
    int count = 0;
    std::string restart_policy;
    std::string container_name;
    nlohmann::json container = nlohmann::json::object();  // without its name
    nlohmann::json pod_metadata = nlohmann::json::object();
  };
  // Applies `change` to each replica type of the latest Replica()/Replicas().
  template <typename Change>
  JobManifest& ForLatest(Change change);
  nlohmann::json& RunPolicy() { return spec_["runPolicy"]; }

  api::v1::JobKind kind_;
  nlohmann::json metadata_ = nlohmann::json::object();
  nlohmann::json spec_ = nlohmann::json::object();  // without the replica specs
  std::vector<ReplicaType> replicas_;               // in the order they were added
  std::vector<size_t> latest_;                      // what the latest Replicas() named
};

}  // namespace coach::e2e
