#pragma once

// The types of a core/v1 PodTemplateSpec's fields, as the API server's Pod schema has them.
// A template is kept as the user wrote it (ReplicaSpec.template_json), and coach reads parts of
// it (containers, env, ports, command, resources, labels, ...): a field of the wrong type
// (`"ports": "x"`) would make those readers skip it or fail, and the job would never start, so
// it is refused at admission as the API server refuses it in a Pod.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/v1/field_error.h"

namespace coach::api::v1 {

// Every field of `pod_template` whose value is not of the type core/v1 gives it, at
// `path`.<field> (e.g. "<path>.spec.containers[0].ports: must be a list, got string \"x\""),
// in document order. Checked: the template's metadata (labels, annotations: maps of strings),
// the PodSpec's fields, and within containers and initContainers every field of Container with
// the items of their lists (ports, env, volumeMounts, ...); nested objects coach does not read
// (affinity, probes, securityContext, volume sources) only need to be objects. Fields core/v1
// does not have are left alone (a newer API server may know them), and a null value counts as
// absent, as in Kubernetes. Values are the validation's (validation.h): a template that is not
// an object gets one error at `path`.
std::vector<FieldError> CheckPodTemplateTypes(const nlohmann::json& pod_template,
                                              const std::string& path);

}  // namespace coach::api::v1
