/* The public API used from plain C (as a phone app's JNI or Swift bridge would): compiles as C11
 * against memwall.h alone, loads stories260K, and checks tokens and greedy text against
 * llama.cpp's reference (../shared/reference/cases/stories260K.once.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memwall.h"

/* mw_generate's callback: appends to a buffer; stops after `stop_after` pieces when > 0. */
typedef struct collected {
    char text[1024];
    int n_pieces;
    int stop_after;
} collected;

static bool collect(void* user_data, const char* piece, size_t len) {
    collected* c = (collected*)user_data;
    CHECK(len > 0, "empty piece");
    const size_t room = sizeof c->text - strlen(c->text) - 1;
    strncat(c->text, piece, len < room ? len : room);
    ++c->n_pieces;
    return c->stop_after <= 0 || c->n_pieces < c->stop_after;
}

/* mw_generate gives the text of the low-level loop, stops for each reason it reports, keeps what
 * it passed on in the context, and refuses bad arguments with a message. */
static void check_generate(mw_model* model, const char* want) {
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 32;
    cp.n_threads = 1;
    mw_context* ctx = NULL;
    CHECK(mw_context_create(model, &cp, &ctx) == MW_OK, "%s", mw_last_error());
    if (!ctx) return;
    const char* prompt = "Once upon a time";
    mw_generate_params gp = mw_generate_default_params();
    CHECK(gp.n_predict == -1 && gp.add_special && gp.parse_special && !gp.render_special,
          "mw_generate_default_params");
    CHECK(gp.sampling.seed == 0 && gp.sampling.temperature > 0.79f && gp.sampling.top_k == 40,
          "sampling defaults");
    gp.sampling.temperature = 0.0f;
    gp.n_predict = 12;
    collected c = {"", 0, 0};
    mw_generate_result r;
    CHECK(mw_generate(ctx, prompt, (int32_t)strlen(prompt), &gp, collect, &c, &r) == MW_OK, "%s",
          mw_last_error());
    CHECK(strncmp(c.text, want, strlen(want)) == 0, "mw_generate text \"%s\"", c.text);
    CHECK(r.n_prompt_tokens == 5 && r.n_generated == 12 && r.stop == MW_STOP_N_PREDICT,
          "result %d %d %d", r.n_prompt_tokens, r.n_generated, (int)r.stop);
    CHECK(mw_context_n_past(ctx) == 17, "n_past %u: every token passed on is cached",
          mw_context_n_past(ctx));

    /* Continuing with an empty prompt runs into the full context of 32. */
    gp.n_predict = -1;
    gp.add_special = false;
    collected more = {"", 0, 0};
    CHECK(mw_generate(ctx, "", 0, &gp, collect, &more, &r) == MW_OK, "%s", mw_last_error());
    CHECK(r.stop == MW_STOP_CONTEXT_FULL || r.stop == MW_STOP_END_TOKEN, "stop %d", (int)r.stop);
    CHECK(r.stop != MW_STOP_CONTEXT_FULL || mw_context_n_past(ctx) == 32, "n_past %u",
          mw_context_n_past(ctx));
    CHECK(mw_generate(ctx, prompt, (int32_t)strlen(prompt), &gp, collect, &more, &r) ==
              MW_ERR_CONTEXT_FULL,
          "a prompt that does not fit");
    CHECK(strstr(mw_last_error(), "does not fit") != NULL, "%s", mw_last_error());

    /* The callback stops it; a bad n_predict is refused. */
    mw_context_truncate(ctx, 0);
    gp.add_special = true;
    collected two = {"", 0, 2};
    CHECK(mw_generate(ctx, prompt, (int32_t)strlen(prompt), &gp, collect, &two, &r) == MW_OK, "%s",
          mw_last_error());
    CHECK(r.stop == MW_STOP_CALLBACK && two.n_pieces == 2, "stop %d after %d pieces", (int)r.stop,
          two.n_pieces);
    gp.n_predict = -5;
    CHECK(mw_generate(ctx, prompt, (int32_t)strlen(prompt), &gp, NULL, NULL, NULL) ==
              MW_ERR_INVALID_ARGUMENT,
          "n_predict -5");
    CHECK(strstr(mw_last_error(), "n_predict = -5") != NULL, "%s", mw_last_error());
    CHECK(mw_generate(NULL, prompt, 1, NULL, NULL, NULL, NULL) == MW_ERR_INVALID_ARGUMENT,
          "NULL ctx");
    mw_context_free(ctx);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: c_api_test SHARED_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", argv[1]);

    /* Errors are values with messages. */
    mw_model* model = NULL;
    CHECK(mw_model_load("/nonexistent/model.gguf", NULL, &model) == MW_ERR_IO, "%s",
          mw_last_error());
    CHECK(model == NULL, "model set on failure");
    CHECK(strstr(mw_last_error(), "/nonexistent/model.gguf") != NULL, "%s", mw_last_error());
    char not_gguf[4096];
    snprintf(not_gguf, sizeof not_gguf, "%s/models/PROVENANCE.md", argv[1]);
    CHECK(mw_model_load(not_gguf, NULL, &model) == MW_ERR_BAD_FILE, "%s", mw_last_error());
    CHECK(strstr(mw_last_error(), "not a GGUF file") != NULL, "%s", mw_last_error());

    mw_model_params mp = mw_model_default_params();
    mw_status st = mw_model_load(path, &mp, &model);
    if (st != MW_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, mw_last_error());
        return 1;
    }
    CHECK(mw_model_n_vocab(model) == 512, "n_vocab %d", mw_model_n_vocab(model));
    CHECK(strcmp(mw_model_arch(model), "llama") == 0, "arch %s", mw_model_arch(model));

    /* API 4: a memory budget is off by default; without one there are no expert cache figures.
       A budget too small for a dense model's resident part is refused with the numbers. */
    CHECK(MEMWALL_API_VERSION >= 4, "MEMWALL_API_VERSION %d", MEMWALL_API_VERSION);
    CHECK(mp.mem_budget == 0, "default mem_budget %llu", (unsigned long long)mp.mem_budget);
    mw_expert_cache_stats ecs;
    CHECK(mw_model_expert_cache_stats(model, &ecs) == MW_OK && ecs.budget_bytes == 0 &&
              ecs.n_slots == 0,
          "expert cache stats without a budget");
    mw_model_params small = mp;
    small.mem_budget = 1 << 20;
    mw_model* refused = NULL;
    CHECK(mw_model_load(path, &small, &refused) == MW_ERR_OUT_OF_MEMORY && refused == NULL,
          "a 1 MiB budget: %s", mw_last_error());
    CHECK(strstr(mw_last_error(), "too small") != NULL, "%s", mw_last_error());

    /* API 7: a dense model under a budget smaller than its weights streams its layers. */
    mw_layer_stream_stats lss;
    CHECK(mw_model_layer_stream_stats(model, &lss) == MW_OK && lss.budget_bytes == 0,
          "layer stream stats without a budget");
    mw_model_params streamed = mp;
    streamed.mem_budget = (uint64_t)(33.2 * 1048576); /* two of stories260K's five layers */
    mw_model* dense = NULL;
    CHECK(mw_model_load(path, &streamed, &dense) == MW_OK, "%s", mw_last_error());
    if (dense) {
        mw_context_params scp = mw_context_default_params();
        scp.n_ctx = 64;
        scp.n_threads = 1;
        mw_context* sctx = NULL;
        CHECK(mw_context_create(dense, &scp, &sctx) == MW_OK, "%s", mw_last_error());
        if (sctx) {
            mw_token bos = 1;
            CHECK(mw_decode(sctx, &bos, 1, false) == MW_OK, "%s", mw_last_error());
            CHECK(mw_model_layer_stream_stats(dense, &lss) == MW_OK && lss.n_layer == 5 &&
                      lss.n_slots == 2 && lss.acquires == 5 && lss.bytes_read > 0,
                  "layer stream: %u of %u layers, %llu used", lss.n_slots, lss.n_layer,
                  (unsigned long long)lss.acquires);
            mw_context_free(sctx);
        }
        mw_model_free(dense);
    }

    const char* prompt = "Once upon a time";
    mw_token tokens[16];
    int32_t n = mw_tokenize(model, prompt, (int32_t)strlen(prompt), tokens, 16, true, true);
    const mw_token expected[] = {1, 403, 407, 261, 378};
    CHECK(n == 5, "n_tokens %d", n);
    for (int i = 0; i < 5 && i < n; ++i)
        CHECK(tokens[i] == expected[i], "token %d is %d", i, tokens[i]);
    CHECK(mw_tokenize(model, prompt, (int32_t)strlen(prompt), tokens, 2, true, true) == -5,
          "too-small buffer must report the size needed");

    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    mw_context* ctx = NULL;
    st = mw_context_create(model, &cp, &ctx);
    CHECK(st == MW_OK, "%s", mw_last_error());
    if (st != MW_OK) return 1;
    CHECK(mw_decode(ctx, tokens, n, false) == MW_OK, "%s", mw_last_error());

    mw_sampler_params sp = mw_sampler_default_params();
    sp.temperature = 0.0f;
    mw_sampler* sampler = mw_sampler_create(&sp);
    mw_detokenizer* detok = mw_detokenizer_create(model, false);
    char text[1024] = "";
    for (int i = 0; i < 12; ++i) {
        mw_token t = mw_sampler_sample(sampler, mw_get_logits(ctx, -1), mw_model_n_vocab(model));
        size_t len = 0;
        const char* piece = mw_detokenizer_push(detok, t, &len);
        strncat(text, piece, len);
        CHECK(mw_decode(ctx, &t, 1, false) == MW_OK, "%s", mw_last_error());
    }
    const char* want = ", there was a little girl named Lily.";
    CHECK(strncmp(text, want, strlen(want)) == 0, "greedy text \"%s\"", text);

    /* A batch that does not fit is refused with a clear status, and nothing breaks. */
    mw_token many[64];
    for (int i = 0; i < 64; ++i) many[i] = 5;
    CHECK(mw_decode(ctx, many, 64, false) == MW_ERR_CONTEXT_FULL, "%s", mw_last_error());
    CHECK(mw_decode(ctx, &many[0], 1, false) == MW_OK, "%s", mw_last_error());
    mw_token bad = 100000;
    CHECK(mw_decode(ctx, &bad, 1, false) == MW_ERR_INVALID_ARGUMENT, "%s", mw_last_error());

    /* Pacing from C, as an app's decode loop calls it: a speed limit, so no sensor is needed;
     * the context's threads are what a pace sets. */
    mw_pacer_params pp = mw_pacer_default_params();
    pp.max_tps = 1000.0;
    mw_pacer* pacer = NULL;
    CHECK(mw_pacer_create(&pp, &pacer) == MW_OK, "%s", mw_last_error());
    mw_pace pace;
    CHECK(mw_pacer_pace(pacer, ctx, &pace) == MW_OK, "%s", mw_last_error());
    CHECK(pace.n_threads == mw_context_n_threads(ctx), "threads %d", pace.n_threads);
    CHECK(mw_context_set_threads(ctx, 0) == MW_ERR_INVALID_ARGUMENT, "set_threads 0 accepted");
    mw_pacer_free(pacer);

    mw_speed_conditions sc;
    memset(&sc, 0, sizeof sc);
    sc.n_gen = 12;
    sc.n_depth = 5;
    sc.n_threads = 1;
    sc.type_k = MW_TYPE_F16;
    sc.type_v = MW_TYPE_F16;
    sc.sampling = &sp;
    char label[128];
    mw_speed_label(&sc, label, sizeof label);
    CHECK(strcmp(label, "tg12 d5 t1 kv f16 greedy") == 0, "label \"%s\"", label);

    mw_detokenizer_free(detok);
    mw_sampler_free(sampler);
    mw_context_free(ctx);

    check_generate(model, want);
    mw_model_free(model);
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
