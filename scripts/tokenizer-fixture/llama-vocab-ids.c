// Token ids from llama.cpp for test strings, in test-tokenizer-0's .out format: one line of
// space-separated ids per string of a .inp file (strings separated by "\n__ggml_vocab_test__\n").
// Generator only (not built with memwall): links libllama, loads the GGUF with vocab_only.
//
//   llama-vocab-ids VOCAB.gguf STRINGS.inp [--special] > IDS.out
//
// --special: add_special and parse_special on (what a chat prompt gets), instead of both off
// (what test-tokenizer-0 uses).
#include <llama.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static char* read_all(const char* path, long* size) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* data = malloc((size_t)*size + 1);
    if (fread(data, 1, (size_t)*size, f) != (size_t)*size) *size = 0;
    data[*size] = 0;
    fclose(f);
    return data;
}

static void print_ids(const struct llama_vocab* vocab, const char* text, int len, bool special) {
    int cap = len * 4 + 16;
    llama_token* ids = malloc(sizeof(llama_token) * (size_t)cap);
    const int n = llama_tokenize(vocab, text, len, ids, cap, special, special);
    if (n < 0) {
        fprintf(stderr, "llama_tokenize failed (%d)\n", n);
        exit(1);
    }
    for (int i = 0; i < n; ++i) printf(" %d", ids[i]);
    printf("\n");
    free(ids);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s VOCAB.gguf STRINGS.inp [--special]\n", argv[0]);
        return 2;
    }
    const bool special = argc > 3 && strcmp(argv[3], "--special") == 0;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    struct llama_model* model = llama_model_load_from_file(argv[1], params);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab* vocab = llama_model_get_vocab(model);
    long size = 0;
    char* inp = read_all(argv[2], &size);
    if (!inp) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 1;
    }
    const char* sep = "\n__ggml_vocab_test__\n";
    const size_t sep_len = strlen(sep);
    char* pos = inp;
    char* end = inp + size;
    while (pos < end) {
        char* next = strstr(pos, sep);
        if (!next) {
            print_ids(vocab, pos, (int)(end - pos), special);
            break;
        }
        print_ids(vocab, pos, (int)(next - pos), special);
        pos = next + sep_len;
    }
    free(inp);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
