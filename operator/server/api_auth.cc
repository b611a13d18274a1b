#include "operator/server/api_auth.h"

#include "absl/strings/str_cat.h"

namespace coach::server {

std::string ResourceAttributes::GroupResource() const {
  std::string r = group.empty() ? resource : absl::StrCat(resource, ".", group);
  if (!subresource.empty()) absl::StrAppend(&r, "/", subresource);
  return r;
}

std::string ForbiddenMessage(const std::string& user, const ResourceAttributes& attrs,
                             const std::string& reason) {
  // The API server's wording (k8s.io/apiserver's forbidden()), so that people and scripts
  // that know kubectl's message read this one the same way.
  std::string resource = attrs.resource;
  if (!attrs.subresource.empty()) absl::StrAppend(&resource, "/", attrs.subresource);
  std::string m = absl::StrCat("user \"", user, "\" cannot ", attrs.verb, " resource \"", resource,
                               "\" in API group \"", attrs.group, "\"");
  if (attrs.namespace_.empty()) {
    absl::StrAppend(&m, " at the cluster scope");
  } else {
    absl::StrAppend(&m, " in the namespace \"", attrs.namespace_, "\"");
  }
  if (!reason.empty()) absl::StrAppend(&m, ": ", reason);
  return m;
}

absl::StatusOr<UserInfo> SharedTokenAuth::Authenticate(const std::string* authorization_header) {
  if (absl::Status s = token_.Check(authorization_header); !s.ok()) return s;
  UserInfo user;
  user.username = token_.enabled() ? "coach:token" : "system:anonymous";
  return user;
}

}  // namespace coach::server
