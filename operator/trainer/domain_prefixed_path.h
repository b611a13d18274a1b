#pragma once

// apimachinery's validation.IsDomainPrefixedPath (v0.36): `<RFC 1123 subdomain>/<HTTP path>`,
// as upstream Trainer requires of each runtimePatches[].manager.

#include <string>
#include <vector>

#include "operator/trainer/field_error.h"

namespace coach::trainer {

// The errors upstream reports for `value` at `path`; empty when it is a domain-prefixed path.
std::vector<FieldError> DomainPrefixedPathErrors(const std::string& path, const std::string& value);

}  // namespace coach::trainer
