#include "integrations/s3/sigv4.h"

#include "gtest/gtest.h"

namespace coach::s3 {
namespace {

// AWS's published example (Amazon S3 API reference, "Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk", Example: GET Object), and the
// ListObjects example of the same page for the query string.
constexpr char kAccessKeyId[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

absl::Time ExampleTime() {
  return absl::FromCivil(absl::CivilSecond(2013, 5, 24), absl::UTCTimeZone());
}

TEST(SigV4Test, AwsGetObjectExample) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/test.txt";
  // Any case and spacing: the canonical form lower-cases names and trims values.
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", " bytes=0-9 "},
               {"x-amz-content-sha256", kEmptyPayloadSha256},
               {"x-amz-date", "20130524T000000Z "}};
  r.payload_sha256_hex = kEmptyPayloadSha256;
  const SigV4Signature sig = SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime());
  EXPECT_EQ(
      sig.canonical_request,
      "GET\n"
      "/test.txt\n"
      "\n"
      "host:examplebucket.s3.amazonaws.com\n"
      "range:bytes=0-9\n"
      "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "x-amz-date:20130524T000000Z\n"
      "\n"
      "host;range;x-amz-content-sha256;x-amz-date\n"
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sig.string_to_sign,
            "AWS4-HMAC-SHA256\n"
            "20130524T000000Z\n"
            "20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(sig.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(sig.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4Test, AwsListObjectsExampleSortsAndEncodesTheQuery) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};  // given unsorted
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", kEmptyPayloadSha256}};
  r.payload_sha256_hex = kEmptyPayloadSha256;
  const SigV4Signature sig = SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime());
  EXPECT_EQ(sig.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
  EXPECT_EQ(sig.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4Test, WrongSecretOrTimeGivesAnotherSignature) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/test.txt";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  r.payload_sha256_hex = kEmptyPayloadSha256;
  const std::string a =
      SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime()).signature;
  EXPECT_NE(a, SignV4(r, {kAccessKeyId, "other"}, "us-east-1", "s3", ExampleTime()).signature);
  EXPECT_NE(a, SignV4(r, {kAccessKeyId, kSecret}, "eu-west-1", "s3", ExampleTime()).signature);
  EXPECT_NE(a,
            SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime() + absl::Hours(24))
                .signature);
}

TEST(SigV4Test, NeverPutsTheSecretInItsOutput) {
  SigV4Request r;
  r.method = "PUT";
  r.canonical_uri = "/b/k";
  r.headers = {{"host", "h"}};
  r.payload_sha256_hex = Sha256Hex("x");
  const SigV4Signature sig = SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime());
  for (const std::string& s :
       {sig.canonical_request, sig.string_to_sign, sig.signature, sig.authorization}) {
    EXPECT_EQ(s.find(kSecret), std::string::npos) << s;
  }
}

TEST(SigV4Test, CanonicalQueryEncodesEverythingButUnreserved) {
  EXPECT_EQ(
      CanonicalQueryString(
          {{"prefix", "logs/a b+c=d&é"}, {"list-type", "2"}, {"continuation-token", "1/x=="}}),
      "continuation-token=1%2Fx%3D%3D&list-type=2&prefix=logs%2Fa%20b%2Bc%3Dd%26%C3%A9");
  EXPECT_EQ(CanonicalQueryString({{"b", ""}, {"a", "~-_."}}), "a=~-_.&b=");
  EXPECT_EQ(CanonicalQueryString({}), "");
}

TEST(SigV4Test, RepeatedHeadersJoinAndInnerSpacesCollapse) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"X-Amz-Meta-A", "one   two"}, {"host", "h"}, {"x-amz-meta-a", "three"}};
  r.payload_sha256_hex = kEmptyPayloadSha256;
  const SigV4Signature sig = SignV4(r, {kAccessKeyId, kSecret}, "us-east-1", "s3", ExampleTime());
  EXPECT_NE(sig.canonical_request.find("host:h\nx-amz-meta-a:one two,three\n\nhost;x-amz-meta-a\n"),
            std::string::npos)
      << sig.canonical_request;
}

TEST(SigV4Test, HashesAndDates) {
  EXPECT_EQ(Sha256Hex(""), kEmptyPayloadSha256);
  EXPECT_EQ(Sha256Hex("Welcome to Amazon S3."),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(AmzDate(ExampleTime() + absl::Seconds(3661)), "20130524T010101Z");
}

}  // namespace
}  // namespace coach::s3
