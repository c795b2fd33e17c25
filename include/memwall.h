/*
 * memwall: run large language models on devices under the memory wall.
 *
 * The public C API of libmemwall, for apps (JNI, Swift, C, C++). Everything else in the library
 * is private. Conventions:
 * - Functions that can fail return an mw_status; on failure, mw_last_error() returns a message
 *   naming the file, field and value at fault (thread-local, valid until the next failing call
 *   on the same thread). No function aborts the process on bad input.
 * - Objects are opaque; each *_create / *_load has a matching *_free that accepts NULL.
 * - Parameter structs are filled with defaults by their *_default_params() function; set only
 *   the fields you need.
 * - Token ids are int32; text is UTF-8 and passed with an explicit length.
 */
#ifndef MEMWALL_H
#define MEMWALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMWALL_API_VERSION 2

#if defined(_WIN32)
#define MW_API __declspec(dllexport)
#else
#define MW_API __attribute__((visibility("default")))
#endif

typedef int32_t mw_token;
typedef struct mw_model mw_model;
typedef struct mw_context mw_context;
typedef struct mw_sampler mw_sampler;

typedef enum mw_status {
    MW_OK = 0,
    MW_ERR_INVALID_ARGUMENT = 1, /* the request is impossible (bad value, prompt too long) */
    MW_ERR_BAD_FILE = 2,         /* a model file is malformed */
    MW_ERR_IO = 3,               /* the OS refused: open, read, mmap */
    MW_ERR_UNSUPPORTED = 4,      /* well-formed but not supported (architecture, tensor type) */
    MW_ERR_OUT_OF_MEMORY = 5,    /* an allocation failed or the model does not fit */
    MW_ERR_CONTEXT_FULL = 6,     /* the KV cache has no room for the batch */
    MW_ERR_INTERNAL = 7,         /* a bug in memwall; please report it */
} mw_status;

/* Tensor / KV-cache types (ggml type ids, as in GGUF files). */
typedef enum mw_type {
    MW_TYPE_F32 = 0,
    MW_TYPE_F16 = 1,
    MW_TYPE_Q4_0 = 2,
    MW_TYPE_Q8_0 = 8,
    MW_TYPE_BF16 = 30,
} mw_type;

/* Message of the last failed call on this thread ("" if none). */
MW_API const char* mw_last_error(void);
/* "0.1.0". */
MW_API const char* mw_version(void);
/* A short description of the CPU features memwall's kernels use on this machine. */
MW_API const char* mw_system_info(void);

/* ---- Model ------------------------------------------------------------------------------ */

typedef struct mw_model_params {
    bool use_mmap;   /* map the file (default true); false reads it into memory */
    bool use_mlock;  /* lock the weights in RAM; failure is reported by mw_model_warning() */
    bool vocab_only; /* load only the vocabulary (tokenize/detokenize; no contexts) */
    /* rewrite weights at load into layouts this CPU's kernels read faster (default true; those
       pages become the process's own instead of evictable page cache) */
    bool repack;
} mw_model_params;

MW_API mw_model_params mw_model_default_params(void);
MW_API mw_status mw_model_load(const char* path, const mw_model_params* params, mw_model** out);
MW_API void mw_model_free(mw_model* model);

/* A non-fatal problem met while loading (e.g. mlock refused), or NULL. */
MW_API const char* mw_model_warning(const mw_model* model);
/* general.architecture, e.g. "llama". */
MW_API const char* mw_model_arch(const mw_model* model);
/* A one-line description: name, architecture, size, type. */
MW_API const char* mw_model_desc(const mw_model* model);
MW_API int32_t mw_model_n_vocab(const mw_model* model);
MW_API int32_t mw_model_n_ctx_train(const mw_model* model);
MW_API int32_t mw_model_n_embd(const mw_model* model);
MW_API int32_t mw_model_n_layer(const mw_model* model);
MW_API uint64_t mw_model_n_params(const mw_model* model);
/* Bytes of weight data in the file. */
MW_API uint64_t mw_model_weight_bytes(const mw_model* model);
/* Weight bytes read to decode one token (MoE: the experts used only, on average). */
MW_API uint64_t mw_model_bytes_per_token(const mw_model* model);
/* Metadata value as text (numbers formatted, arrays abbreviated). Returns the full length,
 * or -1 if the key is absent; writes at most buf_size bytes including the NUL. */
