#pragma once

// libcurl, libcrypto and libssl, opened when first needed rather than linked: a command on a local folder never
// loads them (with their thirty dependencies, GnuTLS, Kerberos, LDAP and their constructors, that is 6 to
// 7 ms of every start, 8 % of the 141-shard `inspect --json`). Include after <curl/curl.h> (with
// CURL_DISABLE_TYPECHECK) and call lib::curl_easy_init() and so on: the same functions, through the opened
// library. A library that cannot be opened is an AtlasError naming it, raised where it is first needed.
#include <cstddef>
#include <string>

#ifdef CURLINC_CURL_H
namespace atlas {

struct CurlFunctions
{
    CURLcode (*global_init)(long);
    CURL *(*easy_init)();
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free)(void *);
    time_t (*getdate)(const char *, const time_t *);
    curl_slist *(*slist_append)(curl_slist *, const char *);
    void (*slist_free_all)(curl_slist *);
    CURLM *(*multi_init)();
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, curl_waitfd[], unsigned int, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLU *(*url)();
    void (*url_cleanup)(CURLU *);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    curl_version_info_data *(*version_info)(CURLversion);
};

// Opened once (libcurl.so.4), then shared; throws AtlasError when it cannot be.
const CurlFunctions &curlFunctions();

namespace lib {
inline CURLcode curl_global_init(long flags) { return curlFunctions().global_init(flags); }
inline CURL *curl_easy_init() { return curlFunctions().easy_init(); }
inline void curl_easy_cleanup(CURL *e) { curlFunctions().easy_cleanup(e); }
inline void curl_easy_reset(CURL *e) { curlFunctions().easy_reset(e); }
template <typename T> CURLcode curl_easy_setopt(CURL *e, CURLoption o, T value) { return curlFunctions().easy_setopt(e, o, value); }
template <typename T> CURLcode curl_easy_getinfo(CURL *e, CURLINFO i, T out) { return curlFunctions().easy_getinfo(e, i, out); }
inline const char *curl_easy_strerror(CURLcode c) { return curlFunctions().easy_strerror(c); }
inline char *curl_easy_escape(CURL *e, const char *s, int n) { return curlFunctions().easy_escape(e, s, n); }
inline void curl_free(void *p) { curlFunctions().free(p); }
inline time_t curl_getdate(const char *s, const time_t *now) { return curlFunctions().getdate(s, now); }
inline curl_slist *curl_slist_append(curl_slist *l, const char *s) { return curlFunctions().slist_append(l, s); }
inline void curl_slist_free_all(curl_slist *l) { curlFunctions().slist_free_all(l); }
inline CURLM *curl_multi_init() { return curlFunctions().multi_init(); }
inline CURLMcode curl_multi_cleanup(CURLM *m) { return curlFunctions().multi_cleanup(m); }
template <typename T> CURLMcode curl_multi_setopt(CURLM *m, CURLMoption o, T value) { return curlFunctions().multi_setopt(m, o, value); }
inline CURLMcode curl_multi_add_handle(CURLM *m, CURL *e) { return curlFunctions().multi_add_handle(m, e); }
inline CURLMcode curl_multi_remove_handle(CURLM *m, CURL *e) { return curlFunctions().multi_remove_handle(m, e); }
inline CURLMcode curl_multi_perform(CURLM *m, int *running) { return curlFunctions().multi_perform(m, running); }
inline CURLMcode curl_multi_poll(CURLM *m, curl_waitfd extra[], unsigned int n, int timeoutMs, int *ret)
{
    return curlFunctions().multi_poll(m, extra, n, timeoutMs, ret);
}
inline CURLMsg *curl_multi_info_read(CURLM *m, int *left) { return curlFunctions().multi_info_read(m, left); }
inline CURLU *curl_url() { return curlFunctions().url(); }
inline void curl_url_cleanup(CURLU *u) { curlFunctions().url_cleanup(u); }
inline CURLUcode curl_url_set(CURLU *u, CURLUPart p, const char *s, unsigned int flags) { return curlFunctions().url_set(u, p, s, flags); }
inline CURLUcode curl_url_get(const CURLU *u, CURLUPart p, char **s, unsigned int flags) { return curlFunctions().url_get(u, p, s, flags); }
inline curl_version_info_data *curl_version_info(CURLversion v) { return curlFunctions().version_info(v); }
} // namespace lib

} // namespace atlas
#endif

#include <memory>
#include <vector>

namespace atlas {
// SHA-256 of `bytes` through libcrypto (libcrypto.so.3, opened at the first digest): 32 bytes into out.
void sha256Digest(const void *bytes, std::size_t length, unsigned char out[32]);

// True when a certificate store of ours can be handed to libcurl's TLS contexts: libcurl says it runs on
// OpenSSL 3 (`ssl_version`), and the libssl.so.3 and libcrypto.so.3 it loaded are the ones found here
// (RTLD_NOLOAD: never another copy). Call after libcurl is opened; otherwise curl loads its files itself.
bool caStoreUsable(const char *curlSslVersion);
// The certificates TLS connections are verified against: OpenSSL's X509_STORE of the CA bundles `files` and
// the hashed folder `folder` (may be empty), built once per process for each list of bundles and folder, and
// built again when a bundle changes (its inode, size, times), then shared by every connection. curl would load
// its bundle again for each connection's handshake: 20 ms of OpenSSL 3's PEM decoding for Debian's 146
// certificates, twice in a remote open (the Hub and its storage), each on the way to the first byte. Null,
// with `error` set, when a bundle does not load or the libraries are not usable (caStoreUsable).
std::shared_ptr<void> sharedCaStore(const std::vector<std::string> &files, const std::string &folder,
                                    std::string &error);
// Makes `store` the certificate store of OpenSSL's `sslCtx` (SSL_CTX_set_cert_store); false when it cannot.
bool useCaStore(void *sslCtx, void *store);
} // namespace atlas
