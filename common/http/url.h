#pragma once

// URL pieces every REST client builds: percent-encoding (RFC 3986: the unreserved characters
// A-Z a-z 0-9 - _ . ~ stay, every other byte becomes %XX with upper-case hex) and query strings.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace coach::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes a query key or value, or one path segment.
std::string PercentEncode(absl::string_view s);

// Percent-encodes a path, keeping its '/' separators ("logs/worker 0.txt" ->
// "logs/worker%200.txt").
std::string PercentEncodePath(absl::string_view path);

// "k1=v1&k2=v2" with keys and values encoded, in the order given; "" for no parameters.
std::string QueryString(const QueryParams& params);

// `url` with "?" and the query string appended when there are parameters.
std::string WithQuery(absl::string_view url, const QueryParams& params);

}  // namespace coach::http