MW_API int32_t mw_model_meta(const mw_model* model, const char* key, char* buf, size_t buf_size);

/* ---- Vocabulary ------------------------------------------------------------------------- */

/* Tokenizes `text` (UTF-8, text_len bytes). add_special adds BOS/EOS as the vocab says;
 * parse_special turns special-token text like "<s>" into its id. Returns the number of tokens,
 * or, when n_max is too small, minus the number needed (nothing is written then). */
MW_API int32_t mw_tokenize(const mw_model* model, const char* text, int32_t text_len,
                           mw_token* tokens, int32_t n_max, bool add_special, bool parse_special);
/* The text of one token. special: render control tokens (e.g. "<s>") instead of "".
 * Returns the number of bytes, or minus the size needed when buf_size is too small.
 * The piece may be an incomplete UTF-8 sequence; see mw_detokenizer for streaming. */
MW_API int32_t mw_token_to_piece(const mw_model* model, mw_token token, char* buf, int32_t buf_size,
                                 bool special);
MW_API mw_token mw_token_bos(const mw_model* model); /* -1 if none */
MW_API mw_token mw_token_eos(const mw_model* model); /* -1 if none */
/* End of generation: EOS, EOT, or another end token of the vocab. */
MW_API bool mw_token_is_eog(const mw_model* model, mw_token token);

/* Streaming detokenization that never splits a UTF-8 character. */
typedef struct mw_detokenizer mw_detokenizer;
MW_API mw_detokenizer* mw_detokenizer_create(const mw_model* model, bool special);
MW_API void mw_detokenizer_free(mw_detokenizer* d);
/* Appends a token; returns the complete UTF-8 text now available (may be ""), valid until the
 * next call. *len receives its length. */
MW_API const char* mw_detokenizer_push(mw_detokenizer* d, mw_token token, size_t* len);
/* Flushes what is held back (invalid trailing bytes come out as U+FFFD). */
MW_API const char* mw_detokenizer_flush(mw_detokenizer* d, size_t* len);

/* ---- Context: KV cache and decoding ----------------------------------------------------- */

typedef struct mw_context_params {
    uint32_t n_ctx;    /* KV cache size in tokens; 0 = min(training context, 4096) */
    uint32_t n_batch;  /* largest batch decoded in one step (prompt chunks); 0 = 512 */
    int32_t n_threads; /* 0 = physical performance cores; < 0 = try a few counts on this model
                          (a few decode steps each) and keep the fastest ("-t auto") */
    mw_type type_k;    /* KV cache key type: MW_TYPE_F16 (default), MW_TYPE_F32, MW_TYPE_BF16,
                          MW_TYPE_Q8_0 or MW_TYPE_Q4_0 (quantized: the head size must be a
                          multiple of 32) */
    mw_type type_v;    /* KV cache value type (same choices) */
} mw_context_params;

MW_API mw_context_params mw_context_default_params(void);
MW_API mw_status mw_context_create(mw_model* model, const mw_context_params* params,
                                   mw_context** out);
