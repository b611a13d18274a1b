#pragma once

// A reconcile pass's result as short strings that tests compare against lists.

#include <string>
#include <vector>

#include "operator/model/reconcile_types.h"

namespace coach::reconcile::testing {

// "create Pod/name", "delete Service/name", "deletejob PyTorchJob/name"; a forced delete is
// "delete! Pod/name".
inline std::vector<std::string> ActionsText(const model::ReconcileResult& r) {
  std::vector<std::string> out;
  for (const model::Action& a : r.actions) {
    std::string verb = a.type == model::Action::Type::kCreate   ? "create"
                       : a.type == model::Action::Type::kDelete ? "delete"
                                                                : "deletejob";
    if (a.force) verb += "!";
    out.push_back(verb + " " + a.object.kind + "/" + a.object.name);
  }
  return out;
}

// The events' reasons, in order.
inline std::vector<std::string> EventReasons(const model::ReconcileResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.events) out.push_back(e.reason);
  return out;
}

// The newest condition; the status must have one.
inline const api::v1::JobCondition& LastCondition(const model::JobStatus& s) {
  return *s.conditions().rbegin();
}

}  // namespace coach::reconcile::testing
