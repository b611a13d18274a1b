#pragma once

// A KubeClient that hands every call to another one: a test decorates a real or fake client by
// overriding only the calls it watches, delays or counts. Called(verb) runs before each call.

#include <string>

#include "absl/strings/string_view.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::kubeclient::testing {

class ForwardingKubeClient : public KubeClient {
 public:
  explicit ForwardingKubeClient(KubeClient* inner) : inner_(inner) {}

  absl::StatusOr<nlohmann::json> Create(const ResourceDescriptor& r, const std::string& ns,
                                        const nlohmann::json& o) override {
    Called("create");
    return inner_->Create(r, ns, o);
  }
  absl::StatusOr<nlohmann::json> Get(const ResourceDescriptor& r, const std::string& ns,
                                     const std::string& n) override {
    Called("get");
    return inner_->Get(r, ns, n);
  }
  absl::StatusOr<ListResult> List(const ResourceDescriptor& r, const std::string& ns,
                                  const ListOptions& o) override {
    Called("list");
    return inner_->List(r, ns, o);
  }
  absl::Status Watch(const ResourceDescriptor& r, const std::string& ns, const WatchOptions& o,
                     const WatchHandler& h) override {
    Called("watch");
    return inner_->Watch(r, ns, o, h);
  }
  absl::StatusOr<nlohmann::json> Update(const ResourceDescriptor& r, const std::string& ns,
                                        const nlohmann::json& o) override {
    Called("update");
    return inner_->Update(r, ns, o);
  }
  absl::StatusOr<nlohmann::json> Patch(const ResourceDescriptor& r, const std::string& ns,
                                       const std::string& n, PatchType t,
                                       const nlohmann::json& p) override {
    Called("patch");
    return inner_->Patch(r, ns, n, t, p);
  }
  absl::Status Delete(const ResourceDescriptor& r, const std::string& ns, const std::string& n,
                      const DeleteOptions& o) override {
    Called("delete");
    return inner_->Delete(r, ns, n, o);
  }
  absl::StatusOr<nlohmann::json> GetStatus(const ResourceDescriptor& r, const std::string& ns,
                                           const std::string& n) override {
    Called("getstatus");
    return inner_->GetStatus(r, ns, n);
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceDescriptor& r, const std::string& ns,
                                              const nlohmann::json& o) override {
    Called("updatestatus");
    return inner_->UpdateStatus(r, ns, o);
  }
  absl::StatusOr<nlohmann::json> PatchStatus(const ResourceDescriptor& r, const std::string& ns,
                                             const std::string& n, PatchType t,
                                             const nlohmann::json& p) override {
    Called("patchstatus");
    return inner_->PatchStatus(r, ns, n, t, p);
  }
  absl::Status StreamLogs(const std::string& ns, const std::string& pod, const LogOptions& o,
                          const LogHandler& h) override {
    Called("logs");
    return inner_->StreamLogs(ns, pod, o, h);
  }

 protected:
  virtual void Called(absl::string_view /*verb*/) {}
  KubeClient* inner() const { return inner_; }

 private:
  KubeClient* inner_;
};

}  // namespace coach::kubeclient::testing
