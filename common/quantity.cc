#include "common/quantity.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace coach {
namespace {

constexpr int kMaxSignificantDigits = 24;
constexpr int kMaxExponentDigits = 3;
constexpr int kNanoDigits = 9;

// Far below int128's limit, so that sums of many requests cannot overflow either.
absl::int128 Limit() {
  absl::int128 limit = 1;
  for (int i = 0; i < 36; ++i) limit *= 10;
  return limit;
}

absl::int128 Abs(absl::int128 v) { return v < 0 ? -v : v; }

// x * 10^p for p >= 0, x / 10^-p rounded away from zero for p < 0. False on overflow.
bool ScaleByPowerOfTen(absl::int128& x, int p) {
  const absl::int128 limit = Limit();
  for (; p > 0; --p) {
    if (Abs(x) > limit / 10) return false;
    x *= 10;
  }
  const bool negative = x < 0;
  bool inexact = false;
  for (; p < 0 && x != 0; ++p) {
    inexact = inexact || x % 10 != 0;
    x /= 10;
  }
  if (inexact) x += negative ? -1 : 1;
  return true;
}

std::string Digits(absl::int128 n) {
  if (n == 0) return "0";
  std::string out;
  for (; n > 0; n /= 10) out.push_back(static_cast<char>('0' + static_cast<int>(n % 10)));
  std::reverse(out.begin(), out.end());
  return out;
}

constexpr std::pair<const char*, int> kBinarySuffixes[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                           {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
constexpr std::pair<const char*, int> kDecimalSuffixes[] = {
    {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
    {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};

}  // namespace

std::optional<Quantity> Quantity::Parse(std::string_view s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  absl::int128 mantissa = 0;
  int digits = 0;
  int significant = 0;
  int fraction_digits = 0;
  bool in_fraction = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') break;
    ++digits;
    if (mantissa != 0 || s[i] != '0') ++significant;
    if (significant > kMaxSignificantDigits) return std::nullopt;
    mantissa = mantissa * 10 + (s[i] - '0');
    if (in_fraction) ++fraction_digits;
  }
  if (digits == 0) return std::nullopt;

  const std::string_view suffix = s.substr(i);
  Quantity q;
  int decimal_exponent = 0;
  int binary_power = 0;  // of 1024
  bool known = false;
  for (const auto& [text, power] : kBinarySuffixes) {
    if (suffix == text) {
      q.format_ = Format::kBinarySI;
      binary_power = power;
      known = true;
    }
  }
  for (const auto& [text, exponent] : kDecimalSuffixes) {
    if (suffix == text) {
      decimal_exponent = exponent;
      known = true;
    }
  }
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    const bool exponent_negative = suffix[j] == '-';
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    const size_t first = j;
    for (; j < suffix.size() && suffix[j] >= '0' && suffix[j] <= '9'; ++j) {
      decimal_exponent = decimal_exponent * 10 + (suffix[j] - '0');
    }
    if (j != suffix.size() || j == first || j - first > kMaxExponentDigits) return std::nullopt;
    if (exponent_negative) decimal_exponent = -decimal_exponent;
    q.format_ = Format::kDecimalExponent;
    known = true;
  }
  if (!known) return std::nullopt;

  absl::int128 value = negative ? -mantissa : mantissa;
  for (int k = 0; k < binary_power; ++k) {
    if (Abs(value) > Limit() / 1024) return std::nullopt;
    value *= 1024;
  }
  if (!ScaleByPowerOfTen(value, kNanoDigits - fraction_digits + decimal_exponent)) {
    return std::nullopt;
  }
  q.nanos_ = value;
  return q;
}

int64_t Quantity::Value() const {
  const absl::int128 kNano = 1000000000;
  absl::int128 units = Abs(nanos_) / kNano + (Abs(nanos_) % kNano != 0 ? 1 : 0);
  const absl::int128 kMax = std::numeric_limits<int64_t>::max();
  if (units > kMax) units = kMax;
  return static_cast<int64_t>(nanos_ < 0 ? -units : units);
}

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  const std::string sign = nanos_ < 0 ? "-" : "";
  absl::int128 n = Abs(nanos_);
  absl::int128 nano = 1;
  ScaleByPowerOfTen(nano, kNanoDigits);
  if (format_ == Format::kBinarySI && n >= 1024 * nano && n % nano == 0) {
    n /= nano;
    int power = 0;
    while (power < 6 && n % 1024 == 0) {
      n /= 1024;
      ++power;
    }
    return sign + Digits(n) + (power == 0 ? "" : kBinarySuffixes[power - 1].first);
  }
  int exponent = -kNanoDigits;
  while (exponent < 18 && n % 1000 == 0) {
    n /= 1000;
    exponent += 3;
  }
  if (format_ == Format::kDecimalExponent) {
    return sign + Digits(n) + (exponent == 0 ? "" : "e" + std::to_string(exponent));
  }
  return sign + Digits(n) + kDecimalSuffixes[(exponent + kNanoDigits) / 3].first;
}

}  // namespace coach
