#pragma once

// The few S3 XML answers the client reads: a ListObjectsV2 page and an error document.
//
// No XML library is among the project's third_party wrappers, so this is a small, strict and
// bounded extractor rather than a general parser: elements, attributes (skipped), the five
// predefined entities and numeric character references, comments and the XML declaration.
// DOCTYPE (and with it any entity definition), CDATA, processing instructions other than the
// declaration, undefined entities, mismatched tags, nesting deeper than kMaxXmlDepth and
// documents larger than kMaxXmlBytes are refused with InvalidArgument, as is anything after the
// root element but whitespace and comments.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "integrations/s3/object_store.h"

namespace coach::s3 {

// A page of 1000 keys of 1024 bytes, every byte escaped ("&amp;"), stays well under this.
inline constexpr size_t kMaxXmlBytes = size_t{16} << 20;
inline constexpr int kMaxXmlDepth = 16;

struct ListPage {
  std::vector<ObjectInfo> objects;  // in document order
  bool is_truncated = false;
  std::string next_continuation_token;  // set when is_truncated
};

// A ListBucketResult document (ListObjectsV2, without encoding-type). InvalidArgument when the
// document is malformed, its root is not ListBucketResult, a Contents lacks Key, Size or
// LastModified, a value does not parse, or IsTruncated is true without a token.
absl::StatusOr<ListPage> ParseListObjectsV2(absl::string_view xml);

struct S3Error {
  std::string code;     // "NoSuchKey", "AccessDenied", ... ("" when the body is no S3 error)
  std::string message;  // S3's Message, or a printable excerpt of a body that is no S3 error
};

// Never fails: a body that is not an S3 <Error> document gives an empty code and an excerpt.
// Both strings are cut to 300 bytes and non-printable bytes escaped.
S3Error ParseS3Error(absl::string_view body);

}  // namespace coach::s3