MW_API void mw_context_free(mw_context* ctx);
MW_API uint32_t mw_context_n_ctx(const mw_context* ctx);
MW_API int32_t mw_context_n_threads(const mw_context* ctx);
/* Number of tokens in the KV cache (the position of the next token). */
MW_API uint32_t mw_context_n_past(const mw_context* ctx);
/* Drops cached tokens from position n_keep on (0 clears the cache). */
MW_API mw_status mw_context_truncate(mw_context* ctx, uint32_t n_keep);
/* Context shift, for generating past a full context: drops the cached tokens
 * [n_keep, n_keep + n_discard) and moves the later ones back by n_discard positions, re-rotating
 * their keys (RoPE), so decoding continues coherently at n_past - n_discard. Typical use when
 * the cache is full: n_discard = (n_past - n_keep) / 2. MW_ERR_INVALID_ARGUMENT, cache unchanged,
 * when n_keep + n_discard exceeds n_past. */
MW_API mw_status mw_context_shift(mw_context* ctx, uint32_t n_keep, uint32_t n_discard);

/* Runs the tokens through the model at the next positions and appends them to the KV cache.
 * all_logits: keep logits for every token of the batch, else for the last one only.
 * Batches larger than n_batch are split internally. MW_ERR_CONTEXT_FULL when they do not fit. */
MW_API mw_status mw_decode(mw_context* ctx, const mw_token* tokens, int32_t n_tokens,
                           bool all_logits);
/* Logits (n_vocab floats) of token i of the last mw_decode batch; i = -1 means the last token.
 * NULL if that row was not kept. */
MW_API const float* mw_get_logits(mw_context* ctx, int32_t i);

/* ---- Sampling --------------------------------------------------------------------------- */

typedef struct mw_sampler_params {
    float temperature;     /* <= 0: greedy (argmax, ties to the lowest id) */
    int32_t top_k;         /* <= 0: off */
    float top_p;           /* >= 1: off */
    float min_p;           /* <= 0: off */
    float repeat_penalty;  /* 1: off */
    int32_t repeat_last_n; /* tokens considered by the repetition penalty */
    uint64_t seed;         /* same seed, same model, same prompt: same text */
} mw_sampler_params;

MW_API mw_sampler_params mw_sampler_default_params(void);
MW_API mw_sampler* mw_sampler_create(const mw_sampler_params* params);
MW_API void mw_sampler_free(mw_sampler* sampler);
/* Picks a token from the logits (not modified). */
MW_API mw_token mw_sampler_sample(mw_sampler* sampler, const float* logits, int32_t n_vocab);
/* Records a token (prompt or generated) for the repetition penalty. */
MW_API void mw_sampler_accept(mw_sampler* sampler, mw_token token);

/* ---- Measurements ----------------------------------------------------------------------- */

typedef struct mw_perf {
    double load_ms;   /* model load */
    double prompt_ms; /* time in batches of more than one token */
    double decode_ms; /* time in single-token batches */
    int32_t n_prompt_tokens;
    int32_t n_decode_tokens;
    uint64_t weights_bytes;          /* weight data (mapped or read) */
    uint64_t weights_resident_bytes; /* of which now in RAM */
    uint64_t kv_bytes;               /* KV cache allocation */
    uint64_t scratch_bytes;          /* activation buffers */
    uint64_t peak_rss_bytes;         /* of the process, from the OS */
    uint64_t rss_bytes;              /* of the process now, from the OS */
    uint64_t major_faults; /* page faults that read from storage (weights paged in), process */
    uint64_t minor_faults; /* page faults served from memory, process */
    uint64_t decode_weight_bytes; /* weight bytes read by the single-token decode steps: every
                                     dense matrix, and (MoE) only the experts the router chose;
                                     divide by n_decode_tokens for bytes per token */
} mw_perf;

MW_API mw_perf mw_context_perf(const mw_context* ctx);
MW_API void mw_context_perf_reset(mw_context* ctx);

/* ---- Planning: will a model fit, and how fast will it run -------------------------------- */
/* The functions returning char* return a JSON document (UTF-8, NUL-terminated) that the caller
 * frees with mw_free_string(); NULL on failure, with mw_last_error() saying why. The keys are
 * listed in docs/plan.md. */

MW_API void mw_free_string(char* s);

