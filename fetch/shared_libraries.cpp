#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "shared_libraries.h"

#include "errors.h"

#include <dlfcn.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>

#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

namespace {

// The first of `names` that opens, or an error naming them and why the last one did not.
void *openLibrary(std::initializer_list<const char *> names, std::string &error)
{
    for (const char *name : names) {
        if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
        const char *why = dlerror();
        error = std::string(name) + " could not be opened (" + (why ? why : "unknown reason") + ")";
    }
    return nullptr;
}

template <typename F> bool bind(void *handle, const char *symbol, F &out, std::string &error)
{
    out = reinterpret_cast<F>(dlsym(handle, symbol));
    if (!out && error.empty()) error = std::string("the library has no ") + symbol;
    return out != nullptr;
}

struct LoadedCurl
{
    CurlFunctions f{};
    std::string error;
    LoadedCurl()
    {
        void *h = openLibrary({"libcurl.so.4", "libcurl.so"}, error);
        if (!h) return;
        error.clear();
        bind(h, "curl_global_init", f.global_init, error);
        bind(h, "curl_easy_init", f.easy_init, error);
        bind(h, "curl_easy_cleanup", f.easy_cleanup, error);
        bind(h, "curl_easy_reset", f.easy_reset, error);
        bind(h, "curl_easy_setopt", f.easy_setopt, error);
        bind(h, "curl_easy_getinfo", f.easy_getinfo, error);
        bind(h, "curl_easy_strerror", f.easy_strerror, error);
        bind(h, "curl_easy_escape", f.easy_escape, error);
        bind(h, "curl_free", f.free, error);
        bind(h, "curl_getdate", f.getdate, error);
        bind(h, "curl_slist_append", f.slist_append, error);
        bind(h, "curl_slist_free_all", f.slist_free_all, error);
        bind(h, "curl_multi_init", f.multi_init, error);
        bind(h, "curl_multi_cleanup", f.multi_cleanup, error);
        bind(h, "curl_multi_setopt", f.multi_setopt, error);
        bind(h, "curl_multi_add_handle", f.multi_add_handle, error);
        bind(h, "curl_multi_remove_handle", f.multi_remove_handle, error);
        bind(h, "curl_multi_perform", f.multi_perform, error);
        bind(h, "curl_multi_poll", f.multi_poll, error);
        bind(h, "curl_multi_info_read", f.multi_info_read, error);
        bind(h, "curl_url", f.url, error);
        bind(h, "curl_url_cleanup", f.url_cleanup, error);
        bind(h, "curl_url_set", f.url_set, error);
        bind(h, "curl_url_get", f.url_get, error);
        bind(h, "curl_version_info", f.version_info, error);
    }
};

struct LoadedCrypto
{
    const void *(*sha256)() = nullptr; // EVP_sha256, an EVP_MD *
    int (*digest)(const void *, std::size_t, unsigned char *, unsigned int *, const void *, void *) = nullptr;
    std::string error;
    LoadedCrypto()
    {
        void *h = openLibrary({"libcrypto.so.3", "libcrypto.so"}, error);
        if (!h) return;
        error.clear();
        bind(h, "EVP_sha256", sha256, error);
        bind(h, "EVP_Digest", digest, error);
    }
};

// What a certificate store needs, from the libcrypto and libssl (version 3) that libcurl loaded.
struct LoadedTls
{
    void *(*storeNew)() = nullptr;
    void (*storeFree)(void *) = nullptr;
    int (*storeLoadLocations)(void *, const char *, const char *) = nullptr;
    int (*storeSetFlags)(void *, unsigned long) = nullptr;
    void (*ctxSetCertStore)(void *, void *) = nullptr;
    int (*storeUpRef)(void *) = nullptr;
    std::string error;
    LoadedTls()
    {
        // Only the copies libcurl already loaded (RTLD_NOLOAD), of the one version whose ABI is written here:
        // a store made by another OpenSSL than the one handling the handshake would be another library's object.
        void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        void *ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (!crypto || !ssl) {
            error = "libcurl has not loaded libssl.so.3 and libcrypto.so.3";
            return;
        }
        bind(crypto, "X509_STORE_new", storeNew, error);
        bind(crypto, "X509_STORE_free", storeFree, error);
        bind(crypto, "X509_STORE_load_locations", storeLoadLocations, error);
        bind(crypto, "X509_STORE_set_flags", storeSetFlags, error);
        bind(crypto, "X509_STORE_up_ref", storeUpRef, error);
        bind(ssl, "SSL_CTX_set_cert_store", ctxSetCertStore, error);
    }
};

const LoadedTls &tls()
{
    static const LoadedTls loaded;
    return loaded;
}

// A bundle's identity for the cache: a rewrite changes its inode (a rename over it), size or times.
std::string fingerprint(const std::string &file)
{
    struct stat st{};
    if (::stat(file.c_str(), &st) != 0) return "missing";
    return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
           std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec) + ':' +
           std::to_string(st.st_ctim.tv_sec) + '.' + std::to_string(st.st_ctim.tv_nsec);
}

} // namespace

