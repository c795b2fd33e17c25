// libcurl and OpenSSL's libcrypto, opened with dlopen on first use instead of linked: a process
// that never downloads or hashes (run, chat, serve, plan of a local file) does not map them and
// the thirty-odd libraries libcurl brings (TLS, Kerberos, LDAP, SSH...), about 5 MiB of resident
// memory, and libmemwall.a does not impose them on the programs that link it. Only the entry
// points memwall uses are resolved; the headers fix their types.
#pragma once

#define CURL_DISABLE_TYPECHECK  // calls go through the pointers below, not curl's macros
#include <curl/curl.h>
#include <openssl/evp.h>

namespace mw::net {

struct CurlLibrary {
    CURLcode (*global_init)(long flags);
    CURL* (*easy_init)();
    void (*easy_cleanup)(CURL*);
    CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL*);
    const char* (*easy_strerror)(CURLcode);
    curl_slist* (*slist_append)(curl_slist*, const char*);
    void (*slist_free_all)(curl_slist*);
};

struct CryptoLibrary {
    EVP_MD_CTX* (*md_ctx_new)();
    void (*md_ctx_free)(EVP_MD_CTX*);
    const EVP_MD* (*sha256)();
    int (*digest_init_ex)(EVP_MD_CTX*, const EVP_MD*, ENGINE*);
    int (*digest_update)(EVP_MD_CTX*, const void*, size_t);
    int (*digest_final_ex)(EVP_MD_CTX*, unsigned char*, unsigned int*);
};

// Open the library on the first call (thread-safe) and global-initialise libcurl; throw
// mw::Error (unsupported) naming the library and the Debian package when it is missing.
const CurlLibrary& curl_library();
const CryptoLibrary& crypto_library();

}  // namespace mw::net