typedef struct mw_probe_params {
    int32_t n_threads; /* threads for the measurements; 0 = the engine's default */
    double seconds;    /* measurement budget; <= 0 = 1.5 s */
    bool measure;      /* false: only facts (CPU, SIMD, caches, RAM), nothing measured */
    bool write_cache;  /* keep the result as this machine's device for plans (docs/plan.md) */
} mw_probe_params;

MW_API mw_probe_params mw_probe_default_params(void);
/* This machine: CPU, SIMD features, caches, RAM and memory available now, measured read and
 * triad memory bandwidth (multi-threaded) and the engine's matmul throughput. */
MW_API char* mw_probe_json(const mw_probe_params* params);

/* Memory and speed plans for models x devices x quantizations. The request is JSON, every key
 * optional (none: the seeds' case, a 35B dense model and a 30B MoE on 12/16/24 GB phones):
 * {"models": [{"file": PATH} | {"hf_config": PATH} | {"catalogue": NAME or "all"}],
 *  "devices": ["this" | PROFILE | {"ram": "16G", "bandwidth": "68G", "os_reserve": "4G"}],
 *  "ctx": 4096, "kv_type": "f16", "quants": ["Q4_K_M", ...], "batch": 512, "threads": 0,
 *  "best_only": false}
 * A GGUF file is read up to its header only: a partial download works. */
MW_API char* mw_plan_json(const char* request_json);
/* The built-in model catalogue and device profiles. */
MW_API char* mw_plan_catalogue_json(void);

typedef enum mw_fit_verdict {
    MW_FIT_YES = 0,   /* fits with room to spare */
    MW_FIT_TIGHT = 1, /* fits, with less than 10 % to spare */
    MW_FIT_NO = 2,    /* does not fit */
} mw_fit_verdict;

typedef struct mw_fit {
    mw_fit_verdict verdict;
    uint32_t n_ctx; /* the context size planned (0 in the params resolved as the runtime does) */
    uint64_t weights_bytes;
    uint64_t kv_bytes;
    uint64_t compute_bytes;
    uint64_t overhead_bytes;
    uint64_t total_bytes;     /* the predicted peak RSS */
    uint64_t available_bytes; /* memory available now */
    char message[2048];       /* the numbers; when it does not fit, the nearest configurations
                                 that do (smaller context, quantized KV cache, smaller quant) */
} mw_fit;

/* Refuse or fit: plans the model file (its header only) with these context parameters against
 * the memory available now, before anything is allocated. MW_OK with *out filled in (check
 * out->verdict); an error status when the file cannot be read. */
MW_API mw_status mw_check_fit(const char* path, const mw_context_params* params, mw_fit* out);

/* For bench: records the speeds measured on this machine, so that plans for this device use the
 * efficiency this engine reaches here. decode_bytes_per_token: mw_model_bytes_per_token();
 * prompt_flops_per_token: 2 x the weights one token multiplies (2 x mw_model_n_params() for a
 * dense model). A speed <= 0 leaves that figure unchanged. */
MW_API mw_status mw_device_record_bench(uint64_t decode_bytes_per_token, double decode_tok_s,
                                        double prompt_flops_per_token, double prompt_tok_s);

/* ---- Synthetic models: real shapes, random weights ---------------------------------------- */

/* Progress of a long operation: `done` of `total` units (bytes unless said otherwise). */
typedef void (*mw_progress_fn)(void* user_data, uint64_t done, uint64_t total);

/* Writes a GGUF with random weights at the shape of `preset` (see mw_synth_presets_json), the
 * tensor types of the quantization `type` ("Q4_K_M", "Q8_0", "F16", ... as llama.cpp names
 * them) and a synthetic vocabulary of the model's size; loadable by memwall and llama.cpp. The
 * file appears atomically. Deterministic for a seed. */
MW_API mw_status mw_synth(const char* preset, const char* type, uint64_t seed, const char* path,
                          mw_progress_fn progress, void* user_data);