bool caStoreUsable(const char *curlSslVersion)
{
    return curlSslVersion && std::string_view(curlSslVersion).starts_with("OpenSSL/3.") && tls().error.empty();
}

std::shared_ptr<void> sharedCaStore(const std::vector<std::string> &files, const std::string &folder,
                                    std::string &error)
{
    const LoadedTls &t = tls();
    if (!t.error.empty()) {
        error = t.error;
        return nullptr;
    }
    std::string key = folder, print;
    for (const auto &file : files) {
        key += '\n' + file;
        print += fingerprint(file) + '\n';
    }
    struct Entry
    {
        std::string print;
        std::shared_ptr<void> store;
    };
    static std::mutex lock;
    static std::map<std::string, Entry> stores; // one per list of bundles: a rewritten bundle replaces its entry
    std::lock_guard hold(lock); // a second caller for the same bundles waits for the first one's store
    if (auto it = stores.find(key); it != stores.end() && it->second.print == print) return it->second.store;
    void *raw = t.storeNew();
    if (!raw) {
        error = "OpenSSL could not create a certificate store";
        return nullptr;
    }
    std::shared_ptr<void> store(raw, t.storeFree);
    for (const auto &file : files)
        if (t.storeLoadLocations(raw, file.c_str(), nullptr) != 1) {
            error = file + ": no CA certificate could be read from it";
            return nullptr;
        }
    // The folder is looked up by hash when a chain needs it, as curl uses CURLOPT_CAPATH; a missing one is
    // no error (curl ignores it too).
    if (!folder.empty()) t.storeLoadLocations(raw, nullptr, folder.c_str());
    // As curl sets its own store (lib/vtls/openssl.c, ossl_connect_step1): a certificate of the bundle anchors
    // a chain even when it is not a root (curl's default since 7.68), and trusted certificates come first.
    t.storeSetFlags(raw, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_TRUSTED_FIRST);
    stores[key] = {print, store};
    return store;
}

bool useCaStore(void *sslCtx, void *store)
{
    const LoadedTls &t = tls();
    if (!t.error.empty() || !sslCtx || !store) return false;
    // SSL_CTX_set_cert_store takes over one reference (and frees the store curl made).
    if (t.storeUpRef(store) != 1) return false;
    t.ctxSetCertStore(sslCtx, store);
    return true;
}

const CurlFunctions &curlFunctions()
{
    static const LoadedCurl curl;
    if (!curl.error.empty())
        throw AtlasError(ErrorKind::Source, "libcurl is needed for network sources and " + curl.error);
    return curl.f;
}

void sha256Digest(const void *bytes, std::size_t length, unsigned char out[32])
{
    static const LoadedCrypto crypto;
    if (!crypto.error.empty())
        throw AtlasError(ErrorKind::Source, "libcrypto is needed for SHA-256 digests and " + crypto.error);
    unsigned int written = 0;
    if (crypto.digest(bytes, length, out, &written, crypto.sha256(), nullptr) != 1 || written != 32)
        throw AtlasError(ErrorKind::Source, "libcrypto's SHA-256 failed");
}

} // namespace atlas
