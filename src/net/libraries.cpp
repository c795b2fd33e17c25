#include "net/libraries.h"

#include <dlfcn.h>

#include <initializer_list>
#include <mutex>
#include <string>

#include "base/error.h"

namespace mw::net {
namespace {

struct Opened {
    void* handle = nullptr;
    std::string name;
};

Opened open_first(std::initializer_list<const char*> names, const char* what, const char* package) {
    std::string errors;
    for (const char* name : names) {
        // RTLD_LOCAL: its symbols stay out of the global namespace (no clash with a copy a
        // program embedding libmemwall may link itself).
        if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return {h, name};
        const char* e = ::dlerror();
        errors += fmt::format("; {}", e ? e : name);
    }
    fail(ErrorKind::unsupported,
         "{} is needed here and could not be loaded (Debian: apt install {}){}", what, package,
         errors);
}

template <typename F>
void resolve(const Opened& lib, F& slot, const char* symbol) {
    void* p = ::dlsym(lib.handle, symbol);
    if (!p) fail(ErrorKind::unsupported, "{}: has no symbol {}", lib.name, symbol);
    slot = reinterpret_cast<F>(p);
}

}  // namespace

const CurlLibrary& curl_library() {
    static CurlLibrary lib;
    static std::once_flag once;
    std::call_once(once, [] {
        const Opened o = open_first({"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"},
                                    "libcurl (for downloads and remote plans)", "libcurl4");
        CurlLibrary l{};
        resolve(o, l.global_init, "curl_global_init");
        resolve(o, l.easy_init, "curl_easy_init");
        resolve(o, l.easy_cleanup, "curl_easy_cleanup");
        resolve(o, l.easy_setopt, "curl_easy_setopt");
        resolve(o, l.easy_getinfo, "curl_easy_getinfo");
        resolve(o, l.easy_perform, "curl_easy_perform");
        resolve(o, l.easy_strerror, "curl_easy_strerror");
        resolve(o, l.slist_append, "curl_slist_append");
        resolve(o, l.slist_free_all, "curl_slist_free_all");
        if (l.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            fail(ErrorKind::unsupported, "{}: global initialisation failed", o.name);
        }
        lib = l;
    });
    return lib;
}

const CryptoLibrary& crypto_library() {
    static CryptoLibrary lib;
    static std::once_flag once;
    std::call_once(once, [] {
        const Opened o = open_first({"libcrypto.so.3", "libcrypto.so"},
                                    "OpenSSL's libcrypto (for SHA-256)", "libssl3");
        CryptoLibrary l{};
        resolve(o, l.md_ctx_new, "EVP_MD_CTX_new");
        resolve(o, l.md_ctx_free, "EVP_MD_CTX_free");
        resolve(o, l.sha256, "EVP_sha256");
        resolve(o, l.digest_init_ex, "EVP_DigestInit_ex");
        resolve(o, l.digest_update, "EVP_DigestUpdate");
        resolve(o, l.digest_final_ex, "EVP_DigestFinal_ex");
        lib = l;
    });
    return lib;
}

}  // namespace mw::net
