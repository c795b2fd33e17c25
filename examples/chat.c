/* A conversation in a few lines: mw_chat renders the history with the model's chat template,
 * decodes only the new turn (the earlier ones stay in the KV cache) and streams the reply.
 * Each line of stdin is one user message.
 *
 *   chat MODEL.gguf [SYSTEM_PROMPT] < questions.txt
 */
#include <stdio.h>
#include <string.h>

#include "memwall.h"

static bool print_piece(void* user_data, const char* piece, size_t len) {
    (void)user_data;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return true; /* false would stop this reply */
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [SYSTEM_PROMPT] < messages\n", argv[0]);
        return 2;
    }
    mw_model* model = NULL;
    if (mw_model_load(argv[1], NULL, &model) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        return 1;
    }
    mw_chat_params params = mw_chat_default_params();
    params.system_prompt = argc > 2 ? argv[2] : NULL;
    params.chat_template =
        NULL; /* the file's template; a built-in name such as "chatml" also works */
    params.n_predict = 64;
    params.sampling.temperature = 0.0f; /* greedy: the same replies every run */
    mw_chat* chat = NULL;
    if (mw_chat_create(model, NULL, &params, &chat) != MW_OK) {
        fprintf(stderr, "%s\n", mw_last_error());
        mw_model_free(model);
        return 1;
    }

    char line[4096];
    int status = 0;
    while (fgets(line, sizeof line, stdin)) {
        const size_t len = strcspn(line, "\n");
        if (len == 0) continue;
        mw_chat_reply reply;
        if (mw_chat_send(chat, line, len, print_piece, NULL, &reply) != MW_OK) {
            fprintf(stderr, "%s\n", mw_last_error());
            status = 1;
            break;
        }
        printf("\n");
        fprintf(stderr, "(%d prompt tokens, %d of them cached; %d generated)\n",
                reply.n_prompt_tokens, reply.n_reused_tokens, reply.n_generated);
    }
    mw_chat_free(chat);
    mw_model_free(model);
    return status;
}
