#pragma once

// OpenSSL objects owned by std::unique_ptr, each freed by its own OpenSSL function on every
// path: one set of names for every file that parses or makes keys and certificates.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace coach::openssl {

template <auto kFree>
struct Free {
  template <typename T>
  void operator()(T* p) const {
    kFree(p);
  }
};
struct X509StackFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};

using Bio = std::unique_ptr<BIO, Free<BIO_free>>;
using Cert = std::unique_ptr<X509, Free<X509_free>>;
using CertStack = std::unique_ptr<STACK_OF(X509), X509StackFree>;
using Key = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using Bignum = std::unique_ptr<BIGNUM, Free<BN_free>>;
using Extension = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using GeneralName = std::unique_ptr<GENERAL_NAME, Free<GENERAL_NAME_free>>;
using GeneralNames = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;
using Ia5String = std::unique_ptr<ASN1_IA5STRING, Free<ASN1_IA5STRING_free>>;
using Store = std::unique_ptr<X509_STORE, Free<X509_STORE_free>>;
using StoreCtx = std::unique_ptr<X509_STORE_CTX, Free<X509_STORE_CTX_free>>;

}  // namespace coach::openssl
