/* simple.c in one call: mw_generate() tokenizes the prompt, decodes it, samples and passes each
 * piece of text to a callback as soon as it is complete UTF-8.
 *
 *   generate MODEL.gguf [PROMPT] [N_PREDICT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwall.h"

static bool print_piece(void* user_data, const char* piece, size_t len) {
    (void)user_data;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return true; /* false would stop the generation here */
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_PREDICT]\n", argv[0]);
        return 2;
    }
    const char* prompt = argc > 2 ? argv[2] : "Once upon a time";

    mw_model* model = NULL;
    mw_context* ctx = NULL;
    if (mw_model_load(argv[1], NULL, &model) != MW_OK ||
        mw_context_create(model, NULL, &ctx) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        mw_model_free(model);
        return 1;
    }

    mw_generate_params gp = mw_generate_default_params();
    gp.n_predict = argc > 3 ? atoi(argv[3]) : 32;
    gp.sampling.temperature = 0.0f; /* greedy: the same text every run */
    mw_generate_result result;
    printf("%s", prompt);
    const mw_status st =
        mw_generate(ctx, prompt, (int32_t)strlen(prompt), &gp, print_piece, NULL, &result);
    printf("\n");
    if (st != MW_OK)
        fprintf(stderr, "%s\n", mw_last_error());
    else
        fprintf(stderr, "%d prompt tokens, %d generated, stop reason %d\n", result.n_prompt_tokens,
                result.n_generated, (int)result.stop);

    mw_context_free(ctx);
    mw_model_free(model);
    return st == MW_OK ? 0 : 1;
}
