#include "integrations/s3/testing/fake_object_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace coach::s3::testing {

absl::Status FakeObjectStore::Injected(Op op) {
  if (!fail_all_.ok()) return fail_all_;
  auto it = injected_.find(static_cast<int>(op));
  if (it == injected_.end() || it->second.empty()) return absl::OkStatus();
  absl::Status s = std::move(it->second.front());
  it->second.pop_front();
  return s;
}

absl::Status FakeObjectStore::Record(Call call) {
  absl::Status result = call.result;
  calls_.push_back(std::move(call));
  return result;
}

absl::Status FakeObjectStore::Put(absl::string_view key, absl::string_view bytes) {
  absl::MutexLock l(&mu_);
  Call call{Op::kPut, std::string(key), bytes.size(), 0, ValidateKey(key)};
  if (call.result.ok() && bytes.size() > kMaxPutBytes) {
    call.result = absl::InvalidArgumentError(
        absl::StrCat("fake PutObject: ", bytes.size(), " bytes (at most ", kMaxPutBytes, ")"));
  }
  if (call.result.ok()) call.result = Injected(Op::kPut);
  if (call.result.ok()) {
    objects_[std::string(key)] = {
        std::string(bytes), absl::FromUnixSeconds(absl::ToUnixSeconds(options_.clock->Now()))};
  }
  return Record(std::move(call));
}

absl::StatusOr<std::string> FakeObjectStore::Get(absl::string_view key, size_t max_bytes) {
  absl::MutexLock l(&mu_);
  Call call{Op::kGet, std::string(key), max_bytes, 0, ValidateKey(key)};
  if (call.result.ok()) call.result = Injected(Op::kGet);
  std::string out;
  if (call.result.ok()) {
    auto it = objects_.find(call.key);
    if (it == objects_.end()) {
      call.result = absl::NotFoundError(absl::StrCat("fake GetObject \"", key, "\": NoSuchKey"));
    } else if (it->second.bytes.size() > max_bytes) {
      call.result = absl::ResourceExhaustedError(absl::StrCat(
          "fake GetObject \"", key, "\": the object is larger than max_bytes (", max_bytes, ")"));
    } else {
      out = it->second.bytes;
    }
  }
  absl::Status s = Record(std::move(call));
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<ListResult> FakeObjectStore::List(absl::string_view prefix, int max_keys) {
  absl::MutexLock l(&mu_);
  Call call{Op::kList, std::string(prefix), 0, max_keys, ValidatePrefix(prefix)};
  if (call.result.ok() && max_keys < 1) {
    call.result = absl::InvalidArgumentError(
        absl::StrCat("fake ListObjectsV2: max_keys is ", max_keys, " (at least 1)"));
  }
  if (call.result.ok()) call.result = Injected(Op::kList);
  ListResult out;
  if (call.result.ok()) {
    const int page = std::max(1, options_.list_page_size);
    int in_page = 0;
    ++list_pages_;
    for (auto it = objects_.lower_bound(call.key);
         it != objects_.end() && absl::StartsWith(it->first, prefix); ++it) {
      if (static_cast<int>(out.objects.size()) == max_keys) {
        out.truncated = true;
        break;
      }
      if (in_page == page) {
        ++list_pages_;
        in_page = 0;
      }
      out.objects.push_back({it->first, it->second.bytes.size(), it->second.last_modified});
      ++in_page;
    }
  }
  absl::Status s = Record(std::move(call));
  if (!s.ok()) return s;
  return out;
}

absl::Status FakeObjectStore::Delete(absl::string_view key) {
  absl::MutexLock l(&mu_);
  Call call{Op::kDelete, std::string(key), 0, 0, ValidateKey(key)};
  if (call.result.ok()) call.result = Injected(Op::kDelete);
  if (call.result.ok()) objects_.erase(call.key);
  return Record(std::move(call));
}

void FakeObjectStore::InjectError(Op op, absl::Status status) {
  absl::MutexLock l(&mu_);
  injected_[static_cast<int>(op)].push_back(std::move(status));
}

void FakeObjectStore::FailAll(absl::Status status) {
  absl::MutexLock l(&mu_);
  fail_all_ = std::move(status);
}

std::vector<FakeObjectStore::Call> FakeObjectStore::calls() const {
  absl::MutexLock l(&mu_);
  return calls_;
}

void FakeObjectStore::ClearCalls() {
  absl::MutexLock l(&mu_);
  calls_.clear();
}

std::map<std::string, std::string> FakeObjectStore::objects() const {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> out;
  for (const auto& [key, object] : objects_) out[key] = object.bytes;
  return out;
}

int FakeObjectStore::list_pages() const {
  absl::MutexLock l(&mu_);
  return list_pages_;
}

}  // namespace coach::s3::testing
