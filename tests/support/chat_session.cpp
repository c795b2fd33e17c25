#include "support/chat_session.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace mw::test {

ChatSession::ChatSession(const std::string& model, const std::string& template_file, uint32_t n_ctx,
                         const std::function<void(mw_chat_params&)>& adjust)
    : template_(read_text(std::string(MEMWALL_TESTS_DIR) + "/data/chat-templates/templates/" +
                          template_file)) {
    const std::string path = shared_path(model);
    status_ = mw_model_load(path.c_str(), nullptr, &model_);
    EXPECT_EQ(status_, MW_OK) << mw_last_error();
    if (status_ != MW_OK) return;
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = 2;
    mw_chat_params p = mw_chat_default_params();
    p.chat_template = template_.c_str();
    p.sampling.temperature = 0;
    p.n_predict = 10;
    p.on_reasoning = [](void* user, const char* piece, size_t n) {
        static_cast<ChatSession*>(user)->turn_->reasoning.append(piece, n);
        return true;
    };
    p.reasoning_user_data = this;
    if (adjust) adjust(p);
    status_ = mw_chat_create(model_, &cp, &p, &chat_);
}

ChatSession::~ChatSession() {
    if (chat_) mw_chat_free(chat_);
    if (model_) mw_model_free(model_);
}

ChatSession::Turn ChatSession::send(const std::string& message) {
    Turn turn;
    if (!chat_) {
        ADD_FAILURE() << "no chat session to send to";
        turn.status = MW_ERR_INVALID_ARGUMENT;
        return turn;
    }
    turn_ = &turn;
    turn.status = mw_chat_send(
        chat_, message.data(), message.size(),
        [](void* user, const char* piece, size_t n) {
            static_cast<Turn*>(user)->text.append(piece, n);
            return true;
        },
        &turn, &turn.reply);
    turn_ = nullptr;
    EXPECT_EQ(turn.status, MW_OK) << mw_last_error();
    return turn;
}

}  // namespace mw::test
