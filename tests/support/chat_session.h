// `memwall chat`'s session through the C API, on a reference model with a published chat
// template (tests/server_reply_test.cpp, tests/server_harmony_test.cpp).
#pragma once

#include <functional>
#include <string>

#include "memwall.h"

namespace mw::test {

class ChatSession {
  public:
    struct Turn {
        std::string text, reasoning;  // what on_text and on_reasoning received
        mw_chat_reply reply{};
        mw_status status = MW_OK;
    };

    // `model`: a path under ../shared; `template_file`: a name in
    // tests/data/chat-templates/templates. Greedy, 10 tokens a reply, 2 threads; `adjust` may
    // change the parameters before the session is made. status() says whether it was.
    ChatSession(const std::string& model, const std::string& template_file, uint32_t n_ctx,
                const std::function<void(mw_chat_params&)>& adjust = {});
    ~ChatSession();
    ChatSession(const ChatSession&) = delete;
    ChatSession& operator=(const ChatSession&) = delete;

    mw_status status() const { return status_; }
    Turn send(const std::string& message);

  private:
    std::string template_;
    mw_model* model_ = nullptr;
    mw_chat* chat_ = nullptr;
    mw_status status_ = MW_OK;
    Turn* turn_ = nullptr;  // the turn being collected
};

}  // namespace mw::test
