// Names of remote files: which strings are URLs, what an hf:// name stands for, and what the
// validators a server sends (ETag, X-Linked-Etag) say about the file's SHA-256. No network here:
// this file builds without libcurl (MEMWALL_NET=OFF).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mw::net {

// http://, https:// or hf:// (everything else is a local path).
bool is_remote(std::string_view text);

struct RemoteUrl {
    std::string text;          // as given ("hf://owner/repo/file.gguf")
    std::string url;           // what is fetched (http or https)
    std::string bearer_token;  // HF_TOKEN for hf:// names, sent as "Authorization: Bearer"
    std::string file_name;     // the last path segment ("file.gguf"), the default output name
};

// hf://OWNER/REPO/PATH (or hf://OWNER/REPO@REVISION/PATH) becomes
// ENDPOINT/OWNER/REPO/resolve/REVISION/PATH, ENDPOINT being $MEMWALL_HF_ENDPOINT, else
// $HF_ENDPOINT, else https://huggingface.co, and REVISION "main" unless given. http(s) URLs are
// kept as they are. Throws ErrorKind::invalid_argument naming what is wrong.
RemoteUrl resolve_url(const std::string& text);

// The lowercase hex SHA-256 an ETag stands for, when it is one: 64 hex digits, quoted or not.
// A weak validator (W/"...") says the bytes may differ, so it is no hash.
std::optional<std::string> sha256_from_etag(std::string_view etag);

// Whether `text` is 64 hex digits (either case).
bool is_sha256_hex(std::string_view text);

}  // namespace mw::net
