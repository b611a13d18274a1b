#include "operator/trainer/names.h"

#include <openssl/sha.h>

#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace coach::trainer {

std::string JobName(const std::string& train_job, const std::string& replicated_job) {
  return absl::StrCat(train_job, "-", replicated_job, "-0");
}

std::string PodName(const std::string& namespace_, const std::string& train_job,
                    const std::string& uid, const std::string& replicated_job, int index) {
  // NUL separators: no two different tuples hash the same text.
  const std::string key =
      absl::StrCat(namespace_, std::string(1, '\0'), train_job, std::string(1, '\0'), uid,
                   std::string(1, '\0'), replicated_job, std::string(1, '\0'), index);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  constexpr int kAlphabetSize = sizeof(kNameSuffixAlphabet) - 1;
  std::string suffix;
  for (int i = 0; i < 5; ++i) suffix.push_back(kNameSuffixAlphabet[digest[i] % kAlphabetSize]);
  return absl::StrCat(JobName(train_job, replicated_job), "-", index, "-", suffix);
}

std::string JobKey(const std::string& namespace_, const std::string& job_name) {
  const std::string text = absl::StrCat(namespace_, "/", job_name);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(
      std::string(reinterpret_cast<const char*>(digest), SHA_DIGEST_LENGTH));
}

}  // namespace coach::trainer
