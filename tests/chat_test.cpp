// mw_chat (what `memwall chat` runs) on stories260K with the chatml template: the second turn
// decodes only what the KV cache lacks and gives the reply a fresh chat of the same history
// gives; the oldest turns are dropped when the conversation outgrows the context; a message
// longer than the context is a clear error after which the chat goes on; the callback stops a
// reply; pacing spaces the tokens. And the CLI on a script read from standard input.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "memwall.h"
#include "support/test_support.h"

namespace {

struct Model {
    mw_model* model = nullptr;
    explicit Model(const char* relative = "models/stories260K.gguf") {
        const std::string path = mw::test::shared_path(relative);
        EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    }
    ~Model() { mw_model_free(model); }
};

struct Chat {
    mw_chat* chat = nullptr;
    Chat(mw_model* model, uint32_t n_ctx, int32_t n_predict, mw_pacer* pacer = nullptr) {
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = n_ctx;
        cp.n_threads = 1;
        mw_chat_params p = mw_chat_default_params();
        p.chat_template = "chatml";
        p.system_prompt = "You tell short stories.";
        p.sampling.temperature = 0;  // greedy: the replies can be compared
        p.n_predict = n_predict;
        p.pacer = pacer;
        EXPECT_EQ(mw_chat_create(model, &cp, &p, &chat), MW_OK) << mw_last_error();
    }
    ~Chat() { mw_chat_free(chat); }
    std::string send(const std::string& text, mw_chat_reply* reply, mw_status expect = MW_OK) {
        std::string out;
        const mw_status st = mw_chat_send(
            chat, text.data(), text.size(),
            [](void* user, const char* piece, size_t n) {
                static_cast<std::string*>(user)->append(piece, n);
                return true;
            },
            &out, reply);
        EXPECT_EQ(st, expect) << mw_last_error();
        return out;
    }
};

TEST(Chat, SecondTurnDecodesOnlyTheNewPartAndRepliesAsAFreshChat) {
    Model m;
    mw_chat_reply r1{}, r2{};
    std::string reply2;
    {
        Chat chat(m.model, 1024, 16);
        const std::string reply1 = chat.send("Tell me about a cat.", &r1);
        EXPECT_FALSE(reply1.empty());
        EXPECT_EQ(r1.n_reused_tokens, 0);
        EXPECT_EQ(r1.n_generated, 16);
        reply2 = chat.send("And a dog?", &r2);
        // Everything of turn 1 (its prompt and the reply) stays in the cache.
        EXPECT_GE(r2.n_reused_tokens, r1.n_prompt_tokens);
        EXPECT_LT(r2.n_prompt_tokens - r2.n_reused_tokens, r2.n_prompt_tokens / 2);
    }
    // The same two turns in a fresh chat: the same replies (prefix reuse changes nothing).
    Chat fresh(m.model, 1024, 16);
    mw_chat_reply f1{}, f2{};
    fresh.send("Tell me about a cat.", &f1);
    EXPECT_EQ(fresh.send("And a dog?", &f2), reply2);
    EXPECT_EQ(f2.n_reused_tokens, r2.n_reused_tokens);
}

// Qwen3.5's recurrent layers cannot be rewound: the second turn continues from a state the
// first left, at least the checkpoint at the end of its prompt (all of the first turn when its
// reply re-tokenizes the same, which this random model's garbage text does not), and replies as
// a fresh chat does.
TEST(Chat, SecondTurnReusesTheRecurrentStateOfHybridModels) {
    for (const char* path :
         {"reference/models/qwen35-tiny-F16.gguf", "reference/models/lfm2-tiny-F16.gguf"}) {
        SCOPED_TRACE(path);
        Model m(path);
        mw_chat_reply r1{}, r2{}, f1{}, f2{};
        std::string reply2;
        {
            Chat chat(m.model, 1024, 12);
            chat.send("Tell me about a cat.", &r1);
            reply2 = chat.send("And a dog?", &r2);
            EXPECT_GE(r2.n_reused_tokens, r1.n_prompt_tokens);
            EXPECT_LT(r2.n_prompt_tokens - r2.n_reused_tokens, r2.n_prompt_tokens / 2);
        }
        Chat fresh(m.model, 1024, 12);
        fresh.send("Tell me about a cat.", &f1);
        EXPECT_EQ(fresh.send("And a dog?", &f2), reply2);
    }
}

TEST(Chat, OldestTurnsAreDroppedWhenTheContextIsFull) {
    Model m;
    Chat chat(m.model, 160, 24);
    int dropped = 0;
    for (int turn = 0; turn < 8; ++turn) {
        mw_chat_reply r{};
        chat.send("Once upon a time there was a little girl named Lily.", &r);
        EXPECT_LE(r.n_prompt_tokens + r.n_generated, 160) << turn;
        dropped += r.n_dropped_turns;
    }
    EXPECT_GT(dropped, 0);
}

TEST(Chat, AMessageLongerThanTheContextIsAClearErrorAndTheChatGoesOn) {
    Model m;
    Chat chat(m.model, 128, 8);
    std::string longer;
    for (int i = 0; i < 100; ++i) longer += "the little dog ran and ran ";
    mw_chat_reply r{};
    chat.send(longer, &r, MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("context"), std::string::npos) << mw_last_error();
    EXPECT_FALSE(chat.send("Hello", &r).empty());
}

TEST(Chat, TheCallbackStopsTheReply) {
    Model m;
    Chat chat(m.model, 512, 64);
    mw_chat_reply r{};
    int pieces = 0;
    const std::string text = "Tell me a story.";
    ASSERT_EQ(mw_chat_send(
                  chat.chat, text.data(), text.size(),
                  [](void* user, const char*, size_t) { return ++*static_cast<int*>(user) < 3; },
                  &pieces, &r),
              MW_OK);
    EXPECT_TRUE(r.cancelled);
    EXPECT_EQ(pieces, 3);
    EXPECT_LT(r.n_generated, 64);
}

TEST(Chat, PacingSpacesTheTokens) {
    Model m;
    mw_pacer_params pp = mw_pacer_default_params();
    pp.max_tps = 40;  // 25 ms apart; unpaced the tiny model takes well under 1 ms a token
    mw_pacer* pacer = nullptr;
    ASSERT_EQ(mw_pacer_create(&pp, &pacer), MW_OK) << mw_last_error();
    {
        Chat chat(m.model, 512, 12, pacer);
        mw_chat_reply r{};
        chat.send("Tell me a story.", &r);
        ASSERT_EQ(r.n_generated, 12);
        // 11 gaps of at least 25 ms between the 12 tokens (a slow machine only adds to it).
        EXPECT_GE(r.decode_ms, 11 * 25.0 * 0.9);
    }
    EXPECT_NE(std::string(mw_pacer_summary(pacer)).find("tok/s"), std::string::npos)
        << mw_pacer_summary(pacer);
    mw_pacer_free(pacer);
}

TEST(ChatCli, ReadsAScriptFromStandardInput) {
    const std::string dir = mw::test::temp_dir();
    const std::string script = dir + "/script.txt";
    std::ofstream(script) << "Hello\n/reset\nTell me a story.\n/exit\nnot read\n";
    const mw::test::CommandResult r = mw::test::run_command(
        mw::test::cli_path() + " chat -m " + mw::test::shared_path("models/stories260K.gguf") +
        " --chat-template chatml --temp 0 -n 8 --max-tps 1000 < " + script);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("(conversation forgotten)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("pacing:"), std::string::npos) << r.err;
    // Two replies, one line each.
    int lines = 0;
    for (char c : r.out) lines += c == '\n';
    EXPECT_EQ(lines, 2) << r.out;
}

// Issue 40: the template in use is said at the start; /help, /bye and a mistyped /command are
// handled by chat, never sent to the model (one reply only, for the one message).
TEST(ChatCli, SaysItsTemplateAndKeepsCommandsFromTheModel) {
    const std::string dir = mw::test::temp_dir();
    const std::string script = dir + "/commands.txt";
    std::ofstream(script) << "/help\nHello\n/frob\n/bye\nnot read\n";
    const std::string chat = mw::test::cli_path() + " chat -m " +
                             mw::test::shared_path("models/stories260K.gguf") +
                             " --temp 0 -n 8 -t 1";
    const mw::test::CommandResult r =
        mw::test::run_command(chat + " --chat-template chatml < " + script);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("chat template: chatml (built-in, --chat-template)\n"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("/bye, /exit   end the chat"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("unknown command /frob: /help lists them (not sent)"), std::string::npos)
        << r.err;
    int lines = 0;
    for (char c : r.out) lines += c == '\n';
    EXPECT_EQ(lines, 1) << r.out;

    // /exit as before; without --chat-template the line says where the template comes from.
    std::ofstream(script) << "/exit\nnot read\n";
    const mw::test::CommandResult own = mw::test::run_command(chat + " < " + script);
    ASSERT_EQ(own.exit_code, 0) << own.err;
    EXPECT_NE(own.err.find("chat template: "), std::string::npos) << own.err;
    EXPECT_EQ(own.out, "");
}

// On a terminal (a pseudo-terminal from script(1)) the line is edited by libedit: the up arrow
// recalls "/help", which is then handled again instead of reaching the model as escape codes.
TEST(ChatCli, OnATerminalTheUpArrowRecallsTheLastLine) {
    if (mw::test::run_command("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
    if (mw::test::run_command("(ldconfig -p || /sbin/ldconfig -p) | grep -q libedit.so.2")
            .exit_code != 0)
        GTEST_SKIP() << "SKIPPED: libedit.so.2 is not installed (Debian: libedit2)";
    const std::string chat = mw::test::cli_path() + " chat -m " +
                             mw::test::shared_path("models/stories260K.gguf") +
                             " --chat-template chatml --temp 0 -n 4 -t 1";
    // The keys arrive one line at a time, as typed; then Ctrl-D.
    const mw::test::CommandResult r = mw::test::run_command(
        "(sleep 1; printf '/help\\r'; sleep 0.5; printf '\\033[A\\r'; sleep 0.5; printf "
        "'\\004') | TERM=xterm script -qfec \"" +
        chat + "\" /dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    size_t n = 0;
    for (size_t at = r.out.find("commands (never sent"); at != std::string::npos;
         at = r.out.find("commands (never sent", at + 1))
        ++n;
    EXPECT_EQ(n, 2u) << r.out;
}

TEST(ChatCli, BadFlagsAreClearErrors) {
    const std::string model = mw::test::shared_path("models/stories260K.gguf");
    mw::test::CommandResult r =
        mw::test::run_command(mw::test::cli_path() + " chat -m " + model + " -n 0 </dev/null");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("-n 0"), std::string::npos) << r.err;
    r = mw::test::run_command(mw::test::cli_path() + " chat -m " + model +
                              " --chat-template-file /nonexistent.jinja </dev/null");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("/nonexistent.jinja"), std::string::npos) << r.err;
    r = mw::test::run_command(mw::test::cli_path() + " chat -m " + model +
                              " --max-tps -1 </dev/null");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--max-tps"), std::string::npos) << r.err;
}

}  // namespace
