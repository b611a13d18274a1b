#pragma once

// Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity), as much of them
// as summing pod requests into a PodGroup's minResources needs: parse, add, print in the
// canonical form the Go client would send.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/numeric/int128.h"

namespace coach {

class Quantity {
 public:
  // "500m", "16Gi", "1.5", "1e3"; nullopt for anything else or a value too large to hold.
  // Precision below a nano is rounded up, as ParseQuantity does.
  static std::optional<Quantity> Parse(std::string_view text);

  // Keeps this quantity's format, as Quantity.Add does: "1Gi" + "512Mi" is "1536Mi",
  // "1" + "500m" is "1500m".
  void Add(const Quantity& other) { nanos_ += other.nanos_; }
  // By value, whatever the formats ("1Gi" < "1100Mi").
  bool operator<(const Quantity& other) const { return nanos_ < other.nanos_; }

  // Whole units rounded away from zero, as Quantity.Value() does: "1500m" is 2, "-1500m" -2.
  // Saturates at the int64 range.
  int64_t Value() const;

  // Canonical form: a binary quantity prints with the largest Ki..Ei suffix that divides it
  // (decimal when it is below 1024 or not whole, "1536" rather than "1.5Ki"); a decimal one
  // with the largest SI suffix n..E (or e<n>) that leaves an integer ("1500m", "2k").
  std::string ToString() const;

 private:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  absl::int128 nanos_ = 0;  // the value times 1e9
  Format format_ = Format::kDecimalSI;
};

}  // namespace coach
