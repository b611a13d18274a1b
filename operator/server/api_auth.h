#pragma once

// ApiAuth: who is calling the gRPC API, and may they do this? The service asks it before
// every call; the answer's kind depends on the operator's --api-auth mode:
//   none        everybody is the anonymous user and may do everything (loopback, tests)
//   token       one shared bearer token (TokenAuth); whoever holds it may do everything
//   kubernetes  the caller's own Kubernetes bearer token, checked with a TokenReview, and
//               every call checked with SubjectAccessReviews (kube_api_auth.h), so nobody
//               does through coach more than Kubernetes RBAC lets them do themselves.
//
// Error codes:
//   Unauthenticated   Authenticate: no, malformed or rejected credentials. The message never
//                     contains the token.
//   PermissionDenied  Authorize: the caller may not; the message names the user, the verb, the
//                     resource and the namespace, like the API server's "forbidden".
//   Unavailable       the authority (API server) could not answer; never read as "allowed".

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/server/token_auth.h"

namespace coach::server {

// The authenticated caller, as a TokenReview reports it.
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// One SubjectAccessReview's resourceAttributes. An empty namespace_ with a namespaced
// resource means every namespace (cluster-wide rights); an empty name, every object.
struct ResourceAttributes {
  std::string verb;         // "create", "get", "list", "watch", "delete", "patch"
  std::string group;        // "kubeflow.org", "" for the core group
  std::string resource;     // "pytorchjobs", "pods", "events"
  std::string subresource;  // "log" or ""
  std::string namespace_;
  std::string name;

  // "pytorchjobs.kubeflow.org", "pods/log": how the API server names it in messages.
  std::string GroupResource() const;
  bool operator==(const ResourceAttributes& o) const {
    return verb == o.verb && group == o.group && resource == o.resource &&
           subresource == o.subresource && namespace_ == o.namespace_ && name == o.name;
  }
};

// The PermissionDenied message for `user` refused `attrs`, in the API server's words:
// `user "system:serviceaccount:a:team-a" cannot create resource "pytorchjobs" in API group
// "kubeflow.org" in the namespace "b"` (`at the cluster scope` for every namespace).
std::string ForbiddenMessage(const std::string& user, const ResourceAttributes& attrs,
                             const std::string& reason = "");

class ApiAuth {
 public:
  virtual ~ApiAuth() = default;

  // `authorization_header`: the `authorization` metadata, or nullptr when absent.
  // Unauthenticated, Unavailable. Thread-safe.
  virtual absl::StatusOr<UserInfo> Authenticate(const std::string* authorization_header) = 0;

  // OK when `user` may do `attrs`. PermissionDenied, Unavailable. Thread-safe.
  virtual absl::Status Authorize(const UserInfo& user, const ResourceAttributes& attrs) = 0;

  // False when Authorize allows everything (none, token): the service then skips the
  // lookups it needs only to ask (the kind of a job named by namespace and name).
  virtual bool Authorizes() const = 0;

  // "none", "token", "kubernetes": for the startup log line.
  virtual std::string Mode() const = 0;
};

// --api-auth=none and --api-auth=token: the shared token (none when it is empty); every
// authenticated caller is "coach:token" (or "system:anonymous") and may do everything.
class SharedTokenAuth final : public ApiAuth {
 public:
  explicit SharedTokenAuth(TokenAuth token) : token_(std::move(token)) {}
  absl::StatusOr<UserInfo> Authenticate(const std::string* authorization_header) override;
  absl::Status Authorize(const UserInfo&, const ResourceAttributes&) override {
    return absl::OkStatus();
  }
  bool Authorizes() const override { return false; }
  std::string Mode() const override { return token_.enabled() ? "token" : "none"; }

 private:
  const TokenAuth token_;
};

}  // namespace coach::server
