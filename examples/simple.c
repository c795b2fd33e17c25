/* The smallest complete use of libmemwall's C API: load a model, tokenize a prompt, generate and
 * stream the text, with the low-level calls (decode, sample, detokenize) an app may want to
 * control one by one. generate.c does the same in one call, mw_generate().
 *
 *   simple MODEL.gguf [PROMPT] [N_PREDICT]
 *
 * Build against an installed memwall (README, "Embedding"):
 *   cc simple.c $(pkg-config --cflags --libs memwall) -o simple
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwall.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_PREDICT]\n", argv[0]);
        return 2;
    }
    const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
    const int n_predict = argc > 3 ? atoi(argv[3]) : 32;

    /* Load: errors are status codes, with a message naming the file and the field at fault. */
    mw_model* model = NULL;
    if (mw_model_load(argv[1], NULL, &model) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        return 1;
    }
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 512;
    mw_context* ctx = NULL;
    if (mw_context_create(model, &cp, &ctx) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        mw_model_free(model);
        return 1;
    }

    /* Tokenize: a call without room returns minus the count needed (INT32_MIN on an error). */
    const int32_t len = (int32_t)strlen(prompt);
    const int32_t needed = mw_tokenize(model, prompt, len, NULL, 0, true, true);
    if (needed == INT32_MIN || needed == 0) {
        fprintf(stderr, "cannot tokenize the prompt: %s\n", mw_last_error());
        mw_context_free(ctx);
        mw_model_free(model);
        return 1;
    }
    const int32_t n_prompt = needed < 0 ? -needed : needed;
    mw_token* tokens = malloc(sizeof(mw_token) * (size_t)n_prompt);
    mw_tokenize(model, prompt, len, tokens, n_prompt, true, true);

    /* Greedy sampling (temperature 0) gives the same text on every run. */
    mw_sampler_params sp = mw_sampler_default_params();
    sp.temperature = 0.0f;
    mw_sampler* sampler = mw_sampler_create(&sp);
    mw_detokenizer* detok = mw_detokenizer_create(model, false);

    int status = 0;
    if (mw_decode(ctx, tokens, n_prompt, false) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        status = 1;
    }
    printf("%s", prompt);
    for (int i = 0; status == 0 && i < n_predict; ++i) {
        const mw_token t =
            mw_sampler_sample(sampler, mw_get_logits(ctx, -1), mw_model_n_vocab(model));
        if (mw_token_is_eog(model, t)) break;
        mw_sampler_accept(sampler, t);
        size_t n = 0;
        const char* piece = mw_detokenizer_push(detok, t, &n); /* whole UTF-8 characters only */
        fwrite(piece, 1, n, stdout);
        fflush(stdout);
        if (mw_context_n_past(ctx) >= mw_context_n_ctx(ctx)) break; /* the context is full */
        if (mw_decode(ctx, &t, 1, false) != MW_OK) {
            fprintf(stderr, "\n%s\n", mw_last_error());
            status = 1;
        }
    }
    size_t n = 0;
    const char* rest = mw_detokenizer_flush(detok, &n);
    fwrite(rest, 1, n, stdout);
    printf("\n");

    const mw_perf perf = mw_context_perf(ctx);
    fprintf(stderr, "%d prompt tokens, %d generated, %.1f tok/s\n", perf.n_prompt_tokens,
            perf.n_decode_tokens,
            perf.decode_ms > 0 ? 1000.0 * perf.n_decode_tokens / perf.decode_ms : 0.0);
    mw_detokenizer_free(detok);
    mw_sampler_free(sampler);
    free(tokens);
    mw_context_free(ctx);
    mw_model_free(model);
    return status;
}
