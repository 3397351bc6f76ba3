#ifndef KEEPSAKE_CCURL_SHIM_H
#define KEEPSAKE_CCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// wrapper per argument kind.
static inline CURLcode ks_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ks_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ks_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ks_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*ks_curl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode ks_curl_set_callback(CURL *handle, CURLoption option, ks_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}
// CURLOPT_XFERINFOFUNCTION: called during a transfer (at least once a second); a non-zero
// return aborts it with CURLE_ABORTED_BY_CALLBACK.
typedef int (*ks_curl_xferinfo_callback)(void *context, curl_off_t download_total, curl_off_t download_now,
                                         curl_off_t upload_total, curl_off_t upload_now);
static inline CURLcode ks_curl_set_xferinfo_callback(CURL *handle, ks_curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
// CURLOPT_SEEKFUNCTION: rewinds an upload, which curl needs when it resends a request on a
// fresh connection because the reused one turned out to be closed.
typedef int (*ks_curl_seek_callback)(void *context, curl_off_t offset, int origin);
static inline CURLcode ks_curl_set_seek_callback(CURL *handle, ks_curl_seek_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}
static inline CURLcode ks_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ks_curl_get_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
