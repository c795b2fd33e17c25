/* The parameter structs across versions of memwall.h (docs/c-api.md), compiled as C11 as an app
 * is: every mw_*_default_params() sets struct_size to the struct's size in this header; a
 * struct of API 8's layout (mw_server_params before log_format, log and log_user were appended
 * in API 9) is accepted and its missing fields take their defaults, the library reading none of
 * the bytes past it; a struct from a newer header (larger) and one not filled by
 * mw_*_default_params() (struct_size 0) are refused, naming the struct and the size.
 *   c_abi_test SHARED_DIR */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memwall.h"

/* mw_server_params as memwall.h declared it in API 8. */
typedef struct server_params_api8 {
    size_t struct_size;
    const char* host;
    int32_t port;
    const char* api_key;
    const char* model_name;
    const char* chat_template;
    int32_t queue_max;
    double timeout_s;
    uint64_t max_body_bytes;
    int32_t max_tokens;
    mw_sampler_params sampling;
    mw_pacer* pacer;
    const char* cors_origins;
    double header_timeout_s;
    int32_t max_connections;
    int32_t max_connections_per_address;
    int32_t max_header_bytes;
} server_params_api8;

_Static_assert(offsetof(server_params_api8, max_header_bytes) ==
                   offsetof(mw_server_params, max_header_bytes),
               "API 8's fields are a prefix of API 9's");
_Static_assert(sizeof(server_params_api8) < sizeof(mw_server_params), "API 9 appended fields");

/* mw_model_params as API 10 had it, before ple_resident (API 11). */
typedef struct model_params_api10 {
    size_t struct_size;
    bool use_mmap;
    bool use_mlock;
    bool vocab_only;
    bool repack;
    uint64_t mem_budget;
    int32_t n_gpu_layers;
    int32_t main_gpu;
    bool gpu_required;
    bool gpu_allow_cpu_device;
} model_params_api10;

_Static_assert(offsetof(model_params_api10, gpu_allow_cpu_device) ==
                   offsetof(mw_model_params, gpu_allow_cpu_device),
               "API 10's fields are a prefix of API 11's");
_Static_assert(sizeof(model_params_api10) < sizeof(mw_model_params), "API 11 appended fields");

#define CHECK_SIZE(name)                                                                       \
    do {                                                                                       \
        const mw_##name##_params p = mw_##name##_default_params();                             \
        CHECK(p.struct_size == sizeof p, #name ": struct_size %zu, sizeof %zu", p.struct_size, \
              sizeof p);                                                                       \
    } while (0)

static int contains(const char* text, const char* part) {
    return strstr(text, part) != NULL;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: c_abi_test SHARED_DIR\n");
        return 2;
    }
    CHECK_SIZE(model);
    CHECK_SIZE(context);
    CHECK_SIZE(sampler);
    CHECK_SIZE(generate);
    CHECK_SIZE(pacer);
    CHECK_SIZE(sustained);
    CHECK_SIZE(chat);
    CHECK_SIZE(server);
    CHECK_SIZE(probe);
    CHECK_SIZE(convert);
    CHECK_SIZE(perplexity);
    CHECK_SIZE(quantize);
    CHECK_SIZE(imatrix);
    CHECK_SIZE(pull);
    CHECK_SIZE(verify);

    char path[4096];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", argv[1]);

    /* A struct not filled by mw_model_default_params(). */
    mw_model_params zero;
    memset(&zero, 0, sizeof zero);
    mw_model* model = NULL;
    CHECK(mw_model_load(path, &zero, &model) == MW_ERR_INVALID_ARGUMENT, "zeroed params loaded");
    CHECK(contains(mw_last_error(), "mw_model_params.struct_size is 0") &&
              contains(mw_last_error(), "mw_model_default_params()"),
          "%s", mw_last_error());
    CHECK(model == NULL, "a model despite the refusal");

    /* API 10's layout: loads, with ple_resident at its default (bytes after it are not read). */
    struct {
        model_params_api10 p;
        unsigned char after[16];
    } old_model;
    memset(&old_model, 0x5a, sizeof old_model);
    mw_model_params_init((mw_model_params*)&old_model.p, sizeof old_model.p);
    CHECK(old_model.p.struct_size == sizeof old_model.p && old_model.p.use_mmap,
          "API 10's defaults not filled in");
    CHECK(old_model.after[0] == 0x5a, "init wrote past API 10's struct");
    mw_status st = mw_model_load(path, (const mw_model_params*)&old_model.p, &model);
    CHECK(st == MW_OK, "API 10's layout refused: %s", mw_last_error());
    mw_model_free(model);
    model = NULL;

    mw_model_params mp = mw_model_default_params();
    CHECK(!mp.ple_resident, "ple_resident defaults to true");
    st = mw_model_load(path, &mp, &model);
    CHECK(st == MW_OK, "%s", mw_last_error());
    if (st != MW_OK) return 1;
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 1;

    /* API 8's layout, with bytes the library must not read right after its last field (its tail
     * padding, and what follows it in memory): read as log_format they would be refused. */
    struct {
        server_params_api8 p;
        unsigned char after[64];
    } old;
    memset(&old, 0x5a, sizeof old);
    mw_server_params_init((mw_server_params*)&old.p, sizeof old.p);
    CHECK(old.p.struct_size == sizeof old.p, "%zu", old.p.struct_size);
    CHECK(old.p.port == 8080 && old.p.max_header_bytes == 8192, "defaults not filled in");
    for (size_t i = 0; i < sizeof old.after; ++i) {
        CHECK(old.after[i] == 0x5a, "init wrote byte %zu past the struct", i);
    }
    const size_t end = offsetof(server_params_api8, max_header_bytes) + sizeof(int32_t);
    memset((unsigned char*)&old.p + end, 0x5a, sizeof old.p - end);
    old.p.port = 0;
    old.p.chat_template = "chatml";
    mw_server* server = NULL;
    st = mw_server_create(model, &cp, (const mw_server_params*)&old.p, &server);
    if (st != MW_ERR_UNSUPPORTED) { /* a build without the server has nothing to check */
        CHECK(st == MW_OK, "API 8's layout refused: %s", mw_last_error());
        CHECK(mw_server_port(server) > 0, "no port");
        mw_server_free(server);
        server = NULL;

        /* A struct from a newer memwall.h: larger than this library knows. */
        struct {
            mw_server_params p;
            unsigned char more[32];
        } newer;
        mw_server_params_init(&newer.p, sizeof newer);
        CHECK(newer.p.struct_size == sizeof newer, "%zu", newer.p.struct_size);
        CHECK(newer.more[0] == 0 && newer.more[31] == 0, "the unknown tail is not zeroed");
        newer.p.port = 0;
        st = mw_server_create(model, &cp, &newer.p, &server);
        CHECK(st == MW_ERR_INVALID_ARGUMENT, "a newer layout accepted");
        CHECK(contains(mw_last_error(), "mw_server_params.struct_size is") &&
                  contains(mw_last_error(), "newer memwall.h"),
              "%s", mw_last_error());
        CHECK(server == NULL, "a server despite the refusal");
    }
    mw_model_free(model);
    if (failures) fprintf(stderr, "%d checks failed\n", failures);
    return failures ? 1 : 0;
}
