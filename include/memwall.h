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

#define MEMWALL_API_VERSION 3

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
    uint32_t n_ctx;     /* KV cache size in tokens; 0 = min(training context, 4096) */
    uint32_t n_batch;   /* largest batch decoded in one step (prompt chunks); 0 = 512 */
    int32_t n_threads;  /* 0 = physical performance cores; < 0 = try a few counts on this model
                           (a few decode steps each) and keep the fastest ("-t auto") */
    mw_type type_k;     /* KV cache key type: MW_TYPE_F16 (default), MW_TYPE_F32, MW_TYPE_BF16,
                           MW_TYPE_Q8_0 or MW_TYPE_Q4_0 (quantized: the head size must be a
                           multiple of 32) */
    mw_type type_v;     /* KV cache value type (same choices) */
    uint32_t n_seq_max; /* sequences the context holds at once (default 1); they share the n_ctx
                           positions of the KV cache, each may hold up to n_ctx */
} mw_context_params;

MW_API mw_context_params mw_context_default_params(void);
MW_API mw_status mw_context_create(mw_model* model, const mw_context_params* params,
                                   mw_context** out);
MW_API void mw_context_free(mw_context* ctx);
MW_API uint32_t mw_context_n_ctx(const mw_context* ctx);
MW_API int32_t mw_context_n_threads(const mw_context* ctx);
/* Number of tokens in the KV cache of sequence 0 (the position of its next token). */
MW_API uint32_t mw_context_n_past(const mw_context* ctx);
/* Drops cached tokens of sequence 0 from position n_keep on (0 clears it). */
MW_API mw_status mw_context_truncate(mw_context* ctx, uint32_t n_keep);
/* Context shift of sequence 0, for generating past a full context: drops the cached tokens
 * [n_keep, n_keep + n_discard) and moves the later ones back by n_discard positions, re-rotating
 * their keys (RoPE), so decoding continues coherently at n_past - n_discard. Typical use when
 * the cache is full: n_discard = (n_past - n_keep) / 2. MW_ERR_INVALID_ARGUMENT, cache unchanged,
 * when n_keep + n_discard exceeds n_past. */
MW_API mw_status mw_context_shift(mw_context* ctx, uint32_t n_keep, uint32_t n_discard);

/* Runs the tokens through the model at the next positions of sequence 0 and appends them to its
 * KV cache. all_logits: keep logits for every token of the batch, else for the last one only.
 * Batches larger than n_batch are split internally. MW_ERR_CONTEXT_FULL when they do not fit. */
MW_API mw_status mw_decode(mw_context* ctx, const mw_token* tokens, int32_t n_tokens,
                           bool all_logits);
/* Logits (n_vocab floats) of token i of the last mw_decode or mw_decode_batch batch; i = -1
 * means the last token whose logits were kept. NULL if that row was not kept. */
MW_API const float* mw_get_logits(mw_context* ctx, int32_t i);

/* ---- Batches of several sequences ---------------------------------------------------------- */
/* A context created with n_seq_max > 1 holds that many independent sequences (conversations,
 * server slots) in one KV cache. A batch carries tokens of any of them, each with its position;
 * mw_decode_batch runs the whole batch as one forward pass, so the weights are read once for
 * every sequence: N streams decoding one token each cost little more than one. Attention of a
 * token sees only its own sequence. Each sequence is a contiguous history: a token must go at
 * its sequence's next position (truncate first to rewrite the end). */

typedef int32_t mw_seq_id;

typedef struct mw_batch {
    int32_t n_tokens; /* tokens in the batch */
    mw_token* token;
    int32_t* pos;      /* position of each token in its sequence; -1: the sequence's next */
    mw_seq_id* seq_id; /* its sequence, 0 .. n_seq_max - 1 */
    int8_t* logits;    /* non-zero: keep its logits, read with mw_get_logits(ctx, index) */
    int32_t capacity;  /* tokens the arrays hold (set by mw_batch_init) */
} mw_batch;

/* A batch with room for `capacity` tokens (arrays NULL and capacity 0 when it cannot be
 * allocated); free with mw_batch_free. */
MW_API mw_batch mw_batch_init(int32_t capacity);
MW_API void mw_batch_free(mw_batch* batch);
MW_API void mw_batch_clear(mw_batch* batch);
/* Appends a token; MW_ERR_INVALID_ARGUMENT when the batch is full. */
MW_API mw_status mw_batch_add(mw_batch* batch, mw_token token, int32_t pos, mw_seq_id seq,
                              bool logits);
