// Stop strings for streamed text: generated text is fed piece by piece; what cannot be the start
// of a stop string is released at once, what could be is held back until it is decided. When a
// stop string appears, the text before it is released and the rest is dropped (OpenAI's `stop`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mw {

class StopMatcher {
  public:
    explicit StopMatcher(std::vector<std::string> stops = {});

    // Appends generated text; returns the text now safe to show. After a stop string matched,
    // stopped() is true and further pushes return "".
    std::string push(std::string_view text);
    // The end of generation: releases what was held back.
    std::string finish();
    bool stopped() const { return stopped_; }
    // The stop string that matched ("" if none).
    const std::string& matched() const { return matched_; }

  private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace mw
