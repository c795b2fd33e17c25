// Speculative decoding through the C API (what `memwall run` and `chat` use): mw_generate with a
// speculator (n-gram lookup, the model as its own draft) gives the text and token count of plain
// greedy generation, across two calls on one context; a chat with speculation replies as one
// without over two turns and counts its passes; bad parameters are MW_ERR_INVALID_ARGUMENT.
#include <gtest/gtest.h>

#include <string>

#include "memwall.h"
#include "support/test_support.h"

namespace {

struct Model {
    mw_model* model = nullptr;
    explicit Model(const char* relative) {
        const std::string path = mw::test::shared_path(relative);
        EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    }
    ~Model() { mw_model_free(model); }
};

bool append(void* user, const char* piece, size_t n) {
    static_cast<std::string*>(user)->append(piece, n);
    return true;
}

mw_context* make_context(mw_model* m) {
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 2;
    mw_context* ctx = nullptr;
    EXPECT_EQ(mw_context_create(m, &cp, &ctx), MW_OK) << mw_last_error();
    return ctx;
}

// Two generate calls (a prompt, then a continuation) with or without speculation.
std::string generate_twice(mw_model* m, int spec_type, int32_t* n_generated) {
    mw_context* ctx = make_context(m);
    mw_context* draft = spec_type == MW_SPEC_DRAFT ? make_context(m) : nullptr;
    mw_speculator* spec = nullptr;
    if (spec_type) {
        mw_spec_params sp = mw_spec_default_params();
        sp.type = mw_spec_type(spec_type);
        sp.draft_max = 5;
        sp.ngram_size_n = 2;
        EXPECT_EQ(mw_speculator_create(ctx, draft, &sp, &spec), MW_OK) << mw_last_error();
    }
    mw_generate_params p = mw_generate_default_params();
    p.sampling.temperature = 0;
    p.n_predict = 40;
    p.speculator = spec;
    std::string text;
    mw_generate_result r{};
    EXPECT_EQ(mw_generate(ctx, "Once upon a time", -1 + int32_t(sizeof("Once upon a time")), &p,
                          append, &text, &r),
              MW_OK)
        << mw_last_error();
    *n_generated = r.n_generated;
    p.add_special = false;
    EXPECT_EQ(mw_generate(ctx, " The end. Once", 14, &p, append, &text, &r), MW_OK)
        << mw_last_error();
    *n_generated += r.n_generated;
    if (spec) {
        const mw_spec_stats st = mw_speculator_stats(spec);
        EXPECT_GT(st.n_passes + st.n_plain_steps, 0);
        if (spec_type == MW_SPEC_DRAFT) {
            EXPECT_GT(st.n_accepted, 0);
        }
    }
    mw_speculator_free(spec);
    mw_context_free(draft);
    mw_context_free(ctx);
    return text;
}

TEST(SpecApi, GenerateWithASpeculatorGivesThePlainGreedyText) {
    for (const char* path : {"models/stories260K.gguf", "reference/models/qwen35-tiny-F16.gguf"}) {
        SCOPED_TRACE(path);
        Model m(path);
        int32_t n_plain = 0, n_ngram = 0, n_draft = 0;
        const std::string plain = generate_twice(m.model, 0, &n_plain);
        EXPECT_EQ(generate_twice(m.model, MW_SPEC_NGRAM, &n_ngram), plain);
        EXPECT_EQ(generate_twice(m.model, MW_SPEC_DRAFT, &n_draft), plain);
        EXPECT_EQ(n_ngram, n_plain);
        EXPECT_EQ(n_draft, n_plain);
    }
}

TEST(SpecApi, ChatWithSpeculationRepliesAsWithout) {
    Model m("models/stories260K.gguf");
    mw_spec_params sp = mw_spec_default_params();
    sp.type = MW_SPEC_DRAFT;
    sp.draft_max = 4;
    std::string replies[2];
    for (int with = 0; with < 2; ++with) {
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = 512;
        cp.n_threads = 2;
        mw_chat_params p = mw_chat_default_params();
        p.chat_template = "chatml";
        p.sampling.temperature = 0;
        p.n_predict = 24;
        if (with) {
            p.speculative = &sp;
            p.draft_model = m.model;
        }
        mw_chat* chat = nullptr;
        ASSERT_EQ(mw_chat_create(m.model, &cp, &p, &chat), MW_OK) << mw_last_error();
        for (const char* turn : {"Tell me about a cat.", "And a dog?"}) {
            EXPECT_EQ(
                mw_chat_send(chat, turn, std::string(turn).size(), append, &replies[with], nullptr),
                MW_OK)
                << mw_last_error();
        }
        const mw_spec_stats st = mw_chat_spec_stats(chat);
        if (with) {
            EXPECT_GT(st.n_passes, 0);
            EXPECT_GT(st.n_accepted, 0);
        } else {
            EXPECT_EQ(st.n_passes, 0);
        }
        mw_chat_free(chat);
    }
    EXPECT_EQ(replies[1], replies[0]);
}

TEST(SpecApi, BadParametersAreInvalidArguments) {
    Model m("models/stories260K.gguf");
    mw_context* ctx = make_context(m.model);
    mw_spec_params sp = mw_spec_default_params();
    mw_speculator* spec = nullptr;
    sp.draft_max = 0;
    EXPECT_EQ(mw_speculator_create(ctx, nullptr, &sp, &spec), MW_ERR_INVALID_ARGUMENT);
    sp.draft_max = -3;
    EXPECT_EQ(mw_speculator_create(ctx, nullptr, &sp, &spec), MW_ERR_INVALID_ARGUMENT);
    sp = mw_spec_default_params();
    sp.type = MW_SPEC_DRAFT;  // no draft context
    EXPECT_EQ(mw_speculator_create(ctx, nullptr, &sp, &spec), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("draft"), std::string::npos);
    EXPECT_EQ(spec, nullptr);
    mw_context_free(ctx);
}

// memwall run: greedy text with -md (the model as its own draft) and with n-gram lookup is the
// plain text; --draft-max 0 and a draft of another vocabulary are refused with their reasons.
TEST(SpecCli, RunSpeculatesAndRefusesBadDrafts) {
    const std::string model = mw::test::shared_path("models/stories260K.gguf");
    const std::string run =
        mw::test::cli_path() + " run -m " + model + " -p 'Once upon a time' -n 40 --temp 0 -t 1";
    const mw::test::CommandResult plain = mw::test::run_command(run);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    // Also with llama.cpp v0.5.0's names of the flags and types.
    for (const std::string& flags :
         {" -md " + model + " --draft-max 4 --verbose", std::string(" --spec-type ngram"),
          " --spec-type draft-simple --spec-draft-model " + model + " --spec-draft-n-max 3",
          std::string(" --spec-type ngram-simple --spec-ngram-simple-size-n 2")}) {
        const mw::test::CommandResult r = mw::test::run_command(run + flags);
        ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
        EXPECT_EQ(r.out, plain.out) << flags;
        EXPECT_NE(r.err.find("speculative: "), std::string::npos) << r.err;
    }
    const mw::test::CommandResult zero =
        mw::test::run_command(run + " --spec-type ngram --draft-max 0");
    EXPECT_EQ(zero.exit_code, 2);
    EXPECT_NE(zero.err.find("--draft-max 0"), std::string::npos) << zero.err;
    const mw::test::CommandResult unknown = mw::test::run_command(run + " --spec-type eagle");
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("eagle"), std::string::npos) << unknown.err;
    // draft-mtp is mtp: this file has no MTP layers.
    const mw::test::CommandResult no_mtp = mw::test::run_command(run + " --spec-type draft-mtp");
    EXPECT_EQ(no_mtp.exit_code, 2);
    EXPECT_NE(no_mtp.err.find("no MTP layers"), std::string::npos) << no_mtp.err;
    const mw::test::CommandResult other = mw::test::run_command(
        run + " -md " + mw::test::shared_path("reference/models/qwen2-tiny-F16.gguf"));
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_NE(other.err.find("vocabulary"), std::string::npos) << other.err;
    EXPECT_TRUE(other.out.empty());
}

}  // namespace