/* Runs the batch (split at n_batch tokens internally). MW_ERR_INVALID_ARGUMENT for a bad token,
 * sequence or position; MW_ERR_CONTEXT_FULL when the cache has no room: nothing is changed. */
MW_API mw_status mw_decode_batch(mw_context* ctx, const mw_batch* batch);

MW_API uint32_t mw_context_n_seq_max(const mw_context* ctx);
/* Tokens sequence `seq` holds (the position of its next token); -1 for a bad id. */
MW_API int32_t mw_seq_n_past(const mw_context* ctx, mw_seq_id seq);
/* Copies the tokens of a sequence into `tokens`; returns their number, or minus the number
 * needed when n_max is too small (nothing written). */
MW_API int32_t mw_seq_tokens(const mw_context* ctx, mw_seq_id seq, mw_token* tokens, int32_t n_max);
/* Prefix reuse: how many leading tokens of `tokens` the sequence already holds. Truncate the
 * sequence to that and decode only the rest (keep at least one token to decode, for its
 * logits). -1 for a bad id. */
MW_API int32_t mw_seq_common_prefix(const mw_context* ctx, mw_seq_id seq, const mw_token* tokens,
                                    int32_t n_tokens);
/* Drops the tokens of a sequence from position n_keep on (0 clears it). */
MW_API mw_status mw_seq_truncate(mw_context* ctx, mw_seq_id seq, uint32_t n_keep);
/* dst becomes the first n tokens of src (a shared prefix: the KV cache pages are shared, not
 * recomputed or copied; a page is copied only when one of them writes into it). */
MW_API mw_status mw_seq_copy(mw_context* ctx, mw_seq_id src, mw_seq_id dst, uint32_t n);
/* Context shift of one sequence (as mw_context_shift). */
MW_API mw_status mw_seq_shift(mw_context* ctx, mw_seq_id seq, uint32_t n_keep, uint32_t n_discard);
/* KV cache use: positions held by all sequences (shared positions once) and the pool's size. */
MW_API uint32_t mw_context_kv_used(const mw_context* ctx);
MW_API uint32_t mw_context_kv_size(const mw_context* ctx);

/* ---- Sampling --------------------------------------------------------------------------- */

typedef struct mw_sampler_params {
    float temperature;       /* <= 0: greedy (argmax, ties to the lowest id) */
    int32_t top_k;           /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off */
    int32_t repeat_last_n;   /* tokens considered by the penalties (-1: all accepted) */
    uint64_t seed;           /* same seed, same model, same prompt: same text */
    float frequency_penalty; /* OpenAI's: subtracted once per occurrence in the last
                                repeat_last_n tokens; 0: off */
    float presence_penalty;  /* OpenAI's: subtracted once for a token that occurs; 0: off */
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
    double decode_ms; /* time in batches where each sequence decodes one token */
    int32_t n_prompt_tokens;
    int32_t n_decode_tokens;         /* of every sequence */
    uint64_t weights_bytes;          /* weight data (mapped or read) */
    uint64_t weights_resident_bytes; /* of which now in RAM */
    uint64_t kv_bytes;               /* KV cache allocation */
    uint64_t scratch_bytes;          /* activation buffers */
    uint64_t peak_rss_bytes;         /* of the process, from the OS */
    uint64_t rss_bytes;              /* of the process now, from the OS */
    uint64_t major_faults; /* page faults that read from storage (weights paged in), process */
    uint64_t minor_faults; /* page faults served from memory, process */
    uint64_t decode_weight_bytes; /* weight bytes read by the decode steps: every dense matrix,
                                     and (MoE) only the experts the router chose, once per step
                                     whatever the number of sequences; divide by
                                     n_decode_tokens for bytes per token */
    int32_t n_decode_steps;       /* decode steps (each of one token per sequence) */
} mw_perf;

MW_API mw_perf mw_context_perf(const mw_context* ctx);
MW_API void mw_context_perf_reset(mw_context* ctx);

/* ---- Chat: a conversation with the model ---------------------------------------------------- */
/* The history is rendered with the chat template each turn and only the new part is decoded
 * (the earlier turns stay in the KV cache). When it outgrows the context, the oldest turns are
 * dropped; the system prompt stays. */

typedef struct mw_chat mw_chat;

