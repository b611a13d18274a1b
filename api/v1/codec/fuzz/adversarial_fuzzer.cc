// libFuzzer target: manifests built to make the decoder expand, not to be well formed.
// The input bytes drive a small generator of YAML: anchors on large scalars, sequences and
// mappings of aliases to earlier anchors (each level multiplies what the previous one
// expands to), merge keys, deep nesting, many documents, and raw bytes between them, all
// inside a PyTorchJob whose env, args and labels take the aliases. ParseManifests must
// answer every one without crashing and within the memory libFuzzer allows
// (-rss_limit_mb, -malloc_limit_mb; tools/suites/fuzz_codec.sh sets 256). Built by that script.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"

namespace {

// Reads the input a byte at a time; zeros once it is used up.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string Raw(size_t n) {
    n = std::min(n, size_ - pos_);
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// One document's anchors, in the order they were defined (aliases name earlier ones only,
// or the parser refuses them before it expands anything).
struct Generator {
  Bytes& in;
  std::string out;
  int anchors = 0;

  std::string AnchorRef() { return absl::StrCat("*a", in.Next() % anchors); }

  // A value: a new anchor over something large, or an alias, or a nesting of these.
  std::string Value(int depth) {
    const uint8_t op = in.Next();
    switch (op % 8) {
      case 0: {  // a long scalar, 1 B .. 64 KiB
        const size_t n = size_t{1} << (in.Next() % 17);
        return absl::StrCat("&a", anchors++, " \"", std::string(n, 'x'), "\"");
      }
      case 1:
      case 2: {  // a flow sequence of aliases: the billion-laughs step
        if (anchors == 0) return "y";
        std::string seq = absl::StrCat("&a", anchors, " [");
        const int k = 1 + in.Next() % 16;
        for (int i = 0; i < k; ++i) absl::StrAppend(&seq, i ? ", " : "", AnchorRef());
        ++anchors;
        return seq + "]";
      }
      case 3: {  // a mapping of aliases, keys included
        if (anchors == 0) return "{}";
        std::string map = absl::StrCat("&a", anchors, " {");
        const int k = 1 + in.Next() % 16;
        for (int i = 0; i < k; ++i) {
          absl::StrAppend(&map, i ? ", " : "", "k", i, ": ", AnchorRef());
        }
        ++anchors;
        return map + "}";
      }
      case 4: {  // a merge key over an earlier anchor
        if (anchors == 0) return "{}";
        return absl::StrCat("{<<: ", AnchorRef(), ", m: ", AnchorRef(), "}");
      }
      case 5: {  // nesting, up to past the decoder's depth limit
        const int levels = in.Next() % 160;
        if (depth + levels > 400) return "z";
        return std::string(levels, '[') + Value(depth + levels) + std::string(levels, ']');
      }
      case 6:  // raw bytes: whatever the fuzzer wants in between
        return in.Raw(in.Next() % 64);
      default:
        return anchors == 0 ? "w" : AnchorRef();
    }
  }

  void Document() {
    anchors = 0;
    absl::StrAppend(&out,
                    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: bomb\n",
                    "  labels: {l: ", Value(0), "}\n");
    absl::StrAppend(&out, "  annotations: {x: ", Value(0), "}\n");
    absl::StrAppend(&out,
                    "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n"
                    "      template:\n        spec:\n          containers:\n"
                    "          - name: pytorch\n            image: img\n");
    const int envs = in.Next() % 8;
    absl::StrAppend(&out, "            env:\n");
    for (int i = 0; i < envs; ++i) {
      absl::StrAppend(&out, "            - {name: V", i, ", value: ", Value(0), "}\n");
    }
    absl::StrAppend(&out, "            args: [", Value(0), ", ", Value(0), "]\n");
    absl::StrAppend(&out, "            command: ", Value(0), "\n");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  Generator gen{in, {}};
  const int documents = 1 + in.Next() % 4;
  for (int d = 0; d < documents && !in.empty(); ++d) {
    if (d > 0) gen.out += "---\n";
    gen.Document();
  }
  auto jobs = coach::api::v1::codec::ParseManifests(gen.out);
  if (jobs.ok()) {
    // Whatever is accepted must be small enough to encode back.
    const std::string json = coach::api::v1::codec::JobsToJson(*jobs);
    if (json.size() > (size_t{64} << 20)) {
      std::fprintf(stderr, "adversarial_fuzzer: accepted %zu bytes of JSON\n", json.size());
      std::abort();
    }
  }
  return 0;
}
