#include "runtime/stop_strings.h"

#include <algorithm>

namespace mw {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopMatcher::push(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);
    // The earliest complete stop string wins.
    size_t first = std::string::npos;
    for (const std::string& s : stops_) {
        const size_t at = held_.find(s);
        if (at < first) {
            first = at;
            matched_ = s;
        }
    }
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first);
        held_.clear();
        return out;
    }
    // Hold back the longest suffix that is a prefix of some stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
            if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                keep = n;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::finish() {
    std::string out;
    out.swap(held_);
    return stopped_ ? std::string() : out;
}

}  // namespace mw