typedef struct mw_chat_params {
    const char* system_prompt;  /* NULL or "": none */
    const char* chat_template;  /* NULL: the file's tokenizer.chat_template; else a built-in name
                                   or template text */
    mw_sampler_params sampling; /* default: mw_sampler_default_params() */
    int32_t n_predict;          /* tokens per reply; -1 (default): until an end token */
} mw_chat_params;

typedef struct mw_chat_reply {
    int32_t n_prompt_tokens; /* the rendered conversation */
    int32_t n_reused_tokens; /* of them, already in the KV cache (not decoded again) */
    int32_t n_generated;
    int32_t n_dropped_turns; /* oldest messages dropped to fit the context */
    double prompt_ms;        /* rendering and decoding the new part of the prompt */
    double decode_ms;        /* generating the reply */
    bool cancelled;          /* stopped by mw_chat_cancel or the callback */
    bool context_full;       /* stopped at a full context */
} mw_chat_reply;

/* Receives the reply's text as it is generated (complete UTF-8 characters); returning false stops
 * the reply. */
typedef bool (*mw_text_fn)(void* user_data, const char* text, size_t len);

MW_API mw_chat_params mw_chat_default_params(void);
/* A chat with its own context (ctx_params; NULL: the defaults). The model must outlive it. */
MW_API mw_status mw_chat_create(mw_model* model, const mw_context_params* ctx_params,
                                const mw_chat_params* params, mw_chat** out);
MW_API void mw_chat_free(mw_chat* chat);
/* Adds the user's message and generates the reply. reply may be NULL. */
MW_API mw_status mw_chat_send(mw_chat* chat, const char* text, size_t text_len, mw_text_fn on_text,
                              void* user_data, mw_chat_reply* reply);
/* Stops the reply being generated; async-signal-safe (for a SIGINT handler). */
MW_API void mw_chat_cancel(mw_chat* chat);
/* Forgets the conversation (the system prompt stays). */
MW_API void mw_chat_reset(mw_chat* chat);

/* ---- HTTP server (OpenAI-compatible) -------------------------------------------------------- */
/* POST /v1/chat/completions and /v1/completions (streamed as server-sent events or not),
 * GET /v1/models, /health, /metrics (Prometheus) and / (a chat page). The context's n_seq_max
 * sequences are the slots: requests are batched continuously (they join and leave the running
 * batch between forward steps), a new request reuses the longest cached prefix of its prompt,
 * and each slot may hold n_ctx / n_seq_max positions. Binds 127.0.0.1 unless told otherwise;
 * with an API key, every route but /health and / needs "Authorization: Bearer KEY". */

typedef struct mw_server mw_server;

typedef struct mw_server_params {
    const char* host;           /* address to bind (default "127.0.0.1") */
    int32_t port;               /* default 8080; 0: any free port (mw_server_port) */
    const char* api_key;        /* NULL or "": no key */
    const char* model_name;     /* the id GET /v1/models lists; NULL: "memwall" */
    const char* chat_template;  /* NULL: the file's tokenizer.chat_template; else a built-in
                                   name or template text */
    int32_t queue_max;          /* requests waiting for a slot before 503 (default 64) */
    double timeout_s;           /* per request, from its arrival (default 600) */
    uint64_t max_body_bytes;    /* larger bodies get 413 (default 8 MiB) */
    int32_t max_tokens;         /* most tokens a request may ask for; -1: the slot's context */
    mw_sampler_params sampling; /* defaults for what a request does not give */
} mw_server_params;

MW_API mw_server_params mw_server_default_params(void);
/* Creates a context of ctx_params on the model (which must outlive the server) and binds the
 * socket: MW_ERR_IO naming the address when it is taken. */
MW_API mw_status mw_server_create(mw_model* model, const mw_context_params* ctx_params,
                                  const mw_server_params* params, mw_server** out);
/* The port bound (useful with port 0). */
MW_API int32_t mw_server_port(const mw_server* server);
/* Serves until mw_server_stop; returns when the last connection is closed. */
MW_API mw_status mw_server_run(mw_server* server);
/* Thread-safe (call it from a signal-handling thread, not a signal handler): stops taking
 * requests, lets running ones finish for up to grace_s seconds, cancels the rest, and makes
 * mw_server_run return. */
MW_API void mw_server_stop(mw_server* server, double grace_s);
MW_API void mw_server_free(mw_server* server);

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

#ifdef __cplusplus
}
#endif

#endif /* MEMWALL_H */
