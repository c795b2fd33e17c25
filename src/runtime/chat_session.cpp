#include "runtime/chat_session.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "base/error.h"
#include "chat/reply.h"
#include "runtime/chat_render.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

ChatSession::ChatSession(const LoadedModel& model, Context& ctx, ChatOptions options)
    : model_(model),
      ctx_(ctx),
      opt_(std::move(options)),
      render_text_(chat_renderer(model, opt_.template_override, opt_.template_variables)),
      reply_format_(
          chat::reply_format_of(chat_template_source(model, opt_.template_override).text)),
      sampler_(opt_.sampling) {}

void ChatSession::reset() {
    messages_ = json::array();
    sampler_.reset();
}

std::vector<int32_t> ChatSession::render(const json& turns) {
    json all = json::array();
    if (!opt_.system_prompt.empty()) {
        all.push_back({{"role", "system"}, {"content", opt_.system_prompt}});
    }
    for (const json& m : turns) all.push_back(m);
    rendered_ = render_text_(all);
    std::vector<int32_t> tokens = model_.vocab->tokenize(rendered_, true, true);
    // A template that writes the BOS text, tokenized with the BOS added: one is enough.
    const int32_t bos = model_.vocab->bos();
    if (tokens.size() >= 2 && bos >= 0 && tokens[0] == bos && tokens[1] == bos) {
        tokens.erase(tokens.begin());
    }
    return tokens;
}

ChatReply ChatSession::send(std::string_view user,
                            const std::function<bool(std::string_view)>& on_text) {
    cancel_.store(false);
    ChatReply reply;
    const auto start = Clock::now();
    json turns = messages_;
    turns.push_back({{"role", "user"}, {"content", std::string(user)}});

    // Room for a reply: the tokens asked for, or a quarter of the context.
    const uint32_t n_ctx = ctx_.n_ctx();
    const uint32_t room = std::min<uint32_t>(opt_.n_predict > 0 ? uint32_t(opt_.n_predict) : 256,
                                             std::max<uint32_t>(1, n_ctx / 4));
    std::vector<int32_t> prompt = render(turns);
    while (prompt.size() + room > n_ctx && turns.size() > 1) {
        // The oldest exchange goes (a user turn and the reply to it), so roles still alternate.
        const size_t n = turns.size() > 2 && turns[1]["role"] == "assistant" ? 2 : 1;
        turns.erase(turns.begin(), turns.begin() + long(n));
        reply.n_dropped_turns += int32_t(n);
        prompt = render(turns);
    }
    if (prompt.size() + 1 > n_ctx) {
        fail(ErrorKind::invalid_argument,
             "chat: the message needs {} tokens with the system prompt, the context holds {}; "
             "raise -c or shorten it",
             prompt.size(), n_ctx);
    }
    messages_ = turns;

    // Decode only what the cache does not hold: at least the last token, for its logits.
    const uint32_t reuse = ctx_.seq_keepable(
        0, std::min<uint32_t>(ctx_.seq_common_prefix(0, prompt), uint32_t(prompt.size()) - 1));
    ctx_.seq_truncate(0, reuse);
    ctx_.decode(prompt.data() + reuse, uint32_t(prompt.size() - reuse), false);
    reply.n_prompt_tokens = int32_t(prompt.size());
    reply.n_reused_tokens = int32_t(reuse);
    reply.prompt_ms = ms_since(start);

    const auto gen_start = Clock::now();
    sampler_.reset();
    for (int32_t t : prompt) sampler_.accept(t);
    // Reasoning and tool-call markers (special tokens among them) are rendered as text for the
    // parser to split on.
    const std::unique_ptr<chat::ReplyParser> parser =
        chat::make_reply_parser(reply_format_, rendered_);
    TokenTextStream detok(*model_.vocab, parser != nullptr);
    // The answer's text to the caller; false: stop.
    const auto take = [&](const std::string& piece) {
        std::string answer = piece;
        if (parser) {
            const chat::ReplyDelta d = piece.empty() ? parser->finish() : parser->push(piece);
            reply.reasoning += d.reasoning;
            answer = d.content;
            if (!d.reasoning.empty() && opt_.on_reasoning && !opt_.on_reasoning(d.reasoning))
                return false;
        }
        reply.text += answer;
        return answer.empty() || on_text(answer);
    };
    const int32_t n_vocab = int32_t(model_.model.hp.n_vocab);
    // Speculation: the tokens a step returned, shown one by one; all but the last are in the
    // cache already (accepted drafts), the last is decoded with the next drafts.
    std::vector<int32_t> ahead;
    size_t next = 0;
    for (;;) {
        if (cancel_.load()) {
            reply.cancelled = true;
            break;
        }
        int32_t token = 0;
        bool in_cache = false;
        if (next < ahead.size()) {
            token = ahead[next];
            in_cache = ++next < ahead.size();
        } else {
            token = sampler_.sample(ctx_.logits(-1), n_vocab);
            sampler_.accept(token);
        }
        if (model_.vocab->is_eog(token)) break;
        ++reply.n_generated;
        const std::string piece = detok.push(token);
        if (!piece.empty() && !take(piece)) {
            reply.cancelled = true;
            break;
        }
        if (opt_.n_predict > 0 && reply.n_generated >= opt_.n_predict) break;
        if (in_cache) continue;
        if (ctx_.seq_len(0) + 1 > n_ctx) {
            reply.context_full = true;
            break;
        }
        if (spec_) {
            ahead.clear();
            next = 0;
            const uint32_t left = opt_.n_predict > 0 ? uint32_t(opt_.n_predict - reply.n_generated)
                                                     : std::numeric_limits<uint32_t>::max();
            spec_->step(token, sampler_, left, ahead);
        } else {
            ctx_.decode(&token, 1, false);
        }
        if (opt_.after_token) opt_.after_token(ctx_);
    }
    const std::string rest = detok.finish();
    if (!rest.empty()) take(rest);
    if (parser) take("");  // the parser's end: what it held back
    reply.decode_ms = ms_since(gen_start);
    messages_.push_back({{"role", "assistant"}, {"content", reply.text}});
    return reply;
}

}  // namespace mw
