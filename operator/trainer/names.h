#pragma once

// Names the JobSet and Job controllers would give, made deterministic where upstream's are
// random, so that a retry after a crash finds the objects that exist.

#include <string>

namespace coach::trainer {

// Kubernetes' generateName alphabet (apimachinery util/rand): no vowels, no 0/1/3 that read
// as letters, so no words form.
inline constexpr char kNameSuffixAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";

// `<trainjob>-<rjob>-0`: JobSet's Job name for the only Job of a replicated job.
std::string JobName(const std::string& train_job, const std::string& replicated_job);

// A pod's name: `<trainjob>-<rjob>-0-<index>-<suffix>`. Upstream's Job controller picks the
// 5-character suffix at random; here it is the first bytes of a SHA-256 of (namespace,
// trainjob name, trainjob uid, replicated job, index) mapped onto kNameSuffixAlphabet, so the
// same pod always gets the same name and a recreated TrainJob (new uid) gets new ones.
std::string PodName(const std::string& namespace_, const std::string& train_job,
                    const std::string& uid, const std::string& replicated_job, int index);

// jobset.sigs.k8s.io/job-key: hex SHA-1 of `<namespace>/<job name>`.
std::string JobKey(const std::string& namespace_, const std::string& job_name);

}  // namespace coach::trainer