/* [{"id": ..., "description": ..., "params": ...}, ...]; free with mw_free_string(). */
MW_API char* mw_synth_presets_json(void);

/* ---- Conversion to GGUF ------------------------------------------------------------------ */
/* Native converters (no Python): a Hugging Face folder (config.json, model*.safetensors with or
 * without model.safetensors.index.json, tokenizer.model or tokenizer.json, tokenizer_config.json)
 * of a llama, mistral, mixtral, qwen2, qwen3, qwen2_moe or qwen3_moe model, or a llama2.c
 * checkpoint with its tokenizer.bin, to a GGUF file with llama.cpp's metadata and tensor names.
 * The file is written atomically (a temporary file renamed into place) and checked by loading its
 * header before the call returns. */

typedef struct mw_convert_params {
    const char* outtype;   /* "f32", "f16", "bf16" or "q8_0"; NULL: f16 for Hugging Face folders,
                              f32 for llama2.c checkpoints */
    const char* vocab_pre; /* tokenizer.ggml.pre to write instead of the detected one; NULL */
    const char* name;      /* general.name; NULL: from config.json or the folder name */
    /* Called after each tensor is written (may be NULL). */
    void (*progress)(int32_t done, int32_t total, const char* tensor, void* user_data);
    void* user_data;
} mw_convert_params;

typedef struct mw_convert_result {
    char arch[32]; /* general.architecture written */
    int32_t n_tensors;
    int32_t n_vocab;
    uint64_t n_params;
    uint64_t file_bytes;
    char warnings[2048]; /* things accepted but worth telling, one per line ("" if none) */
} mw_convert_result;

MW_API mw_convert_params mw_convert_default_params(void);
/* out may be NULL. */
MW_API mw_status mw_convert_hf(const char* hf_dir, const char* out_path,
                               const mw_convert_params* params, mw_convert_result* out);
MW_API mw_status mw_convert_llama2c(const char* checkpoint, const char* tokenizer,
                                    const char* out_path, const mw_convert_params* params,
                                    mw_convert_result* out);

/* ---- Perplexity and KL divergence -------------------------------------------------------- */
/* As llama.cpp's llama-perplexity: the text is tokenized once (BOS added as the vocab asks), cut
 * into non-overlapping chunks of n_ctx tokens, each evaluated from an empty cache with its first
 * token replaced by BOS, and the second half of each chunk scored. With a base model (e.g. the
 * F16 original of a quantized model) the same chunks also run through it, giving the KL
 * divergence KL(base || model) per scored token and the agreement of the top tokens. */

typedef struct mw_perplexity_progress {
    int32_t chunk;    /* chunks done */
    int32_t n_chunks; /* chunks to do */
    int64_t n_scored;
    double ppl; /* so far */
    bool has_base;
    double kld_mean;       /* so far, with a base model */
    double top1_agreement; /* so far, fraction */
    double elapsed_s;
    double tokens_per_s; /* chunk tokens per second (each model) */
} mw_perplexity_progress;

typedef struct mw_perplexity_params {
    uint32_t n_ctx;    /* tokens per chunk; 0 = 512 */
    uint32_t n_batch;  /* 0 = n_ctx */
    int32_t n_chunks;  /* at most this many chunks; <= 0 = all */
    int32_t n_threads; /* 0 = physical performance cores */
    mw_type type_k;    /* KV cache types (default F16, as llama.cpp) */
    mw_type type_v;
    /* Called after each chunk (may be NULL); returning false stops after that chunk. */
    bool (*progress)(const mw_perplexity_progress* progress, void* user_data);
    void* user_data;
} mw_perplexity_params;

