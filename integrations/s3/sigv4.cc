#include "integrations/s3/sigv4.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/http/url.h"

namespace coach::s3 {
namespace {

std::string Hex(const unsigned char* data, size_t n) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(data), n));  // lower case
}

std::string HmacSha256(absl::string_view key, absl::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  std::string mac(reinterpret_cast<const char*>(out), len);
  OPENSSL_cleanse(out, sizeof out);
  return mac;
}

// Header values as AWS canonicalizes them: surrounding spaces trimmed, runs of spaces inside
// collapsed to one.
std::string CanonicalHeaderValue(absl::string_view value) {
  std::string out;
  bool space = false;
  for (char c : absl::StripAsciiWhitespace(value)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string AmzDate(absl::Time time) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", time, absl::UTCTimeZone());
}

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  return Hex(md, len);
}

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(http::PercentEncode(name), http::PercentEncode(value));
  }
  std::sort(encoded.begin(), encoded.end());
  return absl::StrJoin(encoded, "&", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, "=", kv.second);
  });
}

SigV4Signature SignV4(const SigV4Request& request, const SigV4Credentials& credentials,
                      absl::string_view region, absl::string_view service, absl::Time time) {
  // Repeated headers are joined with ',' in the order given, as AWS specifies.
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    std::string& v = headers[absl::AsciiStrToLower(name)];
    if (!v.empty()) v.push_back(',');
    v += CanonicalHeaderValue(value);
  }
  std::string canonical_headers;
  std::vector<absl::string_view> names;
  for (const auto& [name, value] : headers) {
    absl::StrAppend(&canonical_headers, name, ":", value, "\n");
    names.push_back(name);
  }

  SigV4Signature sig;
  sig.signed_headers = absl::StrJoin(names, ";");
  sig.canonical_request = absl::StrCat(request.method, "\n", request.canonical_uri, "\n",
                                       CanonicalQueryString(request.query), "\n", canonical_headers,
                                       "\n", sig.signed_headers, "\n", request.payload_sha256_hex);
  const std::string date = absl::FormatTime("%Y%m%d", time, absl::UTCTimeZone());
  const std::string scope = absl::StrCat(date, "/", region, "/", service, "/aws4_request");
  sig.string_to_sign = absl::StrCat("AWS4-HMAC-SHA256\n", AmzDate(time), "\n", scope, "\n",
                                    Sha256Hex(sig.canonical_request));

  std::string key = absl::StrCat("AWS4", credentials.secret_access_key);
  std::string k_date = HmacSha256(key, date);
  OPENSSL_cleanse(key.data(), key.size());
  std::string k_region = HmacSha256(k_date, region);
  std::string k_service = HmacSha256(k_region, service);
  std::string k_signing = HmacSha256(k_service, "aws4_request");
  const std::string mac = HmacSha256(k_signing, sig.string_to_sign);
  for (std::string* k : {&k_date, &k_region, &k_service, &k_signing}) {
    OPENSSL_cleanse(k->data(), k->size());
  }
  sig.signature = Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  sig.authorization =
      absl::StrCat("AWS4-HMAC-SHA256 Credential=", credentials.access_key_id, "/", scope,
                   ",SignedHeaders=", sig.signed_headers, ",Signature=", sig.signature);
  return sig;
}

}  // namespace coach::s3
