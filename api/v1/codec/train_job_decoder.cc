// A trainer.kubeflow.org/v1alpha1 TrainJob into the job model. What coach reads of its spec
// (suspend, activeDeadlineSeconds, managedBy) goes to run_policy; the rest is kept as written,
// checked only for its top-level fields here (operator/trainer checks the rest against the
// runtime). status.coach holds the job's status in the v1 vocabulary (conditions Created,
// Running, Restarting, ...), which upstream readers ignore; without it, the upstream
// conditions are read back into that vocabulary.

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_decoder_internal.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"

namespace coach::api::v1::codec::internal {
namespace {

using nlohmann::json;

void DecodeUpstreamConditions(FieldDecoder& d, const json& v, const std::string& path,
                              TrainingJobStatus* status) {
  d.ObjectList(v, path, [&](const json& item, const std::string& ipath) {
    d.Unknown(item, ipath,
              {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"});
    JobCondition c;
    d.String(item, "type", ipath, [&](std::string s) { c.set_type(s); });
    d.String(item, "status", ipath, [&](std::string s) { c.set_status(s); });
    d.String(item, "reason", ipath, [&](std::string s) { c.set_reason(s); });
    d.String(item, "message", ipath, [&](std::string s) { c.set_message(s); });
    d.Int64(item, "observedGeneration", ipath, [](int64_t) {});
    COACH_TIME_FIELD(d, item, "lastTransitionTime", ipath, &c, JobCondition, last_transition_time);
    if (c.type() == kTrainJobComplete) {
      c.set_type(kJobSucceeded);
    } else if (c.type() != kJobFailed && c.type() != kJobSuspended) {
      return;  // another controller's condition: coach neither reads nor writes it
    }
    *c.mutable_last_update_time() = c.last_transition_time();
    *status->add_conditions() = std::move(c);
  });
}

void DecodeJobsStatus(FieldDecoder& d, const json& v, const std::string& path,
                      TrainingJobStatus* status) {
  d.ObjectList(v, path, [&](const json& item, const std::string& ipath) {
    d.Unknown(item, ipath, {"name", "ready", "succeeded", "failed", "active", "suspended"});
    ReplicatedJobStatus* js = status->add_jobs_status();
    d.String(item, "name", ipath, [&](std::string s) { js->set_name(s); });
    d.Int32(item, "ready", ipath, [&](int32_t n) { js->set_ready(n); });
    d.Int32(item, "succeeded", ipath, [&](int32_t n) { js->set_succeeded(n); });
    d.Int32(item, "failed", ipath, [&](int32_t n) { js->set_failed(n); });
    d.Int32(item, "active", ipath, [&](int32_t n) { js->set_active(n); });
    d.Int32(item, "suspended", ipath, [&](int32_t n) { js->set_suspended(n); });
  });
}

}  // namespace

void DecodeTrainJobSpec(FieldDecoder& d, const json& v, TrainingJobSpec* spec) {
  const std::string path = "spec";
  if (v.is_null()) {
    d.Error(path, "required");
    return;
  }
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path,
            {"runtimeRef", "initializer", "trainer", "runtimePatches", "suspend",
             "activeDeadlineSeconds", "managedBy"});
  auto ref = object->find("runtimeRef");
  if (ref == object->end() || ref->is_null()) {
    d.Error(Join(path, "runtimeRef"), "required");
  } else if (const json* r = d.Object(*ref, Join(path, "runtimeRef")); r != nullptr) {
    auto name = r->find("name");
    if (name == r->end() || !name->is_string() || name->get<std::string>().empty()) {
      d.Error(Join(path, "runtimeRef.name"), "required: the runtime to build the job from");
    }
    d.String(*r, "kind", Join(path, "runtimeRef"), [](std::string) {});
    d.String(*r, "apiGroup", Join(path, "runtimeRef"), [](std::string) {});
  }
  for (const char* key : {"initializer", "trainer"}) {
    auto it = object->find(key);
    if (it != object->end()) d.Object(*it, Join(path, key));
  }
  auto patches = object->find("runtimePatches");
  if (patches != object->end() && !patches->is_null() && !patches->is_array()) {
    d.Expected(Join(path, "runtimePatches"), "a list", *patches);
  }
  RunPolicy* policy = spec->mutable_run_policy();
  d.Bool(*object, "suspend", path, [&](bool b) { policy->set_suspend(b); });
  d.Int64(*object, "activeDeadlineSeconds", path, [&](int64_t s) {
    if (s < 1) {
      d.Error(Join(path, "activeDeadlineSeconds"), absl::StrCat("must be >= 1, got ", s));
      return;
    }
    policy->set_active_deadline_seconds(s);
  });
  d.String(*object, "managedBy", path, [&](std::string s) { policy->set_managed_by(s); });
  json kept = *object;
  for (const char* key : {"suspend", "activeDeadlineSeconds", "managedBy"}) kept.erase(key);
  for (auto it = kept.begin(); it != kept.end();) {
    it = it->is_null() ? kept.erase(it) : std::next(it);
  }
  spec->set_train_job_spec_json(kept.dump());
}

void DecodeTrainJobAnnotations(FieldDecoder& d, const ObjectMeta& meta, TrainingJobSpec* spec) {
  auto ttl = meta.annotations().find(kAnnotationTtlSecondsAfterFinished);
  if (ttl == meta.annotations().end()) return;
  int32_t seconds = -1;
  if (!absl::SimpleAtoi(ttl->second, &seconds) || seconds < 0) {
    d.Error(absl::StrCat("metadata.annotations[", kAnnotationTtlSecondsAfterFinished, "]"),
            absl::StrCat("must be a whole number of seconds >= 0, got \"", ttl->second, "\""));
    return;
  }
  spec->mutable_run_policy()->set_ttl_seconds_after_finished(seconds);
}

void DecodeTrainJobStatus(FieldDecoder& d, const json& v, TrainingJobStatus* status) {
  const std::string path = "status";
  const json* object = d.Object(v, path);
  if (object == nullptr) return;
  d.Unknown(*object, path, {"conditions", "jobsStatus", "trainerStatus", "coach"});
  bool coach_conditions = false;
  auto coach = object->find("coach");
  if (coach != object->end() && !coach->is_null()) {
    const std::string cpath = Join(path, "coach");
    if (const json* c = d.Object(*coach, cpath); c != nullptr) {
      std::set<std::string> known = CoachStatusFields();
      known.insert(JobStatusFields().begin(), JobStatusFields().end());
      d.Unknown(*c, cpath, known);
      DecodeStatusFields(d, *c, cpath, status);
      DecodeCoachStatus(d, *c, cpath, false, status->mutable_coach());
      // Only coach's own fields make status.coach: the v1-shaped ones are the status's.
      if (status->coach().ByteSizeLong() == 0) status->clear_coach();
      coach_conditions = c->contains("conditions");
    }
  }
  auto conditions = object->find("conditions");
  if (!coach_conditions && conditions != object->end() && !conditions->is_null()) {
    DecodeUpstreamConditions(d, *conditions, Join(path, "conditions"), status);
  }
  auto jobs = object->find("jobsStatus");
  if (jobs != object->end() && !jobs->is_null()) {
    DecodeJobsStatus(d, *jobs, Join(path, "jobsStatus"), status);
  }
  auto trainer = object->find("trainerStatus");
  if (trainer != object->end() && !trainer->is_null()) {
    if (d.Object(*trainer, Join(path, "trainerStatus")) != nullptr) {
      status->set_trainer_status_json(trainer->dump());
    }
  }
}

}  // namespace coach::api::v1::codec::internal