typedef struct mw_perplexity_result {
    int64_t n_text_tokens;
    int32_t n_chunks; /* evaluated */
    uint32_t n_ctx;
    int64_t n_scored; /* predictions scored */
    double ppl;
    double ppl_err; /* standard error, as llama.cpp prints after "+/-" */
    bool has_base;  /* the rest is set with a base model only */
    double base_ppl;
    double base_ppl_err;
    double kld_mean; /* mean KL(base || model), nats */
    double kld_err;  /* standard error of the mean */
    double kld_median;
    double kld_p99; /* 99th percentile */
    double kld_max;
    double top1_agreement; /* fraction of scored positions where both models' argmax agree */
    double ppl_ratio;      /* PPL(model) / PPL(base) */
    double seconds;
} mw_perplexity_result;

MW_API mw_perplexity_params mw_perplexity_default_params(void);
/* base may be NULL. The models must have been loaded with weights (not vocab_only). */
MW_API mw_status mw_perplexity(mw_model* model, mw_model* base, const char* text, size_t text_len,
                               const mw_perplexity_params* params, mw_perplexity_result* out);

/* ---- Quantization: quantize a model file, collect an importance matrix ------------------ */

/* Progress and notes of mw_quantize. */
typedef struct mw_quantize_progress {
    int32_t tensor_index; /* tensors written so far (1-based); 0 for a note */
    int32_t n_tensors;
    const char* tensor_name; /* the tensor written, or the one the note is about */
    const char* from_type;   /* its type in the input ("F16") */
    const char* to_type;     /* its type in the output ("Q4_K") */
    uint64_t bytes_done;     /* input tensor bytes written so far */
    uint64_t bytes_total;    /* input tensor bytes of the whole file */
    double elapsed_s;
    const char* note; /* a message for the user (e.g. a fallback type), else NULL */
} mw_quantize_progress;

typedef struct mw_quantize_params {
    const char* type;         /* "Q4_K_M", "Q8_0", "F16", ... (as llama-quantize names them) */
    const char* imatrix_path; /* weigh the error by this importance matrix; NULL: none */
    bool pure;                /* every quantizable tensor gets the type's base type */
    bool allow_requantize;    /* accept input tensors that are already quantized */
    /* "PATTERN=TYPE" overrides: a regex searched in tensor names, a ggml type name ("q8_0");
     * the last match wins. */
    const char* const* tensor_types;
    int32_t n_tensor_types;
    int32_t n_threads; /* 0 = physical performance cores */
    /* Called after each tensor and for each note (may be NULL). */
    void (*progress)(const mw_quantize_progress* progress, void* user_data);
    void* user_data;
} mw_quantize_params;

typedef struct mw_quantize_result {
    uint64_t in_file_bytes;
    uint64_t out_file_bytes;
    uint64_t n_elements;       /* of all tensors */
    double in_bits_per_weight; /* tensor data bits per element */
    double out_bits_per_weight;
    int32_t n_tensors;
    int32_t n_quantized;    /* tensors whose type changed */
    int32_t n_fallback;     /* tensors given a fallback type for their row length */
    int32_t n_with_imatrix; /* quantized with importance weights */
    double seconds;
} mw_quantize_result;

MW_API mw_quantize_params mw_quantize_default_params(void);
/* Writes out_path (atomically) from in_path. out may be NULL. */
MW_API mw_status mw_quantize(const char* in_path, const char* out_path,
                             const mw_quantize_params* params, mw_quantize_result* out);

typedef struct mw_imatrix_progress {
    int32_t chunk; /* chunks done */
    int32_t n_chunks;
    double ppl; /* running perplexity of the second half of each chunk */
    double elapsed_s;
} mw_imatrix_progress;

typedef struct mw_imatrix_params {
    uint32_t n_ctx;      /* tokens per chunk; 0 = 512 */
    int32_t n_chunks;    /* at most this many chunks; <= 0 = all */
    int32_t n_threads;   /* 0 = physical performance cores */
    bool process_output; /* also collect output.weight */
    const char* dataset; /* recorded in the file (the text's name); may be NULL */
    void (*progress)(const mw_imatrix_progress* progress, void* user_data);
    void* user_data;
} mw_imatrix_params;

MW_API mw_imatrix_params mw_imatrix_default_params(void);
/* Runs the model file over the text and writes the mean square of every matrix input column
 * (per expert for MoE) to out_path in llama.cpp's imatrix GGUF format. */
MW_API mw_status mw_imatrix(const char* model_path, const char* text, size_t text_len,
                            const char* out_path, const mw_imatrix_params* params);

/* ---- Chat templates ---------------------------------------------------------------------- */
/* Jinja chat templates rendered as Hugging Face transformers renders them (Python Jinja2 3.1 in
 * its sandbox, trim_blocks and lstrip_blocks; tojson is json.dumps; raise_exception() and
 * strftime_now() exist): the model's tokenizer.chat_template, a built-in by name ("chatml",
 * "llama3", ...; see mw_chat_builtin_templates) or template text. A template is untrusted
 * input: rendering is bounded in loop iterations, call depth and output size. Errors
 * (MW_ERR_INVALID_ARGUMENT) name the template, the line and the construct in mw_last_error(). */

typedef struct mw_chat_message {
    const char* role;    /* "system", "user", "assistant", "tool", ... (UTF-8, NUL-terminated) */
    const char* content; /* UTF-8, NUL-terminated; NULL gives a null content */
} mw_chat_message;

/* Renders Jinja `source` (source_len bytes) with the variables of `context_json`, a JSON object
 * (messages, add_generation_prompt, bos_token, eos_token, tools, any other variable), as
 * `memwall template` does. name: the template's name in messages (NULL: "template").
 * strftime_now: what strftime_now() returns whatever the format (NULL: today's date). On
 * success *out holds the text (free it with mw_free_string) and *out_len, unless NULL, its
 * length (the text may contain NUL bytes). */
MW_API mw_status mw_template_render(const char* source, size_t source_len, const char* name,
                                    const char* context_json, const char* strftime_now, char** out,
                                    size_t* out_len);

/* The prompt for a conversation, like llama.cpp's llama_chat_apply_template. tmpl: NULL for
 * the model's own (tokenizer.chat_template, else a built-in chosen from its special tokens,
 * else "chatml"), or the name of a built-in, or Jinja text. model may be NULL when tmpl is
 * given (bos_token and eos_token are then ""); otherwise they are the text of the model's BOS
 * and EOS tokens. Returns the length of the prompt in bytes and writes at most buf_size bytes
 * of it, NUL included (call again with a larger buffer when the result is >= buf_size), or
 * -1 on error with mw_last_error() saying why. */
MW_API int32_t mw_chat_apply_template(const mw_model* model, const char* tmpl,
                                      const mw_chat_message* messages, size_t n_messages,
                                      bool add_generation_prompt, char* buf, int32_t buf_size);

/* The same from a JSON request, for tool definitions, tool calls and other variables:
 * {"messages": [{"role": ..., "content": ..., "tool_calls": [...]}, ...], "tools": [...],
 *  "add_generation_prompt": true, "variables": {"enable_thinking": false},
 *  "strftime_now": "26 Jul 2024"}; only messages is required (add_generation_prompt defaults
 * to true; without "tools" the template sees `tools` undefined). Key order is kept. *out: the
 * prompt (free it with mw_free_string); *out_len, unless NULL, its length. */
MW_API mw_status mw_chat_render(const mw_model* model, const char* tmpl, const char* request_json,
                                char** out, size_t* out_len);

/* Which template the two calls above use for (model, tmpl), as JSON: {"name": ...,
 * "origin": "model"|"builtin"|"text"|"guessed"|"fallback", "description": ..., "source": ...}.
 * NULL on error. Free it with mw_free_string. */
MW_API char* mw_chat_template_info(const mw_model* model, const char* tmpl);

/* Names of the built-in templates: writes up to n of them (static strings) to names (which
 * may be NULL when n is 0) and returns how many there are. */
MW_API int32_t mw_chat_builtin_templates(const char** names, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* MEMWALL_H */
